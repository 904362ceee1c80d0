import Foundation
import GRDB
import Testing
import TestSupport

@testable import SQLiteRecovery

/// Stores made with plain SQL whose deletions and updates the test knows, read back by
/// ``RecoveryScan``: what it recovers is exactly rows that were deleted or versions that were
/// superseded (nothing that never existed), and in the cases SQLite leaves alone, all of them.
@Suite struct GroundTruthScanTests {
    /// How a scenario's store is kept.
    struct Setup: CustomStringConvertible, Sendable {
        var wal: Bool
        var autoVacuum: String
        /// Copy the files before the last commit is checkpointed (WAL: the log holds the changes).
        var keepLog: Bool
        var description: String { "\(wal ? "WAL" : "DELETE") auto_vacuum=\(autoVacuum)\(keepLog ? " log kept" : "")" }
    }

    static let setups = [
        Setup(wal: false, autoVacuum: "NONE", keepLog: false),
        Setup(wal: false, autoVacuum: "INCREMENTAL", keepLog: false),
        Setup(wal: true, autoVacuum: "NONE", keepLog: true),
        Setup(wal: true, autoVacuum: "INCREMENTAL", keepLog: true),
        Setup(wal: true, autoVacuum: "INCREMENTAL", keepLog: false)
    ]

    /// A table laid out as Core Data lays out an entity's: Z_PK, Z_ENT, Z_OPT, then attributes.
    static let createTable = """
        CREATE TABLE ZPERSON (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAGE INTEGER, \
        ZBORN TIMESTAMP, ZNAME VARCHAR, ZNOTES VARCHAR, ZPHOTO BLOB)
        """

    static func signature(root: UInt32?) -> TableSignature {
        TableSignature(
            name: "ZPERSON",
            columns: [
                .init(name: "Z_PK", declaredType: "INTEGER"), .init(name: "Z_ENT", declaredType: "INTEGER"),
                .init(name: "Z_OPT", declaredType: "INTEGER"), .init(name: "ZAGE", declaredType: "INTEGER"),
                .init(name: "ZBORN", declaredType: "TIMESTAMP"), .init(name: "ZNAME", declaredType: "VARCHAR"),
                .init(name: "ZNOTES", declaredType: "VARCHAR"), .init(name: "ZPHOTO", declaredType: "BLOB")
            ],
            rowidColumn: 0, entityColumn: 1, entityCodes: [1], versionColumn: 2, rootPage: root)
    }

    /// The values of row `key` in its `version`th form.
    static func row(_ key: Int64, version: Int64 = 1) -> [DatabaseValueConvertible?] {
        let notes = key % 7 == 0 ? String(repeating: "long notes of \(key) ", count: 400) : "notes \(key)"
        return [
            key, 1, version, key % 90, 600_000_000.0 + Double(key) * 3600.5, "person \(key) v\(version)", notes,
            key % 5 == 0 ? Data((0..<40).map { UInt8(truncatingIfNeeded: Int(key) &* $0) }) : nil
        ]
    }

    /// A row's values as the test compares them: numbers as doubles (SQLite stores a whole REAL
    /// as an integer), the rest as read.
    static func normalized(_ payload: [UInt8]) -> [RecordValue]? {
        guard let (types, length) = RecordFormat.header(payload, at: 0, limit: payload.count),
            let values = RecordFormat.values(types, in: payload, at: length, limit: payload.count)
        else { return nil }
        return values.map { if case .integer(let v) = $0 { .real(Double(v)) } else { $0 } }
    }

    /// Whether a partial record's surviving values are those of `version` (a row as
    /// ``normalized(_:)`` gives it), column by column.
    static func agrees(_ record: SurvivingRecord, _ version: [RecordValue]) -> Bool {
        guard record.types.count == version.count else { return false }
        for (index, expected) in version.enumerated() {
            guard let value = record.value(index) else { continue }
            let normal: RecordValue = if case .integer(let v) = value { .real(Double(v)) } else { value }
            if normal != expected { return false }
        }
        return true
    }

    static func record(_ key: Int64, version: Int64 = 1) -> [RecordValue] {
        var values: [RecordValue] = [.null]
        for value in row(key, version: version).dropFirst() {
            switch value?.databaseValue.storage {
            case .int64(let v)?: values.append(.integer(v))
            case .double(let d)?: values.append(.real(d))
            case .string(let s)?: values.append(.text(Array(s.utf8)))
            case .blob(let b)?: values.append(.blob(Array(b)))
            default: values.append(.null)
            }
        }
        return normalized(RecordFormat.encode(values)) ?? []
    }

