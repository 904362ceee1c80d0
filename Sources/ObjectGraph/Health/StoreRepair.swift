import Foundation

/// What `storefs doctor --fix` does (docs/HEALTH.md, "What --fix does").
public struct RepairOptions: Sendable {
    /// Dangling references nullified or removed, unreferenced external data quarantined, key
    /// counters raised.
    public var orphans = true
    /// Objects whose owner is gone are deleted, with the delete rules of their relationships.
    public var deleteUnowned = false
    public var pruneHistoryBefore: HistoryCutoff?
    /// Free space given back, last.
    public var vacuum = false
    /// The folder unreferenced external data files go to (beside the store).
    public var quarantine: URL?

    public init() {}
}

/// What a repair changed.
public struct RepairResult: Sendable {
    public var toOnesNullified = 0
    public var membersRemoved = 0
    public var unreachable = UnreachableRemoval()
    public var unownedDeleted = 0
    /// Objects deleted with them (their cascade).
    public var cascadeDeleted = 0
    public var keyCountersRaised = 0
    /// Files moved to ``quarantine``.
    public var quarantined: [String] = []
    public var quarantine: URL?
    public var history: HistoryPruning?
    public var vacuumed = false
    /// Saves made (each one transaction, and one persistent-history transaction where the store
    /// keeps history).
    public var saves = 0

    public init() {}
}

extension StoreDoctor {
    /// References fixed per save: each save is one transaction (and one history transaction).
    static let repairBatch = 1000

    /// Repairs what ``examine(progress:)`` finds that has a safe fix, in this order: key
    /// counters, dangling to-ones (nullified by a save: `Z_OPT + 1`, history, inverses as Core
    /// Data's Nullify leaves them), dangling to-many members (removed by a save of the object that
    /// exists), what no save reaches (by the engine), unowned objects when asked (deleted by a
    /// context, delete rules applied), unreferenced external data (moved to quarantine), history
    /// before the cut-off, then `VACUUM`.
    ///
    /// The store must be open for writing (its file's lock held). Values that break the model
    /// and rows of unknown entities are left: no value is invented and no row storefs cannot read
    /// is removed.
    public func repair(_ options: RepairOptions, progress: (String) -> Void = { _ in }) throws(ObjectGraphError)
        -> RepairResult
    {
        var result = RepairResult()
        let store = coordinator.store
        let repairable = store as? any RepairableStore
        if options.orphans {
            if let repairable {
                progress("key counters")
                try raiseKeyCounters(repairable, &result)
                progress("dangling to-one references")
                try nullifyToOnes(&result) { () throws(ObjectGraphError) in
                    try repairable.danglingToOnes(limit: Self.repairBatch)
                }
                progress("dangling to-many members")
                try removeMembers(&result) { () throws(ObjectGraphError) in
                    try repairable.danglingToManyMembers(limit: Self.repairBatch)
                }
                progress("references no object can reach")
                result.unreachable = try repairable.removeUnreachableReferences()
            } else {
                progress("dangling references")
                let (toOnes, members) = try danglingReferences()
                var once = false
                try nullifyToOnes(&result) { () throws(ObjectGraphError) in
                    defer { once = true }
                    return once ? [] : toOnes
                }
                once = false
                try removeMembers(&result) { () throws(ObjectGraphError) in
                    defer { once = true }
                    return once ? [] : members
                }
            }
        }
        if options.deleteUnowned {
            progress("objects whose owner is gone")
            try deleteUnowned(&result)
        }
        if options.orphans, let repairable, let quarantine = options.quarantine {
            progress("unreferenced external data")
            if let found = try repairable.unreferencedExternalData(), !found.unreferenced.isEmpty {
                result.quarantine = quarantine
                result.quarantined = try Self.move(found.unreferenced.map(\.name), from: found.folder, to: quarantine)
            }
        }
        if let cutoff = options.pruneHistoryBefore {
            guard let repairable else {
                throw ObjectGraphError(.unsupported, "a \(store.storeType) store keeps no persistent history")
            }
            progress("persistent history before \(cutoff)")
            result.history = try repairable.pruneHistory(before: cutoff)
        }
        if options.vacuum {
            guard let repairable else {
                throw ObjectGraphError(
                    .unsupported, "a \(store.storeType) store is written whole at every save: it has no free space")
            }
            progress("VACUUM")
            try repairable.reclaimSpace()
            result.vacuumed = true
        }
        return result
    }

