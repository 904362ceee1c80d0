import Foundation

/// Checks XML input before Foundation's `XMLParser` sees it, and the limits every XML reader of
/// storefs keeps.
///
/// Why: swift-corelibs-foundation's parser runs libxml2 in recover mode and force-unwraps the
/// UTF-8 decoding of every element name, attribute name, comment and processing instruction it
/// reports, so one invalid byte in a name ends the process instead of failing the parse. Core
/// Data's XML stores and Xcode's model files are UTF-8; a file that is not is refused here with
/// the line of the first bad byte. Stateless; call from any thread.
public enum XMLInputCheck {
    /// How deep elements may nest in a model's `contents` (Xcode writes 4 levels) or in an XML
    /// store (Core Data writes 4, a metadata property list a few more). Deeper input is refused
    /// before it reaches code that walks the tree recursively.
    public static let maximumDepth = 64

    /// The largest model `contents` read (the largest real model seen is about 200 KB): XMLParser
    /// counts bytes in 32-bit integers and would trap at 2 GiB.
    public static let maximumModelSize = 64 << 20

    /// Throws unless `data` is valid UTF-8 (a UTF-8 byte order mark is fine).
    ///
    /// - Throws: `code` with a message naming `source` and the line of the first invalid byte.
    public static func requireUTF8(_ data: Data, source: String, code: ObjectGraphError.Code) throws(ObjectGraphError) {
        guard let offset = firstInvalidUTF8(in: data) else { return }
        let line = data.prefix(offset).count { $0 == UInt8(ascii: "\n") } + 1
        throw ObjectGraphError(
            code,
            "\(source): line \(line): byte \(offset) is not valid UTF-8; storefs reads XML written in UTF-8 "
                + "(as Core Data and Xcode write it): re-save the file as UTF-8")
    }

    /// The offset of the first byte that is not part of a valid UTF-8 sequence, or nil.
    ///
    /// Validates in chunks through the standard library's validator (fast even in debug builds),
    /// so memory stays bounded for stores of hundreds of megabytes.
    static func firstInvalidUTF8(in data: Data) -> Int? {
        let chunkSize = 1 << 20
        return data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Int? in
            let all = bytes.bindMemory(to: UInt8.self)
            var start = 0
            while start < all.count {
                var end = min(start + chunkSize, all.count)
                // Never split a sequence: step back over continuation bytes (at most 3) to the lead
                // byte, which starts the next chunk.
                if end < all.count {
                    var back = 0
                    while back < 3, end - back > start, all[end - back] & 0xC0 == 0x80 { back += 1 }
                    end -= back
                    if end == start { end = min(start + chunkSize, all.count) }
                }
                let chunk = UnsafeBufferPointer(rebasing: all[start..<end])
                if String(validating: chunk, as: UTF8.self) == nil {
                    return start + firstInvalidOffset(in: chunk)
                }
                start = end
            }
            return nil
        }
    }

    /// The exact offset within a chunk known to be invalid (slow path, runs once per file).
    private static func firstInvalidOffset(in chunk: UnsafeBufferPointer<UInt8>) -> Int {
        var iterator = chunk.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded): offset += encoded.count
            case .error: return offset
            case .emptyInput: return offset
            }
        }
    }
}