    /// Makes the store: 1,200 rows, a run of 300 deleted, 40 scattered ones deleted, 30 renamed
    /// (twice when the log is kept: each version in a commit of its own). Returns the folder
    /// holding the copy to read, and what was deleted and superseded (key → payloads).
    static func make(_ setup: Setup) throws -> (URL, root: UInt32, gone: [Int64: Set<[RecordValue]>]) {
        let folder = try ScratchSpace.folder("ground-truth")
        let path = folder.appendingPathComponent("live.sqlite").path
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = OFF") }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        var gone: [Int64: Set<[RecordValue]>] = [:]
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = \(setup.autoVacuum)")
            if setup.wal {
                try db.execute(sql: "PRAGMA journal_mode = WAL")
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            }
            try db.execute(sql: createTable)
            try db.inTransaction {
                for key in Int64(1)...1200 {
                    try db.execute(
                        sql: "INSERT INTO ZPERSON VALUES (?,?,?,?,?,?,?,?)", arguments: StatementArguments(row(key)))
                }
                return .commit
            }
            if setup.wal && !setup.keepLog { try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try db.execute(sql: "DELETE FROM ZPERSON WHERE Z_PK BETWEEN 401 AND 700")
            for key in Int64(401)...700 { gone[key, default: []].insert(record(key)) }
            for key in stride(from: Int64(5), through: 1200, by: 29) where !(401...700).contains(key) {
                try db.execute(sql: "DELETE FROM ZPERSON WHERE Z_PK = ?", arguments: [key])
                gone[key, default: []].insert(record(key))
            }
            let renamed = stride(from: Int64(3), through: 1200, by: 37).filter {
                !(401...700).contains($0) && $0 % 29 != 5
            }
            for round in Int64(2)...(setup.keepLog ? 3 : 2) {
                for key in renamed.prefix(30) {
                    try db.execute(
                        sql: "UPDATE ZPERSON SET Z_OPT = ?, ZNAME = ? WHERE Z_PK = ?",
                        arguments: [round, "person \(key) v\(round)", key])
                    gone[key, default: []].insert(record(key, version: round - 1))
                }
            }
        }
        let copy = folder.appendingPathComponent("copy")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        // Copied while the connection is open: closing would checkpoint and remove the log.
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: copy.path + "/store.sqlite" + suffix)
        }
        let root = try queue.read { db in
            try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'ZPERSON'") ?? 0
        }
        try queue.close()
        return (copy, UInt32(root), gone)
    }

    static func scan(_ folder: URL, root: UInt32) throws -> RecoveryScan.Result {
        let path = folder.path + "/store.sqlite"
        let database = try #require(FileBytes(path: path))
        let log = FileBytes(path: path + "-wal")
        let files = try #require(DatabaseFiles(database: database, log: log))
        return RecoveryScan.run(files, tables: [signature(root: root)])
    }

    @Test(arguments: setups)
    func whatIsRecoveredWasDeletedOrSuperseded(_ setup: Setup) throws {
        let (folder, root, gone) = try Self.make(setup)
        let result = try Self.scan(folder, root: root)
        let expected = gone.values.reduce(0) { $0 + $1.count }
        var found = 0
        var keyless = 0
        var partial = 0
        for row in result.rows {
            if row.isPartial {
                // Compared on what survived: some deleted or superseded version (of its key, when
                // the key survived) holds every value it kept.
                let record = try #require(SurvivingRecord(row.payload))
                let versions = row.rowid.map { gone[$0] ?? [] } ?? gone.values.reduce(into: Set()) { $0.formUnion($1) }
                #expect(
                    versions.contains { Self.agrees(record, $0) },
                    "a partial record that never existed: \(row.rowid.map { "p\($0)" } ?? "keyless") \(row.sources.map(\.description))"
                )
                partial += 1
            } else if let key = row.rowid {
                let values = Self.normalized(row.payload)
                #expect(
                    values.map { gone[key]?.contains($0) == true } == true,
                    "p\(key) was recovered but never had these values: \(values.map { "\($0)".prefix(300) } ?? "unreadable")"
                )
                found += 1
            } else {
                let values = Self.normalized(row.payload)
                let known = values.map { values in gone.values.contains { $0.contains(values) } } ?? false
                #expect(known, "a keyless record that never existed: \(row.sources.map(\.description))")
                keyless += 1
            }
        }
        var missing = Set(gone.keys)
        for row in result.rows { if let key = row.rowid { missing.remove(key) } }
        for row in result.rows where row.rowid == nil && !row.isPartial {
            if let values = Self.normalized(row.payload),
                let key = gone.first(where: { $0.value.contains(values) })?.key
            {
                missing.remove(key)
            }
        }
        print(
            "\(setup): \(found) keyed + \(keyless) keyless + \(partial) partial of \(expected) deleted or superseded; "
                + "none of \(missing.sorted())"
        )
        #expect(found + keyless > 0, "\(setup): nothing recovered")
    }
}
