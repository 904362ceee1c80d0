import Foundation

/// Writes a raw DEFLATE stream (RFC 1951, no zlib or gzip wrapper), the form of the compiled model
/// Core Data keeps in `Z_MODELCACHE.Z_CONTENT`, for the caches storefs writes.
///
/// The stream is made of stored (uncompressed) blocks, which every inflater reads (``RawInflate``,
/// zlib, Core Data's): a cache is tens of kilobytes, written once per store, so compressing it
/// would save little and add a compressor to trust. Stateless; safe from any thread.
enum RawDeflate {
    /// A stored block holds at most this many bytes (its length field is 16 bits).
    static let blockSize = 65_535

    static func stored(_ data: Data) -> Data {
        let bytes = [UInt8](data)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + (bytes.count / blockSize + 1) * 5)
        var start = 0
        repeat {
            let end = min(start + blockSize, bytes.count)
            let length = UInt16(end - start)
            // BFINAL on the last block, BTYPE 00 (stored); the header's bits fill the first byte,
            // so the length that follows is byte-aligned as the format requires.
            out.append(end == bytes.count ? 1 : 0)
            out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
            out += bytes[start..<end]
            start = end
        } while start < bytes.count
        return Data(out)
    }
}
