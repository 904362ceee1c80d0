import Foundation
import GRDB
import Logging
import ObjectGraph

/// Core Data's SQLite store type (`NSSQLiteStoreType`): recognises, opens and creates `.sqlite`
/// files in the schema Core Data writes.
public struct SQLiteStoreType: PersistentStoreType {
    static let typeName = "SQLite"

    public var name: String { Self.typeName }
    /// `.sqlite`, and SwiftData's `.store` (the same format: SwiftData keeps its data in a Core
    /// Data SQLite store). Files with other names are recognized by content.
    public var fileExtensions: [String] { ["sqlite", "store"] }

    /// An SQLite database file; whether it is a Core Data store is checked when it opens.
    public func recognizes(fileStart: Data) -> Bool {
        fileStart.count >= 16 && fileStart.prefix(16).elementsEqual(Array("SQLite format 3\0".utf8))
    }

    public init() {}

    /// Reads Z_METADATA on a read-only connection; the file is never modified (a WAL store whose
    /// folder cannot be written is read from a private copy, as ``SQLiteStore`` reads it).
    public func metadata(at url: URL) throws(ObjectGraphError) -> StoreMetadata {
        try FileCheck.check(url)
        let (reader, copy) = try SQLiteStore.openReader(url, isWAL: FileCheck.isWAL(url), logger: Logger(label: "storefs.sqlite"))
        defer { SQLiteStore.close(reader, copy: copy) }
        let row: Row?
        do {
            row = try reader.read { db -> Row? in
                guard try db.tableExists("Z_METADATA") else { return nil }
                return try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1")
            }
        } catch {
            throw SQLiteStore.mapError(error, file: url.path)
        }
        guard let row else {
            throw ObjectGraphError(.corruptStore, "\(url.path) is an SQLite file but not a Core Data store: it has no Z_METADATA table")
        }
        return try MetadataCoding.decode(uuid: row[0], plist: row[1], file: url.path)
    }

    public func open(
        at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata
    ) throws(ObjectGraphError) -> any PersistentStore {
        try SQLiteStore(url: url, model: model, options: options, initialMetadata: initialMetadata)
    }
}
