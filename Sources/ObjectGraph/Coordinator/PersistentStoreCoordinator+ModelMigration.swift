import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a model migration did.
public struct ModelMigrationResult: Sendable {
    /// One line per step (``MigrationStep/description``).
    public var steps: [String]
    /// Objects in the new store.
    public var objectCount: Int
    /// Persistent history transactions carried into the new store.
    public var historyTransactions: Int
    /// The old store, kept beside the new one by an in-place migration.
    public var backup: URL?
}

/// Model migration, as Core Data's migration manager does it: a store written with one model
/// version becomes a store of another, by mapping models (inferred for lightweight steps), into a
/// new store of any type or in place.
///
/// The new store is what Core Data would write for the new model: its metadata carries the new
/// model's version hashes and identifiers (and storefs's copy of the model), every custom key
/// and the store UUID of the old store; Z_MAX is at least the old store's; persistent history is
/// carried where both stores are of a type that keeps it. Steps between versions run in memory;
/// only the last writes a file.
extension PersistentStoreCoordinator {
    /// Migrates this coordinator's store (open with `steps[0].source`) through `steps` into
    /// `destination`, an empty store of the last step's model, in one save.
    public func migrateModel(
        into destination: any PersistentStore, steps: [MigrationStep], progress: (Int, Int) -> Void = { _, _ in }
    ) throws(ObjectGraphError) -> ModelMigrationResult {
        guard let first = steps.first, let last = steps.last else {
            throw ObjectGraphError(.invalidModel, "a model migration needs at least one step")
        }
        guard first.source == model else {
            throw ObjectGraphError(
                .invalidModel, "the store is open with another model than the one its migration starts from")
        }
        guard destination.model == last.destination else {
            throw ObjectGraphError(
                .invalidModel, "the destination store has another model than the one the migration ends with")
        }
        // Every step's mapping is checked before any object is read: a custom policy in the
        // last step refuses the migration at once.
        for step in steps {
            do {
                try MigrationRun(from: step.source, to: step.destination, mapping: step.mapping).check()
            } catch {
                let where_ = steps.count > 1 ? "migrating \(step.from) → \(step.to): " : ""
                throw ObjectGraphError(error.code, where_ + error.message, objects: error.objects)
            }
        }
        let kept = try store.metadata()
        var reading: any PersistentStore = store
        var history: HistoryMapping?
        var count = 0
        for (index, step) in steps.enumerated() {
            var run = MigrationRun(from: step.source, to: step.destination, mapping: step.mapping)
            let output: MigrationRun.Output
            do {
                output = try run.run(on: reading, progress: progress)
            } catch {
                let where_ = steps.count > 1 ? "migrating \(step.from) → \(step.to): " : ""
                throw ObjectGraphError(error.code, where_ + error.message, objects: error.objects)
            }
            history = history.map { $0.then(output.history) } ?? output.history
            let target: any PersistentStore =
                index == steps.count - 1 ? destination : GraphStore(model: step.destination)
            var request = output.request
            request.metadata = try Self.migratedMetadata(kept, into: target, model: step.destination)
            try target.save(request)
            reading = target
            count = output.objectCount
        }
        var carried = 0
        if let source = store as? any HistoryCarrying, let target = destination as? any HistoryCarrying,
            let log = try source.exportHistory(), let history
        {
            carried = try target.adoptHistory(log, mapping: history)
        }
        return ModelMigrationResult(
            steps: steps.map(\.description), objectCount: count, historyTransactions: carried, backup: nil)
    }

