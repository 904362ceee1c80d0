import Foundation

/// Migration to another store, as Core Data's migratePersistentStore does it: every object of the
/// old store is given to a new one with its identity (primary keys), version and relationships,
/// the key counters, the metadata and the persistent history come along, and the old store is
/// never touched.
extension PersistentStoreCoordinator {
    /// Objects read per store request while migrating.
    static let migrationBatchSize = 5_000

    /// Copies every object of this coordinator's store into `destination` (an empty store of the
    /// same model), keeping keys, values, relationships (ordered ones in order) and metadata. The
    /// destination records its own store type; the store UUID is kept, so object URIs stay valid.
    ///
    /// The whole graph goes to the destination in one save: one transaction, or one atomic file
    /// write, so the destination holds all of it or nothing.
    public func migrate(into destination: any PersistentStore, progress: (Int, Int) -> Void = { _, _ in })
        throws(ObjectGraphError)
    {
        let source = store
        guard destination.model == model else {
            throw ObjectGraphError(.invalidModel, "the destination store has another model than the source")
        }
        var total = 0
        for entity in model.entities { total += try source.count(of: entity.id) }
        var request = SaveRequest()
        // Each object keeps its version: what an app or another mount remembers of it still holds.
        request.keepsVersions = true
        var done = 0
        for entity in model.entities {
            let ids = try source.objectIDs(of: entity.id)
            var start = 0
            while start < ids.count {
                let batch = Array(ids[start..<min(start + Self.migrationBatchSize, ids.count)])
                let snapshots = try source.snapshots(for: batch)
                guard snapshots.count == batch.count else {
                    throw ObjectGraphError(
                        .corruptStore, "the source store changed while it was being migrated; try again")
                }
                request.inserted += snapshots
                for relationship in entity.persistentRelationships where relationship.isToMany {
                    let lists = try source.toManyDestinations(of: relationship.name, in: entity.id, for: batch)
                    for id in batch {
                        let list = lists[id] ?? []
                        if !list.isEmpty {
                            request.toManyChanges.append(
                                .init(source: id, relationship: relationship.name, destinations: list))
                        }
                    }
                }
                done += batch.count
                progress(done, total)
                start += batch.count
            }
        }
        // Keys handed out before (objects deleted since) stay used in the new store.
        for root in model.rootEntities {
            let counter = try source.highestKey(in: root.id)
            if counter > 0 { request.keyCounters[root.id] = counter }
        }
        var metadata = try destination.metadata()
        for (key, value) in try source.metadata().values where key != StoreMetadata.storeTypeKey {
            metadata[key] = value
        }
        request.metadata = metadata
        // Persistent history goes along where both stores keep Core Data's (SQLite, PostgreSQL):
        // the new store's history is the old one's, not a transaction of the migration's inserts.
        let history = (source as? any PersistentHistoryStore).flatMap { $0.keepsPersistentHistory ? $0 : nil }
        let historyWriter = destination as? any HistoryWriting
        if history != nil && historyWriter != nil { request.recordsHistory = false }
        try destination.save(request)
        if let history, let historyWriter {
            var after: Int64 = 0
            while true {
                let page = try history.historyTransactions(
                    after: after, limit: Self.historyPage, includingChanges: true)
                guard let last = page.last, last.number > after else { break }
                try historyWriter.writeHistory(page)
                after = last.number
            }
        }
    }

    /// History transactions carried per store request of a migration.
    static let historyPage = 1_000

    /// Migrates this coordinator's store to a new file at `url` of store type `type`.
    ///
    /// The new store is written under a temporary name in the destination's folder and renamed
    /// into place only when complete; on any failure that file is removed, so there is never a
    /// half-written store at `url`, and the source is only read.
    ///
    /// - Throws: ``ObjectGraphError/Code/exists`` when `url` exists; the store's error otherwise.
    public func migrate(
        to url: URL, type: any PersistentStoreType, progress: (Int, Int) -> Void = { _, _ in }
    ) throws(ObjectGraphError) {
        if StoreURL.isService(url) {
            try migrate(toService: url, type: type, progress: progress)
            return
        }
        var metadata = StoreMetadata()
        metadata.storeUUID = try store.metadata().storeUUID
        try Self.writeNewStore(at: url, type: type, model: model, metadata: metadata) {
            (destination) throws(ObjectGraphError) in
            try migrate(into: destination, progress: progress)
        }
    }

