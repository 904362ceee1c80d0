import Foundation
import Testing

@testable import SQLiteRecovery

/// Files that lie: every number the reader takes from a page or a log is checked where it is read,
/// so hostile bytes give fewer records (or none), never a trap, a loop or an allocation they ask for.
@Suite struct HostilePageTests {
    static let pageSize = 4096

    /// A database of `pages` zeroed pages with a valid header (page size 4096, UTF-8).
    static func database(pages: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: pages * pageSize)
        bytes.replaceSubrange(0..<16, with: DatabaseHeader.magic)
        bytes[16] = 0x10
        bytes[17] = 0x00
        bytes[18] = 1
        bytes[19] = 1
        put(UInt32(pages), at: 28, in: &bytes)
        put(1, at: 24, in: &bytes)
        put(1, at: 92, in: &bytes)
        put(1, at: 56, in: &bytes)
        bytes[100] = 13  // page 1: an empty table leaf (the schema)
        return bytes
    }

    static func put(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(i))) }
    }

    static func put16(_ value: Int, at offset: Int, in bytes: inout [UInt8]) {
        bytes[offset] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    static let table = GroundTruthScanTests.signature(root: 2)

    static func scan(_ database: [UInt8], log: [UInt8]? = nil) throws -> RecoveryScan.Result {
        let logBytes: (any ByteSource)? = log.map { MemoryBytes($0) }
        let files = try #require(DatabaseFiles(database: MemoryBytes(database), log: logBytes))
        return RecoveryScan.run(files, tables: [table])
    }

    @Test func aFreelistThatLoopsEnds() throws {
        var bytes = Self.database(pages: 4)
        Self.put(2, at: 32, in: &bytes)  // first trunk: page 2
        Self.put(3, at: 36, in: &bytes)
        // Page 2 → page 3 → page 2, each listing a leaf count far beyond what a page holds.
        Self.put(3, at: Self.pageSize, in: &bytes)
        Self.put(0xFFFF_FFFF, at: Self.pageSize + 4, in: &bytes)
        Self.put(2, at: 2 * Self.pageSize, in: &bytes)
        Self.put(0xFFFF_FFFF, at: 2 * Self.pageSize + 4, in: &bytes)
        let files = try #require(DatabaseFiles(database: MemoryBytes(bytes), log: nil))
        let (trunks, leaves) = files.state(0).freelist()
        #expect(trunks == [2, 3])
        #expect(leaves.allSatisfy { $0 >= 1 && $0 <= 4 })
        #expect(try Self.scan(bytes).rows.isEmpty)
    }

    @Test func freeBlocksThatOverlapOrGoBackwardsEndTheChain() throws {
        var bytes = Self.database(pages: 2)
        let page = Self.pageSize
        bytes[page] = 13
        Self.put16(100, at: page + 1, in: &bytes)  // first free block at 100
        Self.put16(200, at: page + 5, in: &bytes)
        Self.put16(150, at: page + 100, in: &bytes)  // next at 150: inside this block (size 80)
        Self.put16(80, at: page + 102, in: &bytes)
        Self.put16(100, at: page + 150, in: &bytes)  // and back to 100: a loop
        Self.put16(60000, at: page + 152, in: &bytes)  // a size past the page
        let files = try #require(DatabaseFiles(database: MemoryBytes(bytes), log: nil))
        let second = try #require(files.databasePage(2))
        let tree = try #require(BTreePage(second, isFirstPage: false, usableSize: page))
        #expect(tree.freeBlocks(in: second).count == 1)
        #expect(try Self.scan(bytes).rows.isEmpty)
    }

    @Test func cellsWhoseSizesLieAreNotRead() throws {
        var bytes = Self.database(pages: 3)
        let page = Self.pageSize
        bytes[page] = 13
        Self.put16(3, at: page + 3, in: &bytes)  // three cells
        Self.put16(4000, at: page + 5, in: &bytes)
        Self.put16(4000, at: page + 8, in: &bytes)  // a cell claiming a 2^62-byte payload
        Self.put16(4010, at: page + 10, in: &bytes)  // one whose overflow chain loops on itself
        Self.put16(65535, at: page + 12, in: &bytes)  // a pointer past the page
        var cell = Varint.encode(1 << 62) + Varint.encode(1)
        bytes.replaceSubrange((page + 4000)..<(page + 4000 + cell.count), with: cell)
        cell = Varint.encode(10_000) + Varint.encode(2) + [UInt8](repeating: 0, count: 70)
        bytes.replaceSubrange((page + 4010)..<(page + 4010 + cell.count), with: cell)
        // Page 3 as an overflow page pointing at itself.
        Self.put(3, at: 2 * page, in: &bytes)
        let files = try #require(DatabaseFiles(database: MemoryBytes(bytes), log: nil))
        let second = try #require(files.databasePage(2))
        let tree = try #require(BTreePage(second, isFirstPage: false, usableSize: page))
        #expect(tree.cellPointers == [4000, 4010], "the pointer past the page is not one")
        #expect(
            TableCell.read(
                second, at: 4010, limit: page, usable: page, pageCount: 3, readPage: { files.databasePage($0) }) == nil)
        #expect(try Self.scan(bytes).rows.isEmpty)
    }

    @Test func aTruncatedLogAndBadChecksumsAreNotTheLog() throws {
        // A real log: a store with two commits in WAL mode, then cut and damaged.
        let (folder, root, _) = try GroundTruthScanTests.make(
            GroundTruthScanTests.Setup(wal: true, autoVacuum: "NONE", keepLog: true))
        let database = try [UInt8](Data(contentsOf: folder.appendingPathComponent("store.sqlite")))
        let log = try [UInt8](Data(contentsOf: folder.appendingPathComponent("store.sqlite-wal")))
        let intact = try #require(WriteAheadLog(MemoryBytes(log), databasePageSize: Self.pageSize))
        #expect(intact.headerIsValid && intact.commits.count >= 2)

        // Cut in the middle of a frame: the torn frame is left out.
        let frameSize = WriteAheadLog.frameHeaderSize + Self.pageSize
        let cut = Array(log.prefix(WriteAheadLog.headerSize + frameSize * 3 + 100))
        let torn = try #require(WriteAheadLog(MemoryBytes(cut), databasePageSize: Self.pageSize))
        #expect(torn.frames.count == 3)

        // A flipped byte in frame 2's page: frames from 2 on are not the log SQLite reads.
        var damaged = log
        damaged[WriteAheadLog.headerSize + frameSize + WriteAheadLog.frameHeaderSize + 10] ^= 0xFF
        let bad = try #require(WriteAheadLog(MemoryBytes(damaged), databasePageSize: Self.pageSize))
        #expect(bad.frames[0].state != .unverified)
        #expect(bad.frames.dropFirst().allSatisfy { $0.state == .unverified })
        #expect(bad.commits.count <= 1)

        // A header whose checksum fails: no frame is verified, all are still read for records.
        var header = log
        header[24] ^= 0x01
        let unread = try #require(WriteAheadLog(MemoryBytes(header), databasePageSize: Self.pageSize))
        #expect(!unread.headerIsValid && unread.commits.isEmpty)
        let files = try #require(DatabaseFiles(database: MemoryBytes(database), log: MemoryBytes(header)))
        let result = RecoveryScan.run(files, tables: [GroundTruthScanTests.signature(root: root)])
        #expect(
            result.rows.allSatisfy { row in row.sources.allSatisfy { $0.commit == nil } },
            "no record is said to come from a commit of a log that does not verify")
    }

    @Test func garbageIsReadAsNothing() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var bytes = Self.database(pages: 8)
            for i in Self.pageSize..<bytes.count { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
            let log = (0..<(32 + 3 * (24 + Self.pageSize))).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try Self.scan(bytes, log: log)
        }
        // Too short to be a database, another magic, an impossible page size: not read at all.
        #expect(DatabaseFiles(database: MemoryBytes([UInt8](repeating: 0, count: 50)), log: nil) == nil)
        var odd = Self.database(pages: 1)
        Self.put16(1000, at: 16, in: &odd)
        #expect(DatabaseFiles(database: MemoryBytes(odd), log: nil) == nil)
    }
}
