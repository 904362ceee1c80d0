import Foundation
import Synchronization

/// A scratchpad of objects: reads fire faults (in batches where asked), changes collect until a
/// save writes them to the store.
///
/// A context gives one ``ManagedObject`` per record while the caller holds it (uniquing), keeps
/// inverse relationships consistent on every change, applies delete rules, validates values when
/// they are set and again on save, and detects conflicting saves by comparing what it read with
/// what the store holds when it writes (optimistic locking, property by property).
///
/// Changes made by one call (a value, a relationship and its inverses, a delete and what its rules
/// reach) form a group with every other change they touch: ``save(holding:)`` writes every group
/// that is valid and leaves the others pending, so one change that cannot be saved never holds
/// back or loses another (``save()`` is all or nothing).
///
/// Threading: safe from any thread, with three locks, none of which a read of what memory holds
/// waits behind a store request for:
/// - `state` guards the context's tables and is held only for moments, never across a store
///   request. Reads that fault (rows, to-many contents, a listing's IDs, a lookup by key, a count)
///   query the store without it, so a read served from memory never waits for a query, and
///   readers of different objects query in parallel.
/// - `changeLock` makes changes one at a time (a change reads, then writes, what other changes
///   must not move meanwhile); a change that faults holds it across that store request, so
///   another change waits for it, but no read does.
/// - `saveLock` makes saves one at a time and is held across the store's save. The save takes
///   `changeLock` only to collect its changes and to take in the outcome: while the store works,
///   the context reads what it saves from memory (the objects in flight) and changes go on,
///   to other objects and to those in flight alike (``save(holding:)`` says how).
/// Calls block (plain threads only, never a Swift concurrency pool thread).
public final class ObjectContext: Sendable {
    /// An existing or inserted object's pending state: its full new snapshot, the snapshot it was
    /// read as, and the to-many relationships whose contents changed with their contents as read.
    struct PendingObject {
        var snapshot: Snapshot
        /// The object as read; for an inserted object, an empty snapshot of version 0.
        var original: Snapshot
        var isInserted: Bool
        var toMany: [String: [ObjectID]] = [:]
        var originalToMany: [String: [ObjectID]] = [:]
        /// The object's insert is in a save in flight: it is this context's, not surely the
        /// store's, until the save ends (listings show it, its to-many lists are all here).
        var insertedInFlight = false

        /// Inserted here, or in a save not finished yet.
        var isUnsaved: Bool { isInserted || insertedInFlight }
    }

    /// A change a save in flight writes: what to put back if the save fails, and the change count
    /// the object had when the save took it (a change since keeps the object pending).
    struct InFlight {
        /// The pending change being saved; nil for a deletion.
        var pending: PendingObject?
        var changeCount: Int
    }

    /// What the last save that finished inserted and deleted: a listing read from the store
    /// while it committed may or may not hold them.
    struct FinishedSave {
        var inserted: Set<ObjectID> = []
        var deleted: Set<ObjectID> = []
    }

    /// Why a group was not saved, and the change count of the object when it failed: a failed
    /// group is tried again only once one of its objects changed.
    struct Failure {
        var error: ObjectGraphError
        var changeCount: Int
    }

    struct State {
        var registered: [ObjectID: WeakObject] = [:]
        var pending: [ObjectID: PendingObject] = [:]
        /// Deleted objects and the snapshot they had when deleted.
        var deleted: [ObjectID: Snapshot] = [:]
        var metadata: StoreMetadata?
        var faultsFired = 0
        /// The batch each recently prefetched object was fetched in, so that the first to-many
        /// fault of one object fires for the whole batch (the rest of a listing follows).
        var batchOf: [ObjectID: Int] = [:]
        var batches: [Int: [ObjectID]] = [:]
        var nextBatch = 0
        /// Change groups as a union-find forest over changed objects: objects changed together are
        /// saved together (a relationship and its inverse, a delete and its cascade).
        var groupParent: [ObjectID: ObjectID] = [:]
        /// Objects the current call touched; united into one group when it ends.
        var touched: [ObjectID] = []
        /// How often each changed object was changed: a failed group is retried once this moves.
        var changeCount: [ObjectID: Int] = [:]
        var failures: [ObjectID: Failure] = [:]
        /// Saves finished so far: a listing or count read from the store without the lock is
        /// read again when more than one save finished meanwhile (``lastSave`` covers one).
        var saves = 0
        var lastSave = FinishedSave()
        /// Changes a save is writing now (see ``InFlight``), by object.
        var inFlight: [ObjectID: InFlight] = [:]
    }

