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
        let metadata: StoreMetadata??
        do {
            metadata = try reader.read { db -> StoreMetadata?? in
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

    /// Folds a WAL store's -wal into its main file (`PRAGMA wal_checkpoint(TRUNCATE)`), so that
    /// the file alone holds every commit and can be replaced whole. The store's content does not
    /// change; a rollback-journal store, or one without a -wal, is left as it is.
    public func consolidate(at url: URL) throws(ObjectGraphError) {
        try FileCheck.check(url)
        let wal = url.path + "-wal"
        let size = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
        guard FileCheck.isWAL(url), size > 0 else { return }
        try FileCheck.checkWritable(url)
        do {
            let queue = try DatabaseQueue(path: url.path, configuration: SQLiteStore.configuration(readOnly: false))
            defer { try? queue.close() }
            try queue.writeWithoutTransaction { db in
                let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                // (busy, log frames, checkpointed frames): busy means a reader kept the WAL.
                if let busy = row?.storedValues.first?.storedInteger, busy != 0 {
                    throw ObjectGraphError(
                        .busy, "\(url.path) is being read by another process, so its -wal cannot be folded in; try again when it is done")
                }
            }
        } catch {
            throw SQLiteStore.mapError(error, file: url.path)
        }
    }

    /// `.NAME_SUPPORT` beside the store: Core Data's external binary data.
    public func companionFolders(of url: URL) -> [URL] {
        [url.deletingLastPathComponent().appendingPathComponent(".\(url.deletingPathExtension().lastPathComponent)_SUPPORT")]
    }

    public func open(
        at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata
    ) throws(ObjectGraphError) -> any PersistentStore {
        try SQLiteStore(url: url, model: model, options: options, initialMetadata: initialMetadata)
    }
}
