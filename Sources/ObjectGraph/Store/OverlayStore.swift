import Foundation
import Synchronization

/// A store whose saves stay in memory above a read-only store that is never written: evidence
/// mounts (`storefs mount -o evidence`) edit a store without one byte reaching it.
///
/// Reads come from the base store with the overlay's changes merged in: objects inserted and
/// updated show as saved, deleted ones are gone (from listings, counts, to-many lists and
/// to-one destinations alike), to-many lists that changed show their new contents. New objects
/// take keys above the highest the base ever handed out (its Z_MAX), so they never meet one of
/// its objects, and ``changes()`` gives the overlay as one ``SaveRequest`` against the base,
/// with the base's values as the originals: replayed on a copy of the base store (`storefs
/// apply`) it writes exactly the overlay, and refuses (as a conflict) a copy that differs where
/// the overlay changed it.
///
/// The base must not change while the overlay is open (an evidence open reads a private copy
/// that does not follow the file), and the overlay reports no outside changes.
///
/// Threading: safe from any thread. Saves run one at a time; reads take the overlay's state
/// under a short lock and ask the base outside it.
public final class OverlayStore: PersistentStore {
    public let base: any PersistentStore

    private struct State {
        /// Inserted and updated objects as they are now.
        var changed: [ObjectID: Snapshot] = [:]
        /// Base objects as they were before their first change (updated and deleted ones).
        var original: [ObjectID: Snapshot] = [:]
        var inserted: Set<ObjectID> = []
        /// Base objects deleted.
        var deleted: Set<ObjectID> = []
        /// To-many lists that changed, as they are now, and as the base held them.
        var toMany: [StoreGraph.ToManyKey: [ObjectID]] = [:]
        var originalToMany: [StoreGraph.ToManyKey: [ObjectID]] = [:]
        var metadata: StoreMetadata?
        /// The highest key handed out per root entity, once the overlay handed one out.
        var highest: [EntityID: Int64] = [:]
        var requests = 0
        var closed = false
    }

    private let state = Mutex(State())
    private let saving = Mutex(())

    public init(base: any PersistentStore) { self.base = base }

    public var storeType: String { base.storeType }
    /// Nil: nothing the overlay keeps is on disk, and nothing may be written beside the base (a
    /// recovery file goes to the temporary folder).
    public var url: URL? { nil }
    public var model: ManagedObjectModel { base.model }
    public var modelSource: ModelSource { base.modelSource }
    public var isReadOnly: Bool { false }
    public var requestCount: Int { state.withLock { $0.requests } + base.requestCount }
    public var inputFiles: [InputFile] { base.inputFiles }

    /// Whether anything was saved into the overlay.
    public var isEmpty: Bool {
        state.withLock { $0.changed.isEmpty && $0.deleted.isEmpty && $0.toMany.isEmpty && $0.metadata == nil }
    }

    // MARK: - Reading

    public func metadata() throws(ObjectGraphError) -> StoreMetadata {
        if let metadata = try access({ $0.metadata }) { return metadata }
        return try base.metadata()
    }

