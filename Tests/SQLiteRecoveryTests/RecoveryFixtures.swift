import Foundation
import GRDB
import ObjectGraph
import SQLiteStore
import TestSupport

/// Stores whose history the tests make: copies of the corpus's real stores changed with plain SQL
/// (secure_delete off, as an app's SQLite on Apple's platforms leaves it), and what was deleted
/// or superseded.
enum RecoveryFixtures {
    /// A copy of corpus store `name` (with its -wal) in a new scratch folder.
    static func copy(_ name: String, as newName: String? = nil) throws -> URL {
        let folder = try ScratchSpace.folder("recovery")
        let source = Corpus.url("sqlite/" + name)
        let target = folder.appendingPathComponent(newName ?? name)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: target.path + suffix)
        }
        return target
    }

    /// A connection to `url` that writes with secure_delete off and never checkpoints by itself.
    static func writer(_ url: URL) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = OFF")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
        }
        return try DatabaseQueue(path: url.path, configuration: configuration)
    }

    /// Copies `url`'s files into a new folder while `writer` still holds them open (closing the
    /// last connection would checkpoint the log and remove it).
    static func snapshotFiles(of url: URL) throws -> URL {
        let folder = try ScratchSpace.folder("evidence")
        let target = folder.appendingPathComponent(url.lastPathComponent)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: target.path + suffix)
        }
        return target
    }

    /// Every row of every entity table of the store, as the values SQL reads: what existed.
    static func rows(_ queue: DatabaseQueue) throws -> [String: Set<[DatabaseValue]>] {
        try queue.read { db in
            var result: [String: Set<[DatabaseValue]>] = [:]
            let tables = try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z%' AND name NOT LIKE 'Z\\_%' ESCAPE '\\'"
            )
            for table in tables {
                for row in try Row.fetchAll(db, sql: "SELECT * FROM \(table.quotedDatabaseIdentifier)") {
                    result[table.uppercased(), default: []].insert(Array(row.databaseValues))
                }
            }
            return result
        }
    }

    /// Opens `url` read-only (a private copy, as a read-only mount does) and reads its recovered
    /// records.
    static func recovered(_ url: URL) throws -> (SQLiteStore, RecoveredRecords) {
        let store = try SQLiteStore(url: url, model: nil, options: StoreOptions(readOnly: true))
        return (store, try store.recoveredRecords(cancelled: { false }))
    }
}
