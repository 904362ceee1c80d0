import Foundation

/// Migration to another store, as Core Data's migratePersistentStore does it: every object of the
/// old store is given to a new one with its identity (primary keys) and relationships, the
/// metadata comes along, and the old store is never touched.
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
        var done = 0
        for entity in model.entities {
            let ids = try source.objectIDs(of: entity.id)
            var start = 0
            while start < ids.count {
                let batch = Array(ids[start..<min(start + Self.migrationBatchSize, ids.count)])
                let snapshots = try source.snapshots(for: batch)
                guard snapshots.count == batch.count else {
                    throw ObjectGraphError(.corruptStore, "the source store changed while it was being migrated; try again")
                }
                request.inserted += snapshots
                for relationship in entity.persistentRelationships where relationship.isToMany {
                    let lists = try source.toManyDestinations(of: relationship.name, in: entity.id, for: batch)
                    for id in batch {
                        let list = lists[id] ?? []
                        if !list.isEmpty {
                            request.toManyChanges.append(.init(source: id, relationship: relationship.name, destinations: list))
                        }
                    }
                }
                done += batch.count
                progress(done, total)
                start += batch.count
            }
        }
        var metadata = try destination.metadata()
        for (key, value) in try source.metadata().values where key != StoreMetadata.storeTypeKey {
            metadata[key] = value
        }
        request.metadata = metadata
        try destination.save(request)
    }

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
        let fileManager = FileManager.default
        guard !fileManager.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.exists, "\(url.path) exists; migration writes a new store and never overwrites one")
        }
        let folder = url.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).migrating-\(UUID().uuidString.prefix(8))")
            .appendingPathExtension(url.pathExtension)
        let sidecars = ["", "-wal", "-shm", "-journal"]
        func removeTemporary() {
            for suffix in sidecars { try? fileManager.removeItem(atPath: temporary.path + suffix) }
        }
        var metadata = StoreMetadata()
        metadata.storeUUID = try store.metadata().storeUUID
        metadata[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: model))
        do throws(ObjectGraphError) {
            let destination = try type.open(
                at: temporary, model: model, options: StoreOptions(createIfMissing: true), initialMetadata: metadata)
            do throws(ObjectGraphError) {
                try migrate(into: destination, progress: progress)
            } catch {
                destination.close()
                throw error
            }
            destination.close()
            // A WAL store's last writes may still sit in its -wal file: the rename moves the main
            // file only, so the store must be checkpointed (closed) before, as close() does.
            for suffix in ["-wal", "-shm"] where fileManager.fileExists(atPath: temporary.path + suffix) {
                let size = (try? fileManager.attributesOfItem(atPath: temporary.path + suffix)[.size] as? Int) ?? 0
                if size > 0 && suffix == "-wal" {
                    throw ObjectGraphError(.io, "the new store was not checkpointed; its -wal file still holds data")
                }
                try? fileManager.removeItem(atPath: temporary.path + suffix)
            }
            guard rename(temporary.path, url.path) == 0 else {
                throw ObjectGraphError(.io, "cannot move the new store to \(url.path): \(String(cString: strerror(errno)))")
            }
        } catch {
            removeTemporary()
            throw error
        }
    }

    /// Migrates into a new store on a server (PostgreSQL): created empty, then filled by one save
    /// (one transaction: all objects or none); when anything fails, the new store is removed, so
    /// there is never a half-written store at `url`.
    private func migrate(toService url: URL, type: any PersistentStoreType, progress: (Int, Int) -> Void) throws(ObjectGraphError) {
        guard try !type.storeExists(at: url) else {
            throw ObjectGraphError(.exists, "\(StoreURL.describe(url)) holds a store; migration writes a new store and never overwrites one")
        }
        var metadata = StoreMetadata()
        metadata.storeUUID = try store.metadata().storeUUID
        metadata[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: model))
        let destination = try type.open(at: url, model: model, options: StoreOptions(createIfMissing: true), initialMetadata: metadata)
        do throws(ObjectGraphError) {
            try migrate(into: destination, progress: progress)
            destination.close()
        } catch {
            destination.close()
            do { try type.removeStore(at: url) } catch let removal {
                throw ObjectGraphError(
                    error.code, "\(error.message); removing the new, incomplete store failed too (\(removal.message)): remove it by hand")
            }
            throw error
        }
    }
}
