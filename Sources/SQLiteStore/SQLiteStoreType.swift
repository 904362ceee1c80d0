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

    /// ``SQLiteStore`` reads the model storefs keeps in the store's metadata itself, from what
    /// it has read anyway: the coordinator need not read the metadata first (which, read-only,
    /// would copy the store a second time).
    public var findsKeptModel: Bool { true }

    /// Reads Z_METADATA from a private copy of the store and its -wal, as a read-only
    /// ``SQLiteStore`` reads (``PrivateCopy``): nothing beside the store is made, written or locked.
    public func metadata(at url: URL) throws(ObjectGraphError) -> StoreMetadata {
        try FileCheck.check(url)
        let logger = Logger(label: "storefs.sqlite")
        let copy = try PrivateCopy.make(of: url, hashing: false, logger: logger)
        let source = try SQLiteStore.openReader(url, copy: copy, isWAL: FileCheck.isWAL(copy.store), logger: logger)
        defer { SQLiteStore.close(source) }
        let metadata: StoreMetadata??
        do {
            metadata = try source.reader.read { db -> StoreMetadata?? in
                guard try db.tableExists("Z_METADATA") else { return nil }
                return .some(try MetadataCoding.read(db, file: url.path))
            }
        } catch {
            throw SQLiteStore.mapError(error, file: url.path)
        }
        guard let metadata else {
            throw ObjectGraphError(
                .corruptStore, "\(url.path) is an SQLite file but not a Core Data store: it has no Z_METADATA table")
        }
        guard let metadata else { throw ObjectGraphError(.corruptStore, "\(url.path): Z_METADATA has no row") }
        return metadata
    }

    /// What a store's Z_MODELCACHE holds.
    public enum ModelCacheContent: Sendable {
        /// No Z_MODELCACHE table, or no row in it (stores older than about 2013).
        case absent
        /// The compiled model Core Data cached.
        case model(ManagedObjectModel)
        /// A cache that does not decode, and why.
        case damaged(String)
    }

    /// Reads Z_MODELCACHE on a read-only connection, as ``metadata(at:)`` reads Z_METADATA: what
    /// `storefs info` checks the recorded version hashes against, whichever model the store is
    /// read with.
    public func modelCache(at url: URL, logger: Logger = Logger(label: "storefs.sqlite")) throws(ObjectGraphError)
        -> ModelCacheContent
    {
        try FileCheck.check(url)
        let copy = try PrivateCopy.make(of: url, hashing: false, logger: logger)
        let source = try SQLiteStore.openReader(url, copy: copy, isWAL: FileCheck.isWAL(copy.store), logger: logger)
        defer { SQLiteStore.close(source) }
        do {
            return try source.reader.read { db in
                guard try db.tableExists("Z_MODELCACHE") else { return .absent }
                return ModelCache.read(from: db, file: url.path, logger: logger)
            }
        } catch {
            throw SQLiteStore.mapError(error, file: url.path)
        }
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
                        .busy,
                        "\(url.path) is being read by another process, so its -wal cannot be folded in; try again when it is done"
                    )
                }
            }
        } catch {
            throw SQLiteStore.mapError(error, file: url.path)
        }
    }

    /// `.NAME_SUPPORT` beside the store: Core Data's external binary data.
    public func companionFolders(of url: URL) -> [URL] {
        [
            url.deletingLastPathComponent().appendingPathComponent(
                ".\(url.deletingPathExtension().lastPathComponent)_SUPPORT")
        ]
    }

    public func open(
        at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata
    ) throws(ObjectGraphError) -> any PersistentStore {
        try SQLiteStore(url: url, model: model, options: options, initialMetadata: initialMetadata)
    }
}