    /// What a read found under the lock: its answer, or the store request to make without it.
    enum Lookup<Answer> {
        case found(Answer)
        case fetch([ObjectID])
    }

    /// Batches remembered for to-many batch faulting: enough for the listings in use at once.
    static let rememberedBatches = 64

    final class WeakObject {
        weak var object: ManagedObject?
        init(_ object: ManagedObject) { self.object = object }
    }

    public let coordinator: PersistentStoreCoordinator
    let state = Mutex(State())
    /// Held by one change at a time, across the faults it needs (see the type's summary).
    let changeLock = Mutex(())
    /// Held by one save at a time, across the store's save.
    let saveLock = Mutex(())

    /// Times a listing or count is read again because saves finished while it was read, before
    /// it is read holding ``changeLock`` (no save can finish then).
    static let readAttempts = 4

    init(coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
    }

    public var model: ManagedObjectModel { coordinator.model }
    var store: any PersistentStore { coordinator.store }
    var cache: RowCache { coordinator.rowCache }
    var batchSize: Int { coordinator.configuration.batchSize }

    // MARK: - Objects and uniquing

    /// The object for `id`, as a fault if its row is not in memory; the same instance for the same
    /// record while any caller holds it.
    public func object(with id: ObjectID) -> ManagedObject {
        state.withLock { state in
            if let existing = state.registered[id]?.object { return existing }
            let object = ManagedObject(objectID: id, context: self)
            state.registered[id] = WeakObject(object)
            if state.registered.count > 4096 && state.registered.count.isMultiple(of: 4096) {
                state.registered = state.registered.filter { $0.value.object != nil }
            }
            return object
        }
    }

    /// Whether reading `id` would have to fetch its row from the store.
    public func isFault(_ id: ObjectID) -> Bool {
        state.withLock { state in state.pending[id] == nil && !cache.contains(id) }
    }

    /// The IDs of the objects of `entity` (and of its subentities when asked), by key, including
    /// objects inserted and excluding objects deleted in this context.
    public func objectIDs(of entity: EntityID, includingSubentities: Bool = false) throws(ObjectGraphError)
        -> [ObjectID]
    {
        let entities = includingSubentities ? model.entityAndSubentities(of: entity) : [entity]
        let wanted = Set(entities)
        // The IDs are read without the lock. A save that finished meanwhile moved its inserts
        // and deletes out of this context's tables, and the store's answer may predate them:
        // the last save's are taken into account; after more than one, the IDs are read again.
        func attempt() throws(ObjectGraphError) -> [ObjectID]? {
            let savesBefore = state.withLock { $0.saves }
            var runs: [[ObjectID]] = []
            for e in entities { runs.append(try store.objectIDs(of: e)) }
            let merged = state.withLock { state -> [ObjectID]? in
                let finished = state.saves - savesBefore
                guard finished <= 1 else { return nil }
                var unsaved = state.pending.values.filter {
                    $0.isUnsaved && wanted.contains($0.snapshot.objectID.entity)
                }
                .map(\.snapshot.objectID)
                if finished == 1 { unsaved += state.lastSave.inserted.filter { wanted.contains($0.entity) } }
                unsaved.sort { $0.key < $1.key }
                if !unsaved.isEmpty { runs.append(unsaved) }
                var ids = ObjectIDRuns.merged(&runs)
                // An insert in flight, or just saved, may be in the store's answer too.
                if !state.inFlight.isEmpty || finished == 1 { ids = Self.withoutRepeats(ids) }
                if !state.deleted.isEmpty { ids.removeAll { state.deleted[$0] != nil } }
                if finished == 1 && !state.lastSave.deleted.isEmpty {
                    ids.removeAll { state.lastSave.deleted.contains($0) }
                }
                return ids
            }
            return merged
        }
        for _ in 0..<Self.readAttempts {
            if let ids = try attempt() { return ids }
        }
        // Saves keep finishing: read once more while none can (changes wait for it).
        return try changeLock.withLock { _ throws(ObjectGraphError) -> [ObjectID] in try attempt() ?? [] }
    }