    /// The metadata of a migrated store: `target`'s own bookkeeping for `model`, and every other
    /// key of the old store (custom keys, the store UUID).
    static func migratedMetadata(_ old: StoreMetadata, into target: any PersistentStore, model: ManagedObjectModel)
        throws(ObjectGraphError) -> StoreMetadata
    {
        var metadata = try target.metadata()
        for (key, value) in old.values
        where key != StoreMetadata.storeTypeKey && !StoreMetadata.bookkeepingKeys.contains(key) {
            metadata[key] = value
        }
        for (key, value) in VersionHash.metadata(for: model) { metadata[key] = value }
        metadata[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: model))
        return metadata
    }

    /// Migrates this coordinator's store through `steps` into a new store at `url` of `type`,
    /// written under a temporary name and renamed into place only when complete (see
    /// ``migrate(to:type:progress:)``).
    public func migrateModel(
        to url: URL, type: any PersistentStoreType, steps: [MigrationStep], progress: (Int, Int) -> Void = { _, _ in }
    ) throws(ObjectGraphError) -> ModelMigrationResult {
        guard let last = steps.last else {
            throw ObjectGraphError(.invalidModel, "a model migration needs at least one step")
        }
        var metadata = StoreMetadata()
        metadata.storeUUID = try store.metadata().storeUUID
        return try Self.writeNewStore(at: url, type: type, model: last.destination, metadata: metadata) {
            (destination) throws(ObjectGraphError) in
            try migrateModel(into: destination, steps: steps, progress: progress)
        }
    }

    /// Migrates the store at `url` in place: the new store replaces it in one rename, and the old
    /// one is kept beside it (`NAME.pre-migration.EXT`).
    ///
    /// The store's lock is held throughout (no writer may change it meanwhile); it is made one
    /// file first (``PersistentStoreType/consolidate(at:)``), read with `sourceModel` (nil: its
    /// own), and `plan` says the steps from what it reads. A failure at any point leaves the
    /// store as it was and no backup or temporary file behind; when `plan` gives no step, nothing
    /// is written.
    public static func migrateInPlace(
        at url: URL, types: [any PersistentStoreType], forcedType: (any PersistentStoreType)? = nil,
        sourceModel: ManagedObjectModel? = nil, modelDescription: ModelSource? = nil,
        plan: (PersistentStoreCoordinator) throws(ObjectGraphError) -> [MigrationStep],
        progress: (Int, Int) -> Void = { _, _ in }
    ) throws(ObjectGraphError) -> ModelMigrationResult {
        let type: any PersistentStoreType
        if let forcedType { type = forcedType } else { type = try storeType(for: url, among: types) }
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.notFound, "\(url.path) does not exist")
        }
        let lock = try StoreLock.acquire(for: url)
        defer { lock.release() }
        // A migration of this store killed part-way left its temporary store beside it; none can
        // be running now (the lock is held), so it goes, whatever storefs wrote it.
        StoreFiles.removeStaleTemporaries(of: url, type: type, holdingLock: true)
        // What reading the store makes beside it (SQLite's -shm, an empty -wal) goes again on a
        // failure, when it was not there before: a failed migration leaves the folder as it was.
        let sidecarsBefore = ["-wal", "-shm"].filter { FileManager.default.fileExists(atPath: url.path + $0) }
        func removeNewSidecars() {
            guard sidecarsBefore.isEmpty else { return }
            try? StoreFiles.removeEmptySidecars(of: url)
        }
        try type.consolidate(at: url)
        let opened: PersistentStoreCoordinator
        do {
            opened = try open(
                at: url, types: types, model: sourceModel, options: StoreOptions(readOnly: true),
                modelDescription: modelDescription,
                forcedType: type)
        } catch {
            removeNewSidecars()
            throw error
        }
        var coordinator = opened
        defer { coordinator.close() }
        let steps: [MigrationStep]
        do {
            steps = try plan(opened)
        } catch {
            opened.close()
            removeNewSidecars()
            throw error
        }
        guard let first = steps.first, let last = steps.last else {
            opened.close()
            removeNewSidecars()
            return ModelMigrationResult(steps: [], objectCount: 0, historyTransactions: 0, backup: nil)
        }
        if first.source != opened.model {
            opened.close()
            do {
                coordinator = try open(
                    at: url, types: types, model: first.source, options: StoreOptions(readOnly: true), forcedType: type)
            } catch {
                removeNewSidecars()
                throw error
            }
        }
        var metadata = StoreMetadata()
        metadata.storeUUID = try coordinator.store.metadata().storeUUID
        let backup = try StoreFiles.backupName(for: url)
        // The old store's companion files (external data), found before the new store's join them.
        let companions = Array(zip(type.companionFolders(of: url), type.companionFolders(of: backup)))
        let oldFiles = companions.map { StoreFiles.files(under: $0.0) }
        var backupMade: [URL] = []
        do throws(ObjectGraphError) {
            var result = try writeNewStore(
                at: url, type: type, model: last.destination, metadata: metadata, replacing: true,
                fill: { (destination) throws(ObjectGraphError) in
                    try coordinator.migrateModel(into: destination, steps: steps, progress: progress)
                },
                beforeRename: { (_) throws(ObjectGraphError) in
                    // The old store's readers go first; what they left beside it (SQLite's -shm, an
                    // empty -wal) would otherwise sit beside the new store.
                    coordinator.close()
                    try StoreFiles.removeEmptySidecars(of: url)
                    // The old store is kept under the backup's name before the new one replaces it:
                    // a link to the same file (or a copy), with its companion files.
                    try StoreFiles.linkOrCopy(url, to: backup)
                    backupMade.append(backup)
                    for ((folder, backupFolder), files) in zip(companions, oldFiles) where !files.isEmpty {
                        backupMade.append(backupFolder)
                        for relative in files {
                            let to = backupFolder.appendingPathComponent(relative)
                            do {
                                try FileManager.default.createDirectory(
                                    at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
                            } catch {
                                throw ObjectGraphError(
                                    .io,
                                    "cannot make \(to.deletingLastPathComponent().path): \(error.localizedDescription)")
                            }
                            try StoreFiles.linkOrCopy(folder.appendingPathComponent(relative), to: to)
                        }
                    }
                    StoreFiles.syncFolder(url.deletingLastPathComponent())
                })
            // The old store's companion files now belong to the backup alone.
            for ((folder, _), files) in zip(companions, oldFiles) {
                for relative in files {
                    try? FileManager.default.removeItem(at: folder.appendingPathComponent(relative))
                }
            }
            result.backup = backup
            return result
        } catch {
            coordinator.close()
            for made in backupMade.reversed() { try? FileManager.default.removeItem(at: made) }
            removeNewSidecars()
            throw error
        }
    }
}
