import CoreDataSchema
import Foundation
import GRDB
import Logging
import ObjectGraph

/// Writes a new store file in Core Data's schema: bookkeeping tables (the model cache among
/// them), one table per root entity, join tables, indexes, incremental auto-vacuum and WAL, as
/// Core Data creates them.
enum SchemaCreation {
    static func create(at url: URL, model: ManagedObjectModel, metadata initial: StoreMetadata, logger: Logger)
        throws(ObjectGraphError)
    {
        let layout = StoreLayout(model: model, schema: nil, logger: logger)
        let metadata = MetadataCoding.initial(initial, model: model)
        let plist = try MetadataCoding.encode(metadata)
        do {
            let queue = try DatabaseQueue(path: url.path)
            defer { try? queue.close() }
            // auto_vacuum must be set before the first table exists.
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA auto_vacuum = 2")
                try db.execute(sql: "PRAGMA journal_mode = WAL")
            }
            try queue.write { db in
                for table in layout.plannedTables {
                    var parts = table.columns.map { "\($0.name) \($0.type)" }
                    if !table.primaryKey.isEmpty {
                        parts.append("PRIMARY KEY (\(table.primaryKey.joined(separator: ", ")))")
                    }
                    try db.execute(sql: "CREATE TABLE \(table.name) ( \(parts.joined(separator: ", ")) )")
                    for index in table.indexes {
                        try db.execute(
                            sql:
                                "CREATE INDEX \(Self.identifier(index.name)) ON \(table.name) (\(index.columns.joined(separator: ", ")))"
                        )
                    }
                    for index in table.uniqueIndexes {
                        try db.execute(
                            sql:
                                "CREATE UNIQUE INDEX \(Self.identifier(index.name)) ON \(table.name) (\(index.columns.map { "\($0) COLLATE BINARY ASC" }.joined(separator: ", ")))"
                        )
                    }
                }
                try db.execute(
                    sql:
                        "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)"
                )
                try db.execute(
                    sql: "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)")
                // Core Data's cache of the store's compiled model, which it reads when it migrates
                // the store and cannot find its model in the app (ModelCache reads it back).
                if let cache = CompiledModelEncoder.encode(model) {
                    try db.execute(sql: "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)")
                    try db.execute(
                        sql: "INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)", arguments: [RawDeflate.stored(cache)])
                }
                for entity in model.entities {
                    try db.execute(
                        sql: "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                        arguments: [entity.id.rawValue, entity.name, entity.parentID?.rawValue ?? 0])
                }
                try db.execute(
                    sql: "INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
                    arguments: [metadata.storeUUID, plist])
            }
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw SQLiteStore.mapError(error, file: url.path)
        }
    }

    /// An index name as Core Data writes it where it is a plain identifier; quoted otherwise (a
    /// fetch index's name comes from the model, which may come from any file).
    static func identifier(_ name: String) -> String {
        let plain =
            !name.isEmpty
            && name.utf8.allSatisfy {
                $0 == UInt8(ascii: "_") || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)
            }
        return plain ? name : name.quotedDatabaseIdentifier
    }
}