    /// `ids` (sorted by key) without an ID that follows itself.
    static func withoutRepeats(_ ids: [ObjectID]) -> [ObjectID] {
        var result: [ObjectID] = []
        result.reserveCapacity(ids.count)
        for id in ids where result.last != id { result.append(id) }
        return result
    }

    /// The objects of `entity`, as faults (fire them with ``prefetch(_:)``).
    public func fetch(_ entity: EntityID, includingSubentities: Bool = false) throws(ObjectGraphError)
        -> [ManagedObject]
    {
        try objectIDs(of: entity, includingSubentities: includingSubentities).map(object(with:))
    }

    /// Whether `id` names an object that exists (in the store or inserted here, and not deleted).
    public func exists(_ id: ObjectID) throws(ObjectGraphError) -> Bool {
        try snapshot(of: id) != nil
    }

    /// Whether `id` was inserted in this context and not saved yet (or its save has not ended).
    public func isInserted(_ id: ObjectID) -> Bool {
        state.withLock { $0.pending[id]?.isUnsaved == true }
    }

    /// The object with primary key `key` among the objects of `entity` and its subentities, or nil.
    /// Costs at most one store request (keys are unique in an inheritance tree), and none for a
    /// key above the tree's highest (``KeyBounds``), learned once with one request.
    public func objectID(forKey key: PrimaryKey, in entity: EntityID) throws(ObjectGraphError) -> ObjectID? {
        let candidates = model.entityAndSubentities(of: entity).map { ObjectID(entity: $0, key: key) }
        let root = model[entity].rootID
        if coordinator.keyBounds.highest(in: root) == nil, !isKnown(candidates) {
            learnHighestKey(in: root)
        }
        let lookup = state.withLock { state -> Lookup<ObjectID?> in
            if let found = candidates.first(where: { state.pending[$0] != nil }) { return .found(found) }
            let live = candidates.filter { state.deleted[$0] == nil }
            if let found = live.first(where: { cache.contains($0) }) { return .found(found) }
            guard !live.isEmpty else { return .found(nil) }
            // Never handed out: no object has it (an insert here raises the bound before it
            // shows, under this lock).
            if let highest = coordinator.keyBounds.highest(in: root), key.rawValue > highest { return .found(nil) }
            // Read ahead as a row fault does: the keys that follow, in the same request; not
            // while changes are pending (a copy into the mount looks up keys that do not exist
            // yet, and each would fetch a batch of nothing).
            let entities = Set(live.map(\.entity))
            var wanted = live
            for next in Self.keys(following: key, count: state.pending.isEmpty ? batchSize - 1 : 0) {
                for entity in entities {
                    let other = ObjectID(entity: entity, key: next)
                    if state.pending[other] == nil && state.deleted[other] == nil && !cache.contains(other) {
                        wanted.append(other)
                    }
                }
            }
            return .fetch(wanted)
        }
        guard case .fetch(let wanted) = lookup else {
            if case .found(let answer) = lookup { return answer }
            return nil
        }
        let snapshots = try fetchSnapshots(wanted)
        return state.withLock { state -> ObjectID? in
            // What changed while the store was asked: an insert or delete of this key here.
            if let found = candidates.first(where: { state.pending[$0] != nil }) { return found }
            return snapshots.first(where: { candidates.contains($0.objectID) && state.deleted[$0.objectID] == nil })?
                .objectID
        }
    }

    /// Reads `ids`' rows without the lock, keeps them in the row cache unless a save or refresh
    /// forgot rows meanwhile (they might predate it), and counts the faults.
    func fetchSnapshots(_ ids: [ObjectID], remembering: Bool = false) throws(ObjectGraphError) -> [Snapshot] {
        let generation = cache.generation
        let fetched = try store.snapshots(for: ids)
        let kept = cache.store(fetched, ifGeneration: generation)
        state.withLock { state in
            state.faultsFired += fetched.count
            if remembering && kept { remember(fetched.map(\.objectID), &state) }
        }
        return fetched
    }

    /// Up to `count` keys after `key`, stopping at Int64's end: a store's keys (and names users
    /// type) may come close to it.
    static func keys(following key: PrimaryKey, count: Int) -> [PrimaryKey] {
        // Keys below 1 are no object's (a store row may still point at one): nothing to read ahead.
        guard count > 0, key.rawValue > 0, key.rawValue < Int64.max else { return [] }
        let available = Int64.max - key.rawValue
        let taken = min(Int64(count), available)
        return (1...taken).map { PrimaryKey(key.rawValue + $0) }
    }

