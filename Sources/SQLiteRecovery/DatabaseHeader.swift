/// The first 100 bytes of an SQLite database file: page size, page count, where the freelist
/// starts, the text encoding. Read defensively: a field that is out of its documented range makes
/// the header unreadable (page size) or is replaced by what the file itself says (page count).
public struct DatabaseHeader: Sendable, Hashable {
    /// "SQLite format 3\0".
    public static let magic: [UInt8] = Array("SQLite format 3".utf8) + [0]

    public var pageSize: Int
    /// Bytes at the end of every page that extensions keep for themselves.
    public var reservedBytes: Int
    /// The page count the header gives, when the header says it is valid (else 0: count the
    /// file's pages).
    public var pageCount: UInt32
    public var freelistTrunk: UInt32
    public var freelistCount: UInt32
    /// 1 UTF-8, 2 UTF-16le, 3 UTF-16be.
    public var textEncoding: UInt32
    /// Non-zero when the file uses auto_vacuum or incremental_vacuum.
    public var largestRootPage: UInt32
    public var incrementalVacuum: Bool
    /// 1 legacy (rollback journal), 2 WAL.
    public var writeVersion: UInt8
    /// The schema format number: 4 (every store of the last twenty years) writes the integers 0
    /// and 1 in the record header alone.
    public var schemaFormat: UInt32

    /// The part of each page b-tree content may use.
    public var usableSize: Int { pageSize - reservedBytes }

    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 100, Array(bytes[0..<16]) == Self.magic else { return nil }
        guard let raw = bytes.bigEndian(at: 16, count: 2) else { return nil }
        let size = raw == 1 ? 65536 : Int(raw)
        guard size >= 512, size <= 65536, size & (size - 1) == 0 else { return nil }
        pageSize = size
        reservedBytes = Int(bytes[20])
        // SQLite refuses files whose usable size is below 480.
        guard size - reservedBytes >= 480 else { return nil }
        writeVersion = bytes[18]
        let changeCounter = bytes.bigEndian(at: 24, count: 4) ?? 0
        let validFor = bytes.bigEndian(at: 92, count: 4) ?? 1
        let count = bytes.bigEndian(at: 28, count: 4) ?? 0
        pageCount = changeCounter == validFor ? count : 0
        freelistTrunk = bytes.bigEndian(at: 32, count: 4) ?? 0
        freelistCount = bytes.bigEndian(at: 36, count: 4) ?? 0
        largestRootPage = bytes.bigEndian(at: 52, count: 4) ?? 0
        textEncoding = bytes.bigEndian(at: 56, count: 4) ?? 1
        incrementalVacuum = (bytes.bigEndian(at: 64, count: 4) ?? 0) != 0
        schemaFormat = bytes.bigEndian(at: 44, count: 4) ?? 4
    }

    /// Whether page `number` is a pointer-map page (files with auto_vacuum or incremental_vacuum
    /// keep one every usable/5 + 1 pages from page 2): five-byte entries, never a record.
    public func isPointerMapPage(_ number: UInt32) -> Bool {
        guard largestRootPage != 0, number >= 2 else { return false }
        let perMap = UInt64(usableSize / 5 + 1)
        let pendingBytePage = UInt64(0x4000_0000 / pageSize + 1)
        var map = (UInt64(number) - 2) / perMap * perMap + 2
        if map == pendingBytePage { map += 1 }
        return map == UInt64(number)
    }
}