    public func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] {
        let (deleted, inserted) = try access { ($0.deleted, $0.inserted) }
        var ids = try base.objectIDs(of: entity).filter { !deleted.contains($0) }
        ids += inserted.filter { $0.entity == entity }
        return ids.sorted()
    }

    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        let (gone, added) = try access { state in
            (state.deleted.count { $0.entity == entity }, state.inserted.count { $0.entity == entity })
        }
        return try base.count(of: entity) - gone + added
    }

    public func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] {
        var found: [ObjectID: Snapshot] = [:]
        var fromBase: [ObjectID] = []
        let deleted = try access { state in
            for id in ids where !state.deleted.contains(id) {
                if let snapshot = state.changed[id] {
                    found[id] = Self.without(state.deleted, snapshot)
                } else if !state.inserted.contains(id) {
                    fromBase.append(id)
                }
            }
            return state.deleted
        }
        if !fromBase.isEmpty {
            for snapshot in try base.snapshots(for: fromBase) {
                found[snapshot.objectID] = Self.without(deleted, snapshot)
            }
        }
        var seen: Set<ObjectID> = []
        return ids.compactMap { id in seen.insert(id).inserted ? found[id] : nil }
    }

    public func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]
    {
        var result: [ObjectID: [ObjectID]] = [:]
        var fromBase: [ObjectID] = []
        let deleted = try access { state in
            for source in sources {
                if let list = state.toMany[StoreGraph.ToManyKey(source: source, relationship: relationship)] {
                    result[source] = list
                } else if state.inserted.contains(source) || state.deleted.contains(source) {
                    result[source] = []
                } else {
                    fromBase.append(source)
                }
            }
            return state.deleted
        }
        if !fromBase.isEmpty {
            let lists = try base.toManyDestinations(of: relationship, in: entity, for: fromBase)
            for source in fromBase { result[source] = (lists[source] ?? []).filter { !deleted.contains($0) } }
        }
        return result
    }

    /// A base snapshot without to-one destinations the overlay deleted (as a store clears the
    /// keys that named a deleted object).
    private static func without(_ deleted: Set<ObjectID>, _ snapshot: Snapshot) -> Snapshot {
        guard !deleted.isEmpty, snapshot.toOne.contains(where: { deleted.contains($0.value) }) else { return snapshot }
        var cleared = snapshot
        for (name, destination) in snapshot.toOne where deleted.contains(destination) { cleared.toOne[name] = nil }
        return cleared
    }

    public func externalChangeToken() throws(ObjectGraphError) -> Int64? { nil }

    public func check(_ value: AttributeValue, for attribute: AttributeDescription, of entity: EntityID)
        throws(ObjectGraphError)
    {
        // What the base's type cannot hold could never be applied to a copy of it.
        try base.check(value, for: attribute, of: entity)
    }

    public func close() {
        state.withLock { $0.closed = true }
        base.close()
    }

    // MARK: - Keys

    public func highestKey(in root: EntityID) throws(ObjectGraphError) -> Int64 {
        let own = try access { $0.highest[root] }
        return max(own ?? 0, try base.highestKey(in: root))
    }

    public func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey] {
        guard count > 0 else { return [] }
        return try saving.withLock { _ throws(ObjectGraphError) in
            let highest = try highestKey(in: root)
            return try KeyRange.reserve(count, after: highest, in: model[root].name) { last in
                state.withLock { $0.highest[root] = last }
            }
        }
    }

    /// A key no object of the base or the overlay has, and that the overlay did not delete (a
    /// key is not used twice in one patch).
    public func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        guard key.rawValue > 0 else { return false }
        return try saving.withLock { _ throws(ObjectGraphError) in
            let tree = model.entities.filter { $0.rootID == root }.map { ObjectID(entity: $0.id, key: key) }
            let taken = try access { state in
                tree.contains { state.changed[$0] != nil || state.deleted.contains($0) || state.inserted.contains($0) }
            }
            guard !taken, try base.snapshots(for: tree).isEmpty else { return false }
            let highest = try highestKey(in: root)
            state.withLock { $0.highest[root] = max(highest, key.rawValue) }
            return true
        }
    }

    // MARK: - Saving

    /// Applies a save to the overlay, with the checks a store makes: an update conflicts when a
    /// property it changes no longer holds what was read, a delete when the version moved, an
    /// insert when its key is taken. All of it or none of it.
    public func save(_ request: SaveRequest) throws(ObjectGraphError) {
        try saving.withLock { _ throws(ObjectGraphError) in try apply(request) }
    }

    private func apply(_ request: SaveRequest) throws(ObjectGraphError) {
        // What the base holds of the objects and lists this save touches for the first time.
        let now = try access { $0 }
        let touched = request.updated.map(\.objectID) + request.deleted.map(\.objectID)
        let fromBase = touched.filter {
            now.changed[$0] == nil && !now.inserted.contains($0) && !now.deleted.contains($0)
        }
        var baseSnapshots: [ObjectID: Snapshot] = [:]
        for snapshot in try base.snapshots(for: Array(Set(fromBase)).sorted()) {
            baseSnapshots[snapshot.objectID] = snapshot
        }
        var baseLists: [StoreGraph.ToManyKey: [ObjectID]] = [:]
        var needed: [String: [EntityID: [ObjectID]]] = [:]
        for change in request.toManyChanges {
            let key = StoreGraph.ToManyKey(source: change.source, relationship: change.relationship)
            guard now.toMany[key] == nil, !now.inserted.contains(change.source), !now.deleted.contains(change.source)
            else { continue }
            needed[change.relationship, default: [:]][change.source.entity, default: []].append(change.source)
        }
        for (relationship, byEntity) in needed.sorted(by: { $0.key < $1.key }) {
            for (entity, sources) in byEntity.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                let lists = try base.toManyDestinations(of: relationship, in: entity, for: sources)
                for source in sources {
                    baseLists[StoreGraph.ToManyKey(source: source, relationship: relationship)] = lists[source] ?? []
                }
            }
        }

        var next = now
        func current(_ id: ObjectID) -> Snapshot? {
            if let snapshot = next.changed[id] { return snapshot }
            guard !next.deleted.contains(id), !next.inserted.contains(id) else { return nil }
            return baseSnapshots[id].map { Self.without(next.deleted, $0) }
        }
        for update in request.updated where !update.isEmpty {
            guard let stored = current(update.objectID) else { throw conflict(update.objectID, deleted: true) }
            if update.changedAttributes.contains(where: { stored.attributes[$0] != update.original.attributes[$0] })
                || update.changedToOne.contains(where: { stored.toOne[$0] != update.original.toOne[$0] })
            {
                throw conflict(update.objectID, deleted: false)
            }
        }
        for deletion in request.deleted where current(deletion.objectID)?.version != deletion.expectedVersion {
            throw conflict(deletion.objectID, deleted: current(deletion.objectID) == nil)
        }
        var inserting: Set<ObjectID> = []
        for snapshot in request.inserted {
            let id = snapshot.objectID
            let root = model[id.entity].rootID
            let tree = model.entities.filter { $0.rootID == root }.map { ObjectID(entity: $0.id, key: id.key) }
            guard inserting.insert(id).inserted,
                !tree.contains(where: { next.changed[$0] != nil || next.deleted.contains($0) })
            else {
                throw ObjectGraphError(.exists, "\(model[id.entity].name) key \(id.key) already exists", objects: [id])
            }
        }

        for snapshot in request.inserted {
            var snapshot = snapshot
            snapshot.version = 1
            let id = snapshot.objectID
            next.changed[id] = snapshot
            next.inserted.insert(id)
            let root = model[id.entity].rootID
            next.highest[root] = max(next.highest[root] ?? 0, id.key.rawValue)
        }
        for update in request.updated where !update.isEmpty {
            guard var stored = current(update.objectID) else { continue }
            if !next.inserted.contains(update.objectID), next.original[update.objectID] == nil {
                next.original[update.objectID] = baseSnapshots[update.objectID]
            }
            for name in update.changedAttributes { stored.attributes[name] = update.snapshot.attributes[name] }
            for name in update.changedToOne { stored.toOne[name] = update.snapshot.toOne[name] }
            stored.version += 1
            next.changed[update.objectID] = stored
        }
        for deletion in request.deleted {
            let id = deletion.objectID
            if next.inserted.remove(id) == nil {
                if next.original[id] == nil { next.original[id] = baseSnapshots[id] }
                next.deleted.insert(id)
            }
            next.changed[id] = nil
            for relationship in model[id.entity].persistentRelationships where relationship.isToMany {
                let key = StoreGraph.ToManyKey(source: id, relationship: relationship.name)
                next.toMany[key] = nil
                next.originalToMany[key] = nil
            }
        }
        for change in request.toManyChanges {
            let source = change.source
            guard next.changed[source] != nil || (!next.deleted.contains(source) && !next.inserted.contains(source))
            else { continue }
            let key = StoreGraph.ToManyKey(source: source, relationship: change.relationship)
            let held = next.toMany[key] ?? (baseLists[key] ?? []).filter { !next.deleted.contains($0) }
            if !next.inserted.contains(source), next.originalToMany[key] == nil {
                next.originalToMany[key] = baseLists[key] ?? []
            }
            next.toMany[key] = change.applied(to: held)
        }
        if var metadata = request.metadata {
            let stored: StoreMetadata
            if let kept = next.metadata { stored = kept } else { stored = try base.metadata() }
            metadata.storeType = stored.storeType
            metadata.storeUUID = stored.storeUUID
            next.metadata = metadata
        }
        try access { (state) throws(ObjectGraphError) in
            let requests = state.requests
            state = next
            state.requests = requests
        }
    }

    private func conflict(_ id: ObjectID, deleted: Bool) -> ObjectGraphError {
        let what = "\(model[id.entity].name)/\(id.key)"
        return ObjectGraphError(
            .conflict, deleted ? "\(what) was deleted since it was read" : "\(what) was changed since it was read",
            objects: [id])
    }

    // MARK: - The overlay as a save

    /// Everything the overlay holds, as one save against the base: objects inserted (with their
    /// values now), updated (the properties that differ from the base, with the base's values as
    /// the originals and its versions), deleted (with the base's versions), to-many lists whose
    /// contents differ (with the base's contents as the originals), and the metadata when it
    /// changed. Empty when the overlay changed nothing (or changed things back).
    public func changes() throws(ObjectGraphError) -> SaveRequest {
        let state = try access { $0 }
        var request = SaveRequest()
        request.inserted = state.inserted.sorted().compactMap { state.changed[$0] }
        for (id, snapshot) in state.changed.sorted(by: { $0.key < $1.key }) where !state.inserted.contains(id) {
            guard let original = state.original[id] else { continue }
            var now = snapshot
            now.version = original.version
            let update = SaveRequest.Update(snapshot: now, original: original)
            if !update.isEmpty { request.updated.append(update) }
        }
        request.deleted = state.deleted.sorted().compactMap { id in
            state.original[id].map { SaveRequest.Deletion(objectID: id, expectedVersion: $0.version) }
        }
        let keys = state.toMany.keys.sorted { ($0.source, $0.relationship) < ($1.source, $1.relationship) }
        for key in keys where !state.deleted.contains(key.source) {
            let destinations = state.toMany[key] ?? []
            let original = state.inserted.contains(key.source) ? [] : state.originalToMany[key] ?? []
            guard destinations != original else { continue }
            request.toManyChanges.append(
                SaveRequest.ToManyChange(
                    source: key.source, relationship: key.relationship, destinations: destinations, original: original))
        }
        if let metadata = state.metadata, metadata != (try? base.metadata()) { request.metadata = metadata }
        return request
    }

    private func access<T>(_ body: (inout State) throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        try state.withLock { (state) throws(ObjectGraphError) -> T in
            guard !state.closed else { throw ObjectGraphError(.unsupported, "the overlay is closed") }
            state.requests += 1
            return try body(&state)
        }
    }
}
