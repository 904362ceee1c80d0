import Foundation

/// Inflates the compressed payloads apps keep in binary attributes: gzip (RFC 1952; Notes keeps
/// every note's body so), zlib (RFC 1950) and raw DEFLATE (RFC 1951; Core Data's
/// `Z_MODELCACHE`), all through ``RawInflate``.
///
/// Bytes count as compressed only when they decode completely and check out: gzip's CRC-32 and
/// length and zlib's Adler-32 must match, and a raw DEFLATE stream (which has no header or
/// checksum) must end exactly at the last byte and hold something. A gzip file may hold several
/// members, which are joined (as `gzip -d` does); anything after the last one but zero bytes
/// means the bytes are not gzip. Input over ``maximumInput`` and output past ``maximumOutput``
/// are refused (a small value can inflate to gigabytes), so hostile input costs bounded memory.
///
/// Stateless; safe from any thread.
public enum Inflater {
    public enum Format: String, Sendable, Hashable {
        case gzip, zlib, deflate
    }

    public static let maximumInput = 16 << 20
    public static let maximumOutput = 64 << 20

    /// The inflated bytes of `data` and the wrapper they came in; nil when `data` is not a
    /// complete compressed stream of one of the formats, or is beyond the bounds.
    public static func inflate(_ data: Data) -> (format: Format, bytes: Data)? {
        guard !data.isEmpty, data.count <= maximumInput else { return nil }
        let bytes = [UInt8](data)
        if bytes.count >= 3, bytes[0] == 0x1F, bytes[1] == 0x8B {
            return gunzip(bytes).map { (.gzip, Data($0)) }
        }
        if let inflated = unzlib(bytes) { return (.zlib, Data(inflated)) }
        guard let (inflated, end) = try? RawInflate.inflate(bytes, from: 0, limit: maximumOutput), end == bytes.count,
            !inflated.isEmpty
        else { return nil }
        return (.deflate, Data(inflated))
    }

    /// `data` inflated when it is compressed (``inflate(_:)``), else `data` itself: what decoders
    /// of the contents (protobuf, property lists) read.
    public static func inflatedOrSelf(_ data: Data) -> Data {
        inflate(data)?.bytes ?? data
    }

    /// The members of a gzip file, joined.
    private static func gunzip(_ bytes: [UInt8]) -> [UInt8]? {
        var output: [UInt8] = []
        var position = 0
        repeat {
            guard let (member, end) = gzipMember(bytes, at: position, limit: maximumOutput - output.count) else {
                return nil
            }
            output += member
            position = end
            // Padding after the last member (tape blocks) is zeros; anything else is another member.
            if bytes[position...].allSatisfy({ $0 == 0 }) { return output }
        } while true
    }

    /// One gzip member starting at `start`: its inflated bytes and where it ends.
    private static func gzipMember(_ bytes: [UInt8], at start: Int, limit: Int) -> ([UInt8], Int)? {
        // ID1 ID2 CM FLG MTIME(4) XFL OS; reserved flag bits must be clear.
        guard bytes.count - start >= 18, bytes[start] == 0x1F, bytes[start + 1] == 0x8B, bytes[start + 2] == 8,
            bytes[start + 3] & 0xE0 == 0
        else { return nil }
        let flags = bytes[start + 3]
        var position = start + 10
        func skip(_ count: Int) -> Bool {
            guard count <= bytes.count - position else { return false }
            position += count
            return true
        }
        func skipZeroTerminated() -> Bool {
            guard let zero = bytes[position...].firstIndex(of: 0) else { return false }
            position = zero + 1
            return true
        }
        if flags & 0x04 != 0 {  // FEXTRA: a little-endian length, then that many bytes
            guard position + 2 <= bytes.count else { return nil }
            let length = Int(bytes[position]) | Int(bytes[position + 1]) << 8
            guard skip(2), skip(length) else { return nil }
        }
        if flags & 0x08 != 0, !skipZeroTerminated() { return nil }  // FNAME
        if flags & 0x10 != 0, !skipZeroTerminated() { return nil }  // FCOMMENT
        if flags & 0x02 != 0, !skip(2) { return nil }  // FHCRC
        guard let (inflated, end) = try? RawInflate.inflate(bytes, from: position, limit: limit), end + 8 <= bytes.count
        else { return nil }
        let crc = littleEndian(bytes, end)
        let size = littleEndian(bytes, end + 4)
        guard crc == CRC32.checksum(inflated), size == UInt32(truncatingIfNeeded: inflated.count) else { return nil }
        return (inflated, end + 8)
    }

    /// A zlib stream: a two-byte header (DEFLATE, a window of at most 32 KiB, no preset
    /// dictionary, the check bits), the stream, and its Adler-32, with nothing after it.
    private static func unzlib(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= 6 else { return nil }
        let method = bytes[0]
        let flags = bytes[1]
        guard method & 0x0F == 8, method >> 4 <= 7, (UInt16(method) << 8 | UInt16(flags)) % 31 == 0, flags & 0x20 == 0,
            let (inflated, end) = try? RawInflate.inflate(bytes, from: 2, limit: maximumOutput), end + 4 == bytes.count
        else { return nil }
        let stored =
            UInt32(bytes[end]) << 24 | UInt32(bytes[end + 1]) << 16 | UInt32(bytes[end + 2]) << 8
            | UInt32(bytes[end + 3])
        return stored == Adler32.checksum(inflated) ? inflated : nil
    }

    private static func littleEndian(_ bytes: [UInt8], _ start: Int) -> UInt32 {
        UInt32(bytes[start]) | UInt32(bytes[start + 1]) << 8 | UInt32(bytes[start + 2]) << 16 | UInt32(bytes[start + 3])
            << 24
    }
}