    /// The number of objects of exactly `entity`.
    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        // Counted by the store without the lock, then corrected by this context's inserts and
        // deletes; when a save finished meanwhile, or one in flight inserts or deletes objects
        // of the entity (the store's count may or may not hold them yet), the objects are
        // listed instead, which takes that into account.
        let savesBefore = state.withLock { $0.saves }
        let stored = try store.count(of: entity)
        let counted = state.withLock { state -> Int? in
            guard state.saves == savesBefore, !state.inFlight.keys.contains(where: { $0.entity == entity }) else {
                return nil
            }
            let inserted = state.pending.values.count { $0.isInserted && $0.snapshot.objectID.entity == entity }
            let deleted = state.deleted.keys.count { $0.entity == entity }
            return stored + inserted - deleted
        }
        if let counted { return counted }
        return try objectIDs(of: entity).count
    }

    // MARK: - Faulting

    /// Fires the faults of `ids` in batches: one store request per ``EngineConfiguration/batchSize``
    /// objects not already in memory.
    public func prefetch(_ ids: [ObjectID]) throws(ObjectGraphError) {
        let missing = state.withLock { state in
            ids.filter { state.pending[$0] == nil && state.deleted[$0] == nil && !cache.contains($0) }
        }
        var start = 0
        while start < missing.count {
            let batch = Array(missing[start..<min(start + batchSize, missing.count)])
            let generation = cache.generation
            let snapshots = try store.snapshots(for: batch)
            let kept = cache.store(snapshots, ifGeneration: generation)
            state.withLock { state in
                state.faultsFired += snapshots.count
                if kept { remember(batch, &state) }
            }
            start += batchSize
        }
    }

    /// Fires the to-many faults of `relationship` for `ids` in batches.
    public func prefetch(_ relationship: String, for ids: [ObjectID]) throws(ObjectGraphError) {
        guard let first = ids.first else { return }
        let missing = state.withLock { state in
            ids.filter {
                state.pending[$0]?.toMany[relationship] == nil
                    && cache.toManyDestinations(of: relationship, for: $0) == nil
            }
        }
        var start = 0
        while start < missing.count {
            let batch = Array(missing[start..<min(start + batchSize, missing.count)])
            let generation = cache.generation
            let found = try store.toManyDestinations(of: relationship, in: first.entity, for: batch)
            cache.storeToMany(found, of: relationship, ifGeneration: generation)
            start += batchSize
        }
    }

    /// The snapshot of `id` as this context sees it (pending changes included); nil when the
    /// object does not exist.
    public func snapshot(of id: ObjectID) throws(ObjectGraphError) -> Snapshot? {
        let candidates: [ObjectID]
        switch state.withLock({ snapshotLookup(id, $0) }) {
        case .found(let answer): return answer
        case .fetch(let ids): candidates = ids
        }
        let fetched = try fetchSnapshots(candidates, remembering: candidates.count > 1)
        return state.withLock { state -> Snapshot? in
            // Changed here while the store was asked: the change wins.
            if let pending = state.pending[id] { return pending.snapshot }
            if state.deleted[id] != nil { return nil }
            return fetched.first { $0.objectID == id }
        }
    }

    /// The objects a fault of `id` reads: `id`, and the keys that follow it in its entity that
    /// are not in memory (see ``snapshotLocked(_:_:)``).
    func faultCandidates(_ id: ObjectID, _ state: State) -> [ObjectID] {
        let following = Self.keys(following: id.key, count: state.pending.isEmpty ? batchSize - 1 : 0)
        return [id]
            + following.map { ObjectID(entity: id.entity, key: $0) }
            .filter { state.pending[$0] == nil && state.deleted[$0] == nil && !cache.contains($0) }
    }

    /// What memory says of `id` (its pending change, its deletion, its cached row), or the keys a
    /// fault of it reads.
    private func snapshotLookup(_ id: ObjectID, _ state: State) -> Lookup<Snapshot?> {
        if let pending = state.pending[id] { return .found(pending.snapshot) }
        if state.deleted[id] != nil { return .found(nil) }
        if let cached = cache.snapshot(for: id) { return .found(cached) }
        // Read ahead: a fault that fires alone fires for the batch of keys that follow it too, in
        // the same request, since objects are mostly read in key order (a listing, then a `cat` of
        // every object); a random read pays for a few hundred rows it may not need.
        return .fetch(faultCandidates(id, state))
    }

    /// ``snapshot(of:)`` of an object that must exist.
    func existingSnapshot(_ id: ObjectID) throws(ObjectGraphError) -> Snapshot {
        guard let snapshot = try snapshot(of: id) else { throw missing(id) }
        return snapshot
    }

    private func missing(_ id: ObjectID) -> ObjectGraphError {
        ObjectGraphError(.notFound, "object \(describe(id)) does not exist")
    }

    // MARK: - Reading properties

    /// The value of attribute `name` of `id`; nil when the value is nil.
    public func value(of name: String, for id: ObjectID) throws(ObjectGraphError) -> AttributeValue? {
        _ = try attribute(name, of: id.entity)
        return try existingSnapshot(id).attributes[name]
    }

    /// The value of attribute `name` of `id` as the store holds it (nil for an object inserted here
    /// or a nil value), whatever this context changed since.
    public func storedValue(of name: String, for id: ObjectID) throws(ObjectGraphError) -> AttributeValue? {
        _ = try attribute(name, of: id.entity)
        return try asRead(id)?.attributes[name]
    }

    /// `id` as this context read it (before its pending change, or as deleted), faulting it when
    /// it has no change here; nil when it does not exist.
    func asRead(_ id: ObjectID) throws(ObjectGraphError) -> Snapshot? {
        func held(_ state: State) -> Snapshot?? {
            if let pending = state.pending[id] { return .some(pending.isInserted ? nil : pending.original) }
            if let deleted = state.deleted[id] { return .some(deleted) }
            return .none
        }
        if case .some(let answer) = state.withLock({ held($0) }) { return answer }
        let read = try snapshot(of: id)
        // Changed here while the store was asked: what it was read as is now the change's.
        if case .some(let answer) = state.withLock({ held($0) }) { return answer }
        return read
    }

    /// The destination of to-one relationship `name` of `id`.
    public func destination(of name: String, for id: ObjectID) throws(ObjectGraphError) -> ObjectID? {
        let relationship = try self.relationship(name, of: id.entity)
        guard !relationship.isToMany else {
            throw ObjectGraphError(.unsupported, "\(model[id.entity].name).\(name) is a to-many relationship")
        }
        return try existingSnapshot(id).toOne[name]
    }

    /// The destinations of to-many relationship `name` of `id`, in order for ordered ones.
    ///
    /// Objects deleted in this context are left out at once, as the store leaves them out once
    /// the delete is saved: a relationship whose rule does not update its inverse (No Action)
    /// would otherwise list them until the save.
    public func destinations(of name: String, for id: ObjectID) throws(ObjectGraphError) -> [ObjectID] {
        let relationship = try self.relationship(name, of: id.entity)
        guard relationship.isToMany else {
            throw ObjectGraphError(.unsupported, "\(model[id.entity].name).\(name) is a to-one relationship")
        }
        _ = try existingSnapshot(id)
        let sources: [ObjectID]
        let lookup = state.withLock { state -> Lookup<[ObjectID]> in
            switch toManyLookup(name, id, state) {
            case .found(let answer): .found(Self.withoutDeleted(answer, state))
            case .fetch(let ids): .fetch(ids)
            }
        }
        switch lookup {
        case .found(let answer): return answer
        case .fetch(let ids): sources = ids
        }
        let generation = cache.generation
        let found = try store.toManyDestinations(of: name, in: id.entity, for: sources)
        var lists: [ObjectID: [ObjectID]] = [:]
        for source in sources { lists[source] = found[source] ?? [] }
        cache.storeToMany(lists, of: name, ifGeneration: generation)
        return state.withLock { state -> [ObjectID] in
            if let pending = state.pending[id] {
                if let list = pending.toMany[name] { return Self.withoutDeleted(list, state) }
                if pending.isUnsaved { return [] }
            }
            return Self.withoutDeleted(found[id] ?? [], state)
        }
    }

    private static func withoutDeleted(_ list: [ObjectID], _ state: State) -> [ObjectID] {
        state.deleted.isEmpty ? list : list.filter { state.deleted[$0] == nil }
    }

    /// The objects a to-many fault of `id` reads together: `id`, and the rest of the batch it
    /// was prefetched with; when that batch is forgotten (a listing longer than the batches
    /// remembered), the objects in memory whose keys follow, as a row fault reads ahead.
    func toManySources(_ name: String, _ id: ObjectID, _ state: State) -> [ObjectID] {
        var sources = [id]
        func isPeer(_ peer: ObjectID) -> Bool {
            peer != id && peer.entity == id.entity && state.pending[peer] == nil && state.deleted[peer] == nil
                && cache.toManyDestinations(of: name, for: peer) == nil
        }
        if let batch = state.batchOf[id].flatMap({ state.batches[$0] }) {
            sources += batch.filter(isPeer)
        } else if state.pending.isEmpty {
            sources += Self.keys(following: id.key, count: batchSize - 1).map { ObjectID(entity: id.entity, key: $0) }
                .filter { isPeer($0) && cache.contains($0) }
        }
        return sources
    }

    /// What memory says of to-many `name` of `id` (its pending list, none for an object inserted
    /// here, its cached list), or the objects a fault of it reads: the rest of the batch `id` was
    /// prefetched with too.
    private func toManyLookup(_ name: String, _ id: ObjectID, _ state: State) -> Lookup<[ObjectID]> {
        if let pending = state.pending[id] {
            if let list = pending.toMany[name] { return .found(list) }
            if pending.isUnsaved { return .found([]) }
        }
        if let cached = cache.toManyDestinations(of: name, for: id) { return .found(cached) }
        return .fetch(toManySources(name, id, state))
    }

    /// The contents of to-many `name` of `id` as this context sees them, objects deleted here
    /// included (a change's view: it removes them itself), faulting without the lock.
    func toManyList(_ name: String, _ id: ObjectID) throws(ObjectGraphError) -> [ObjectID] {
        let sources: [ObjectID]
        switch state.withLock({ toManyLookup(name, id, $0) }) {
        case .found(let answer): return answer
        case .fetch(let ids): sources = ids
        }
        let generation = cache.generation
        let found = try store.toManyDestinations(of: name, in: id.entity, for: sources)
        var lists: [ObjectID: [ObjectID]] = [:]
        for source in sources { lists[source] = found[source] ?? [] }
        cache.storeToMany(lists, of: name, ifGeneration: generation)
        return state.withLock { state -> [ObjectID] in
            if let pending = state.pending[id] {
                if let list = pending.toMany[name] { return list }
                if pending.isUnsaved { return [] }
            }
            return found[id] ?? []
        }
    }

    private func remember(_ batch: [ObjectID], _ state: inout State) {
        let number = state.nextBatch
        state.nextBatch += 1
        state.batches[number] = batch
        for id in batch { state.batchOf[id] = number }
        if let old = state.batches.removeValue(forKey: number - Self.rememberedBatches) {
            for id in old where state.batchOf[id] == number - Self.rememberedBatches { state.batchOf[id] = nil }
        }
    }

    /// The version (`Z_OPT`) of `id` as last read or saved.
    public func version(of id: ObjectID) throws(ObjectGraphError) -> Int64 {
        if let version = state.withLock({ $0.pending[id]?.original.version }) { return version }
        return try existingSnapshot(id).version
    }

    /// Figures for statistics: faults fired by this context so far.
    public var faultsFired: Int { state.withLock { $0.faultsFired } }

    // MARK: - Model lookups

    func attribute(_ name: String, of entity: EntityID) throws(ObjectGraphError) -> AttributeDescription {
        guard let attribute = model[entity].attribute(named: name) else {
            throw ObjectGraphError(.notFound, "entity \(model[entity].name) has no attribute \(name)")
        }
        return attribute
    }

    func relationship(_ name: String, of entity: EntityID) throws(ObjectGraphError) -> RelationshipDescription {
        guard let relationship = model[entity].relationship(named: name) else {
            throw ObjectGraphError(.notFound, "entity \(model[entity].name) has no relationship \(name)")
        }
        return relationship
    }

    func describe(_ id: ObjectID) -> String {
        guard id.entity.rawValue >= 1, id.entity.rawValue <= model.entities.count else { return id.description }
        return "\(model[id.entity].name)/\(id.key)"
    }
}