    /// Creates a store of `type` for `model` under a temporary name beside `url`, lets `fill`
    /// write it, closes it and renames it to `url`, its companion folders' files moved beside it
    /// first. On any failure nothing is left behind.
    static func writeNewStore<R>(
        at url: URL, type: any PersistentStoreType, model: ManagedObjectModel, metadata initial: StoreMetadata,
        replacing: Bool = false, fill: (any PersistentStore) throws(ObjectGraphError) -> R,
        beforeRename: (URL) throws(ObjectGraphError) -> Void = { _ throws(ObjectGraphError) in }
    ) throws(ObjectGraphError) -> R {
        guard replacing || !FileManager.default.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.exists, "\(url.path) exists; migration writes a new store and never overwrites one")
        }
        // What a killed migration into this store left (its process gone) goes first.
        StoreFiles.removeStaleTemporaries(of: url, type: type, holdingLock: replacing)
        let temporary = StoreFiles.temporaryName(for: url)
        var metadata = initial
        metadata[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: model))
        var moved: [URL] = []
        do throws(ObjectGraphError) {
            let destination = try type.open(
                at: temporary, model: model, options: StoreOptions(createIfMissing: true), initialMetadata: metadata)
            let result: R
            do throws(ObjectGraphError) {
                result = try fill(destination)
            } catch {
                destination.close()
                throw error
            }
            // A WAL store's last writes may still sit in its -wal file: the rename moves the main
            // file only, so the store must be checkpointed (closed) before, as close() does.
            destination.close()
            try StoreFiles.checkClosed(temporary)
            StoreFiles.syncFile(temporary)
            // Companion files (external data) go beside the store before it appears: a crash in
            // between leaves files nothing refers to, never a store that misses its files.
            for (from, to) in zip(type.companionFolders(of: temporary), type.companionFolders(of: url))
            where FileManager.default.fileExists(atPath: from.path) {
                moved += try StoreFiles.moveFiles(from: from, into: to)
            }
            try beforeRename(temporary)
            guard rename(temporary.path, url.path) == 0 else {
                throw ObjectGraphError(
                    .io, "cannot move the new store to \(url.path): \(String(cString: strerror(errno)))")
            }
            StoreFiles.syncFolder(url.deletingLastPathComponent())
            for folder in type.companionFolders(of: temporary) { try? FileManager.default.removeItem(at: folder) }
            return result
        } catch {
            StoreFiles.removeStore(temporary, type: type)
            for file in moved { try? FileManager.default.removeItem(at: file) }
            throw error
        }
    }

    /// Migrates into a new store on a server (PostgreSQL): created empty, then filled by one save
    /// (one transaction: all objects or none); when anything fails, the new store is removed, so
    /// there is never a half-written store at `url`.
    private func migrate(toService url: URL, type: any PersistentStoreType, progress: (Int, Int) -> Void)
        throws(ObjectGraphError)
    {
        guard try !type.storeExists(at: url) else {
            throw ObjectGraphError(
                .exists,
                "\(StoreURL.describe(url)) holds a store; migration writes a new store and never overwrites one")
        }
        var metadata = StoreMetadata()
        metadata.storeUUID = try store.metadata().storeUUID
        metadata[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: model))
        let destination = try type.open(
            at: url, model: model, options: StoreOptions(createIfMissing: true), initialMetadata: metadata)
        do throws(ObjectGraphError) {
            try migrate(into: destination, progress: progress)
            destination.close()
        } catch {
            destination.close()
            do { try type.removeStore(at: url) } catch let removal {
                throw ObjectGraphError(
                    error.code,
                    "\(error.message); removing the new, incomplete store failed too (\(removal.message)): remove it by hand"
                )
            }
            throw error
        }
    }
}