    // MARK: - Saves

    /// Raises each key counter that is behind its rows to the highest key, by a save.
    private func raiseKeyCounters(_ store: any RepairableStore, _ result: inout RepairResult)
        throws(ObjectGraphError)
    {
        let behind = try store.examineKeyCounters()
        guard !behind.isEmpty else { return }
        var request = SaveRequest()
        for finding in behind {
            guard let root = coordinator.model.entityID(named: finding.entity) else { continue }
            request.keyCounters[root] = finding.highestKey
        }
        try coordinator.store.save(request)
        result.saves += 1
        result.keyCountersRaised = request.keyCounters.count
    }

    /// Sets each dangling to-one `next` gives to nil, a batch per save: the update holds the row
    /// as read, so a concurrent writer's change of the same object is a conflict (that batch is
    /// read again), not lost. References a snapshot cannot hold (a key below 1, an unknown entity)
    /// are cleared by the engine.
    private func nullifyToOnes(
        _ result: inout RepairResult, next: () throws(ObjectGraphError) -> [DanglingReference]
    ) throws(ObjectGraphError) {
        let store = coordinator.store
        var stalled = 0
        while true {
            let references = try next()
            guard !references.isEmpty else { return }
            let objects = Array(Set(references.map(\.object))).sorted()
            var snapshots: [ObjectID: Snapshot] = [:]
            var request = SaveRequest()
            var unreadable: [DanglingReference] = []
            do {
                for snapshot in try store.snapshots(for: objects) { snapshots[snapshot.objectID] = snapshot }
            } catch  where error.code == .corruptStore || error.code == .validation {
                // A row the store cannot read (a value its type cannot hold): one at a time, and
                // those that still fail are cleared by the engine.
                for object in objects {
                    do {
                        for snapshot in try store.snapshots(for: [object]) { snapshots[snapshot.objectID] = snapshot }
                    } catch  where error.code == .corruptStore || error.code == .validation {
                        unreadable += references.filter { $0.object == object }
                    }
                }
            }
            var fixed = 0
            for object in objects {
                guard let original = snapshots[object] else { continue }
                var changed = original
                for reference in references where reference.object == object {
                    if changed.toOne[reference.relationship] == reference.missing {
                        _ = changed.toOne.removeValue(forKey: reference.relationship)
                        fixed += 1
                    } else if changed.toOne[reference.relationship] == nil {
                        unreadable.append(reference)
                    }
                }
                if changed.toOne != original.toOne {
                    request.updated.append(SaveRequest.Update(snapshot: changed, original: original))
                }
            }
            var progressed = false
            if !request.updated.isEmpty {
                do {
                    try store.save(request)
                    result.saves += 1
                    result.toOnesNullified += fixed
                    progressed = true
                } catch  where error.code == .conflict {
                    // Another writer changed one of them meanwhile: read the batch again.
                }
            }
            if !unreadable.isEmpty, let repairable = store as? any RepairableStore {
                let cleared = try repairable.clearDanglingToOnes(unreadable)
                result.toOnesNullified += cleared
                progressed = progressed || cleared > 0
            }
            stalled = progressed ? 0 : stalled + 1
            if stalled >= 3 {
                throw ObjectGraphError(
                    .conflict,
                    "dangling references of \(references.count) objects could not be cleared after 3 tries "
                        + "(another writer keeps changing them?); nothing else was left half done")
            }
        }
    }

    /// Removes each dangling member `next` gives from the to-many relationship of the object that
    /// exists, by a save (its join row goes; the object's version moves as Core Data's does).
    private func removeMembers(
        _ result: inout RepairResult, next: () throws(ObjectGraphError) -> [DanglingReference]
    ) throws(ObjectGraphError) {
        var stalled = 0
        while true {
            let members = try next()
            guard !members.isEmpty else { return }
            var grouped: [ObjectID: [String: [ObjectID]]] = [:]
            for member in members {
                grouped[member.object, default: [:]][member.relationship, default: []].append(member.missing)
            }
            var request = SaveRequest()
            for (object, relationships) in grouped.sorted(by: { $0.key < $1.key }) {
                for (relationship, missing) in relationships.sorted(by: { $0.key < $1.key }) {
                    request.toManyChanges.append(
                        SaveRequest.ToManyChange(
                            source: object, relationship: relationship, destinations: [], original: missing))
                }
            }
            do {
                try coordinator.store.save(request)
                result.saves += 1
                result.membersRemoved += members.count
                stalled = 0
            } catch  where error.code == .conflict {
                stalled += 1
                if stalled >= 3 { throw error }
            }
        }
    }

