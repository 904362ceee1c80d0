import Foundation
import GRDB
import Logging
import ObjectGraph

/// Core Data's SQLite store type (`NSSQLiteStoreType`): recognises, opens and creates `.sqlite`
/// files in the schema Core Data writes.
public struct SQLiteStoreType: PersistentStoreType {
    static let typeName = "SQLite"

    public var name: String { Self.typeName }
    public var fileExtensions: [String] { ["sqlite"] }

    public init() {}

    /// Reads Z_METADATA on a read-only connection; the file is never modified.
    public func metadata(at url: URL) throws(ObjectGraphError) -> StoreMetadata {
        try FileCheck.check(url)
        var configuration = Configuration()
        configuration.readonly = true
        let metadata: StoreMetadata??
        do {
            let queue = try DatabaseQueue(path: url.path, configuration: configuration)
            defer { try? queue.close() }
            metadata = try queue.read { db -> StoreMetadata?? in
                guard try db.tableExists("Z_METADATA") else { return nil }
                return .some(try MetadataCoding.read(db, file: url.path))
            }
        } catch {
            throw SQLiteStore.mapError(error, file: url.path)
        }
        guard let metadata else {
            throw ObjectGraphError(.corruptStore, "\(url.path) is an SQLite file but not a Core Data store: it has no Z_METADATA table")
        }
        guard let metadata else { throw ObjectGraphError(.corruptStore, "\(url.path): Z_METADATA has no row") }
        return metadata
    }

    public func open(
        at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata
    ) throws(ObjectGraphError) -> any PersistentStore {
        try SQLiteStore(url: url, model: model, options: options, initialMetadata: initialMetadata)
    }
}
