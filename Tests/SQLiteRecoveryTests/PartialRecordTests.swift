import Foundation
import GRDB
import Testing
import TestSupport

@testable import SQLiteRecovery

/// Records whose end SQLite overwrote, made on purpose with plain SQL (secure_delete off): a row
/// deleted at the edge of a page's content and the next insert placed over its end, a row whose
/// free block the next insert takes the end of, and an updated row whose old copy loses the
/// changed value that way. What is recovered is the part that survived, column by column equal to
/// the row as it was; a part that cannot be told from a live row is not recovered; nothing that
/// never existed is. Then pages built byte by byte for what must not count: a part whose entity
/// did not survive, one that keeps nothing but what its header holds, integers and dates no
/// SQLite writes.
@Suite struct PartialRecordTests {
    /// What `change` left in a store of twelve rows laid out as Core Data lays one out (one page):
    /// the scan's result, the rows before and after (key → values as
    /// ``GroundTruthScanTests/normalized(_:)`` gives them) and the table's root page.
    struct Outcome {
        var result: RecoveryScan.Result
        var before: [Int64: [RecordValue]]
        var after: [Int64: [RecordValue]]
        var root: UInt32
        var database: [UInt8]

        /// Every recovered record, whole or partial, is a row as it was before and is not one now.
        func expectNothingInvented(_ comment: Comment) {
            let gone = Set(before.compactMap { key, values in after[key] == values ? nil : values })
            for row in result.rows {
                guard let record = SurvivingRecord(row.payload) else {
                    Issue.record("\(comment): a record that does not read")
                    continue
                }
                let versions = row.rowid.flatMap { before[$0].map { [$0] } } ?? Array(gone)
                #expect(
                    versions.contains { GroundTruthScanTests.agrees(record, $0) },
                    "\(comment): a record that never existed, from \(row.sources.map(\.description))")
                #expect(
                    !after.values.contains { GroundTruthScanTests.agrees(record, $0) },
                    "\(comment): a record that cannot be told from a live row, from \(row.sources.map(\.description))")
            }
        }
    }

    static func row(_ key: Int64, name: String? = nil, notes: Int) -> [DatabaseValueConvertible?] {
        [
            key, 1, 1, key % 90, 600_000_000.0 + Double(key) * 3600.5, name ?? "person \(key)",
            String(repeating: "notes of \(key) ", count: notes), nil
        ]
    }

    static func make(wal: Bool, _ change: (Database) throws -> Void) throws -> Outcome {
        let folder = try ScratchSpace.folder("partial")
        let path = folder.appendingPathComponent("store.sqlite").path
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = OFF") }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        func rows(_ db: Database) throws -> [Int64: [RecordValue]] {
            var result: [Int64: [RecordValue]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT * FROM ZPERSON") {
                var values: [RecordValue] = [.null]
                for value in row.databaseValues.dropFirst() {
                    switch value.storage {
                    case .int64(let v): values.append(.real(Double(v)))
                    case .double(let d): values.append(.real(d))
                    case .string(let s): values.append(.text(Array(s.utf8)))
                    case .blob(let b): values.append(.blob(Array(b)))
                    case .null: values.append(.null)
                    }
                }
                result[row[0]] = values
            }
            return result
        }
        let (before, after) = try queue.writeWithoutTransaction { db in
            if wal { try db.execute(sql: "PRAGMA journal_mode = WAL") }
            try db.execute(sql: GroundTruthScanTests.createTable)
            try db.inTransaction {
                for key in Int64(1)...12 {
                    try db.execute(
                        sql: "INSERT INTO ZPERSON VALUES (?,?,?,?,?,?,?,?)",
                        arguments: StatementArguments(row(key, notes: 6)))
                }
                return .commit
            }
            if wal { try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            let before = try rows(db)
            try db.inTransaction {
                try change(db)
                return .commit
            }
            // Checkpointed: the database file holds the page as the change left it, and no
            // earlier version of it.
            if wal { try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            return (before, try rows(db))
        }
        let root = try queue.read { db in
            try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'ZPERSON'") ?? 0
        }
        try queue.close()
        let database = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let files = try #require(DatabaseFiles(database: MemoryBytes(database), log: nil))
        let result = RecoveryScan.run(files, tables: [GroundTruthScanTests.signature(root: UInt32(root))])
        return Outcome(result: result, before: before, after: after, root: UInt32(root), database: database)
    }

    /// The last row inserted sits at the start of the page's content. Deleted, its space joins
    /// the unallocated gap (SQLite writes a free block's link and size over its first four bytes
    /// all the same: its key is lost); the next insert is placed at the top of that gap, over the
    /// deleted row's end.
    @Test(arguments: [false, true])
    func theNextInsertOverARowDeletedAtTheEdgeOfTheContent(wal: Bool) throws {
        let outcome = try Self.make(wal: wal) { db in
            try db.execute(sql: "DELETE FROM ZPERSON WHERE Z_PK = 12")
            try db.execute(
                sql: "INSERT INTO ZPERSON VALUES (?,?,?,?,?,?,?,?)",
                arguments: StatementArguments(Self.row(13, notes: 1)))
        }
        outcome.expectNothingInvented("wal \(wal)")
        #expect(outcome.result.rows.count == 1, "\(outcome.result.rows.map(\.sources))")
        let row = try #require(outcome.result.rows.first)
        #expect(row.isPartial && row.rowid == nil)
        let record = try #require(SurvivingRecord(row.payload))
        #expect(GroundTruthScanTests.agrees(record, outcome.before[12]!))
        #expect(record.value(5) == .text(Array("person 12".utf8)), "the name survives")
        #expect(record.value(6) == nil, "the notes were overwritten")
        #expect(record.value(7) == .null, "a NULL the header holds survives after the cut")
        #expect(row.sources.allSatisfy { $0.place == .unallocated })
    }

    /// A table's first page is its root: when the table outgrows it, SQLite copies it to a new
    /// leaf and rewrites only the root's header, then writes the interior cells at the root's
    /// end, over the end of the first row inserted (whose head, key included, survives). That
    /// row deleted later is recovered with its key, from the root's free space (and, where the
    /// leaf still holds it whole, from there as well: one record).
    @Test func aRootThatBecameAnInteriorPageKeepsItsFirstRowsHead() throws {
        let outcome = try Self.make(wal: false) { db in
            for key in Int64(13)...40 {
                try db.execute(
                    sql: "INSERT INTO ZPERSON VALUES (?,?,?,?,?,?,?,?)",
                    arguments: StatementArguments(Self.row(key, notes: 20)))
            }
            try db.execute(sql: "DELETE FROM ZPERSON WHERE Z_PK = 1")
        }
        outcome.expectNothingInvented("the root split")
        let files = try #require(DatabaseFiles(database: MemoryBytes(outcome.database), log: nil))
        let root = try #require(files.databasePage(outcome.root))
        #expect(BTreePage(root, isFirstPage: false, usableSize: files.usableSize)?.kind == .tableInterior)
        let rows = outcome.result.rows.filter { $0.rowid == 1 }
        #expect(rows.count == 1, "one record of p1: \(outcome.result.rows.map { ($0.rowid, $0.sources) })")
        let row = try #require(rows.first)
        #expect(
            row.sources.contains { $0.page == outcome.root && $0.place == .unallocated },
            "found in the root's free space: \(row.sources)")
        #expect(row.live == .deleted)
    }

    /// A row deleted among others leaves a free block (its first four bytes the block's link and
    /// size); the next insert that fits takes the block's end.
    @Test(arguments: [false, true])
    func theNextInsertIntoAFreeBlockTakesItsEnd(wal: Bool) throws {
        let outcome = try Self.make(wal: wal) { db in
            try db.execute(sql: "DELETE FROM ZPERSON WHERE Z_PK = 5")
            try db.execute(
                sql: "INSERT INTO ZPERSON VALUES (?,?,?,?,?,?,?,?)",
                arguments: StatementArguments(Self.row(13, notes: 1)))
        }
        outcome.expectNothingInvented("wal \(wal)")
        #expect(outcome.result.rows.count == 1, "\(outcome.result.rows.map(\.sources))")
        let row = try #require(outcome.result.rows.first)
        #expect(row.isPartial && row.rowid == nil, "its key was in the block's first bytes")
        let record = try #require(SurvivingRecord(row.payload))
        #expect(GroundTruthScanTests.agrees(record, outcome.before[5]!))
        #expect(record.value(5) == .text(Array("person 5".utf8)))
        #expect(row.sources.allSatisfy { $0.place == .freeBlock && $0.rebuilt })
    }

    /// An update that makes a row longer frees its old cell; the next insert takes that block's
    /// end. When the value changed was the one overwritten, what survives is equal to the live
    /// row: a leftover copy of it, not recovered (the page holds it: the carver finds it). When an
    /// earlier value changed, the part is an earlier version and is recovered.
    @Test func aLeftoverCopyOfALiveRowIsNotRecoveredAnEarlierVersionIs() throws {
        let copy = try Self.make(wal: false) { db in
            try db.execute(sql: "UPDATE ZPERSON SET ZNOTES = ZNOTES || ZNOTES WHERE Z_PK = 5")
            try db.execute(
                sql: "INSERT INTO ZPERSON VALUES (?,?,?,?,?,?,?,?)",
                arguments: StatementArguments(Self.row(13, notes: 1)))
        }
        copy.expectNothingInvented("the notes changed")
        #expect(copy.result.rows.isEmpty, "\(copy.result.rows.map(\.sources))")
        let files = try #require(DatabaseFiles(database: MemoryBytes(copy.database), log: nil))
        let carver = Carver(tables: [GroundTruthScanTests.signature(root: copy.root)], usableSize: files.usableSize)
        let page = try #require(files.databasePage(copy.root))
        let found = carver.records(in: page, number: copy.root, cells: false, pageCount: 2) { files.databasePage($0) }
        #expect(
            found.contains { found in
                found.isPartial
                    && SurvivingRecord(found.payload).map { GroundTruthScanTests.agrees($0, copy.after[5]!) } == true
            }, "the old copy is in the page")

        let version = try Self.make(wal: false) { db in
            try db.execute(sql: "UPDATE ZPERSON SET ZNAME = 'a much longer name of person 5' WHERE Z_PK = 5")
            try db.execute(
                sql: "INSERT INTO ZPERSON VALUES (?,?,?,?,?,?,?,?)",
                arguments: StatementArguments(Self.row(13, notes: 1)))
        }
        version.expectNothingInvented("the name changed")
        let row = try #require(version.result.rows.first { $0.isPartial })
        let record = try #require(SurvivingRecord(row.payload))
        #expect(record.value(5) == .text(Array("person 5".utf8)), "the name before the update")
    }

    // MARK: - Pages built byte by byte

    /// A table whose entity code (5) the record's body holds (1 would be in its header alone).
    static let table = TableSignature(
        name: "ZPERSON", columns: GroundTruthScanTests.signature(root: 2).columns, rowidColumn: 0, entityColumn: 1,
        entityCodes: [5], versionColumn: 2, rootPage: 2)

    /// A database whose page 2 is a table leaf with no cells, its content from 2000 on, and one
    /// free block at 2000 of `size(cell length)` bytes, holding the cell of `values` (key 7) with
    /// its first four bytes the block's.
    static func freeBlock(_ values: [RecordValue], size: (Int) -> Int) -> [UInt8] {
        var bytes = HostilePageTests.database(pages: 2)
        let page = HostilePageTests.pageSize
        let payload = RecordFormat.encode(values)
        var cell = Varint.encode(Int64(payload.count)) + Varint.encode(7) + payload
        let blockSize = size(cell.count)
        cell.replaceSubrange(0..<4, with: [0, 0, UInt8(blockSize >> 8), UInt8(blockSize & 0xFF)])
        bytes[page] = 13
        HostilePageTests.put16(2000, at: page + 1, in: &bytes)
        HostilePageTests.put16(2000, at: page + 5, in: &bytes)
        bytes.replaceSubrange((page + 2000)..<(page + 2000 + cell.count), with: cell)
        // What lies past the block: a later cell's bytes.
        for i in (page + 2000 + blockSize)..<(2 * page) { bytes[i] = 0xEE }
        return bytes
    }

    static func values(entity: Int64 = 5, age: RecordValue = .integer(42), born: RecordValue = .real(6e8))
        -> [RecordValue]
    {
        [
            .null, .integer(entity), .integer(1), age, born, .text(Array("a name".utf8)),
            .text(Array(String(repeating: "notes ", count: 10).utf8)), .null
        ]
    }

    static func scan(_ bytes: [UInt8]) throws -> [RecoveryScan.Row] {
        let files = try #require(DatabaseFiles(database: MemoryBytes(bytes), log: nil))
        return RecoveryScan.run(files, tables: [table]).rows
    }

    /// The header's length in the cell of `values` (after the payload length and key).
    static func bodyStart(_ values: [RecordValue]) -> Int {
        let payload = RecordFormat.encode(values)
        return Varint.length(of: Int64(payload.count)) + 1
            + (RecordFormat.header(payload, at: 0, limit: payload.count)?.length ?? 0)
    }

    @Test func aPartRecoveredFromAFreeBlockIsWhatSurvived() throws {
        let rows = try Self.scan(Self.freeBlock(Self.values(), size: { $0 - 20 }))
        #expect(rows.count == 1)
        let record = try #require(rows.first.flatMap { SurvivingRecord($0.payload) })
        #expect(rows.first?.isPartial == true)
        #expect(record.value(5) == .text(Array("a name".utf8)) && record.value(6) == nil && record.value(7) == .null)
        // Cut the same record where its whole is needed: it is read whole.
        #expect(try Self.scan(Self.freeBlock(Self.values(), size: { $0 })).first?.isPartial == false)
    }

    @Test func aPartWhoseEntityOrValuesDidNotSurviveIsNotARecord() throws {
        let values = Self.values()
        // Cut before Z_ENT's byte: no entity.
        #expect(try Self.scan(Self.freeBlock(values, size: { _ in Self.bodyStart(values) })).isEmpty)
        // Cut after Z_ENT: the entity, a version and nothing else the body holds.
        #expect(try Self.scan(Self.freeBlock(values, size: { _ in Self.bodyStart(values) + 1 })).isEmpty)
        // One more byte (the age): a value of the object, recovered.
        #expect(try Self.scan(Self.freeBlock(values, size: { _ in Self.bodyStart(values) + 2 })).count == 1)
    }

    @Test func integersAndDatesNoSQLiteWritesAreNotARecord() throws {
        let values = Self.values(age: .integer(4242))
        #expect(try Self.scan(Self.freeBlock(values, size: { $0 })).count == 1)
        // 42 in the two bytes 4242 took: SQLite writes 42 in one.
        var bytes = Self.freeBlock(values, size: { $0 })
        let age = HostilePageTests.pageSize + 2000 + Self.bodyStart(values) + 1
        #expect(bytes[age] == UInt8(4242 >> 8) && bytes[age + 1] == UInt8(4242 & 0xFF))
        bytes[age] = 0
        bytes[age + 1] = 42
        #expect(try Self.scan(bytes).isEmpty)
        // A date ten thousand years away is no date an app wrote.
        #expect(try Self.scan(Self.freeBlock(Self.values(born: .real(3e11)), size: { $0 })).isEmpty)
        #expect(try Self.scan(Self.freeBlock(Self.values(born: .real(-6.3e10)), size: { $0 })).count == 1)
    }

    /// Cells each written over the end of the one before (a page's gap after many inserts and
    /// deletions): each is cut where the next begins, the last is whole, and each byte is read
    /// as the start of a cell a bounded number of times (80 cells, 4 KB: at once).
    @Test func cellsEachWrittenOverTheLastAreEachCutWhereTheNextBegins() throws {
        var bytes = HostilePageTests.database(pages: 2)
        let page = HostilePageTests.pageSize
        bytes[page] = 13
        HostilePageTests.put16(4000, at: page + 5, in: &bytes)
        let values = Self.values()
        let payload = RecordFormat.encode(values)
        for key in 0..<80 {
            let cell = Varint.encode(Int64(payload.count)) + Varint.encode(Int64(key + 1)) + payload
            let at = page + 100 + 40 * key
            bytes.replaceSubrange(at..<(at + cell.count), with: cell)
        }
        let rows = try Self.scan(bytes).sorted { ($0.rowid ?? 0) < ($1.rowid ?? 0) }
        #expect(rows.map(\.rowid) == (1...80).map { Int64($0) })
        #expect(rows.dropLast().allSatisfy(\.isPartial) && rows.last?.isPartial == false)
        for row in rows {
            let record = try #require(SurvivingRecord(row.payload))
            for (index, value) in values.enumerated() where record.survives(index) {
                #expect(record.value(index) == value, "p\(row.rowid ?? 0) column \(index)")
            }
        }
    }
}