    /// Deletes, through a context (delete rules applied, history written), every object whose
    /// owner relationships are all nil (``OrphanFindings/unowned``), a batch per save.
    private func deleteUnowned(_ result: inout RepairResult) throws(ObjectGraphError) {
        let model = coordinator.model
        let ownership = try Ownership(coordinator: coordinator)
        var unowned: [ObjectID] = []
        for entity in model.entities where !ownership.owners(of: entity.id).isEmpty {
            // One the store cannot read is not deleted: whether it is owned cannot be told.
            try SnapshotWalk(coordinator: coordinator, entity: entity.id).forEach(unreadable: { _, _ in }) { page in
                for snapshot in page where ownership.isUnowned(snapshot) { unowned.append(snapshot.objectID) }
            }
        }
        var start = 0
        while start < unowned.count {
            let batch = unowned[start..<min(start + Self.repairBatch, unowned.count)]
            let context = coordinator.newContext()
            var deleted = Set<ObjectID>()
            for id in batch where !deleted.contains(id) {
                // One deleted with an earlier one (its cascade) is gone already.
                guard try context.exists(id) else { continue }
                for gone in try context.delete(id) { deleted.insert(gone.objectID) }
                result.unownedDeleted += 1
            }
            try context.save()
            result.saves += 1
            result.cascadeDeleted += deleted.count
            start += batch.count
        }
        result.cascadeDeleted -= result.unownedDeleted
    }

    /// Every dangling to-one and to-many member among the objects of a store that cannot name
    /// them itself (an atomic store: its objects are in memory).
    private func danglingReferences() throws(ObjectGraphError) -> (
        toOnes: [DanglingReference], members: [DanglingReference]
    ) {
        let model = coordinator.model
        let store = coordinator.store
        let existing = try ExistingKeys(of: store, model: model)
        var toOnes: [DanglingReference] = []
        var members: [DanglingReference] = []
        for entity in model.entities {
            let toMany = entity.persistentRelationships.filter(\.isToMany)
            try SnapshotWalk(coordinator: coordinator, entity: entity.id).forEach(unreadable: { _, _ in }) {
                (page) throws(ObjectGraphError) in
                for snapshot in page {
                    for (name, destination) in snapshot.toOne where !existing.contains(destination) {
                        toOnes.append(
                            DanglingReference(object: snapshot.objectID, relationship: name, missing: destination))
                    }
                }
                let ids = page.map(\.objectID)
                for relationship in toMany {
                    let lists = try store.toManyDestinationLists(of: relationship.name, in: entity.id, for: ids)
                    for (id, list) in zip(ids, lists) {
                        for destination in list where !existing.contains(destination) {
                            members.append(
                                DanglingReference(object: id, relationship: relationship.name, missing: destination))
                        }
                    }
                }
            }
        }
        return (toOnes, members)
    }

    // MARK: - Files

    /// Moves `names` from `folder` into `quarantine` (made as needed), never over a file; returns
    /// the names moved. A file that went meanwhile is passed over.
    static func move(_ names: [String], from folder: URL, to quarantine: URL) throws(ObjectGraphError) -> [String] {
        do {
            try FileManager.default.createDirectory(at: quarantine, withIntermediateDirectories: true)
        } catch {
            throw ObjectGraphError(
                .io, "cannot make the quarantine folder \(quarantine.path): \(error.localizedDescription)")
        }
        var moved: [String] = []
        for name in names {
            // Names come from the folder's listing, but are checked all the same: one component.
            guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else { continue }
            let from = folder.appendingPathComponent(name).path
            let to = quarantine.appendingPathComponent(name).path
            guard !FileManager.default.fileExists(atPath: to) else {
                throw ObjectGraphError(.exists, "\(to) exists; \(from) was not moved over it")
            }
            if rename(from, to) == 0 {
                moved.append(name)
            } else if errno != ENOENT {
                throw ObjectGraphError(.io, "cannot move \(from) to \(to): \(String(cString: strerror(errno)))")
            }
        }
        StoreFiles.syncFolder(folder)
        StoreFiles.syncFolder(quarantine)
        return moved
    }
}
