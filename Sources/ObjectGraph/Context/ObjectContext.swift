import Foundation
import Synchronization

/// A scratchpad of objects: reads fire faults (in batches where asked), changes collect until
/// ``save()`` writes them to the store as one transaction.
///
/// A context gives one ``ManagedObject`` per record while the caller holds it (uniquing), keeps
/// inverse relationships consistent on every change, applies delete rules, validates values when
/// they are set and again on save, and detects conflicting saves by the version each changed
/// object had when it was read (optimistic locking).
///
/// Threading: safe from any thread. One lock guards the context's state; store requests are made
/// while holding it, so calls block (plain threads only, never a Swift concurrency pool thread).
public final class ObjectContext: Sendable {
    /// An existing or inserted object's pending state: its full new snapshot, the version it was
    /// read at, and the to-many relationships whose contents changed.
    struct PendingObject {
        var snapshot: Snapshot
        var baseVersion: Int64
        var isInserted: Bool
        var toMany: [String: [ObjectID]] = [:]
    }

    struct State {
        var registered: [ObjectID: WeakObject] = [:]
        var pending: [ObjectID: PendingObject] = [:]
        var deleted: [ObjectID: Int64] = [:]
        var metadata: StoreMetadata?
        var faultsFired = 0
        /// The batch each recently prefetched object was fetched in, so that the first to-many
        /// fault of one object fires for the whole batch (the rest of a listing follows).
        var batchOf: [ObjectID: Int] = [:]
        var batches: [Int: [ObjectID]] = [:]
        var nextBatch = 0
    }

    /// Batches remembered for to-many batch faulting: enough for the listings in use at once.
    private static let rememberedBatches = 64

    final class WeakObject {
        weak var object: ManagedObject?
        init(_ object: ManagedObject) { self.object = object }
    }

    public let coordinator: PersistentStoreCoordinator
    private let state = Mutex(State())

    init(coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
    }

    public var model: ManagedObjectModel { coordinator.model }
    private var store: any PersistentStore { coordinator.store }
    private var cache: RowCache { coordinator.rowCache }
    private var batchSize: Int { coordinator.configuration.batchSize }

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
        return try state.withLock { (state) throws(ObjectGraphError) -> [ObjectID] in
            var ids: [ObjectID] = []
            for e in entities { ids += try store.objectIDs(of: e) }
            if !state.deleted.isEmpty { ids.removeAll { state.deleted[$0] != nil } }
            let wanted = Set(entities)
            ids += state.pending.values.filter { $0.isInserted && wanted.contains($0.snapshot.objectID.entity) }
                .map(\.snapshot.objectID)
            return ids.sorted { $0.key < $1.key }
        }
    }

    /// The objects of `entity`, as faults (fire them with ``prefetch(_:)``).
    public func fetch(_ entity: EntityID, includingSubentities: Bool = false) throws(ObjectGraphError)
        -> [ManagedObject]
    {
        try objectIDs(of: entity, includingSubentities: includingSubentities).map(object(with:))
    }

    /// Whether `id` names an object that exists (in the store or inserted here, and not deleted).
    public func exists(_ id: ObjectID) throws(ObjectGraphError) -> Bool {
        try state.withLock { (state) throws(ObjectGraphError) -> Bool in
            if state.deleted[id] != nil { return false }
            return try snapshotLocked(id, &state) != nil
        }
    }

    /// The object with primary key `key` among the objects of `entity` and its subentities, or nil.
    /// Costs at most one store request (keys are unique in an inheritance tree).
    public func objectID(forKey key: PrimaryKey, in entity: EntityID) throws(ObjectGraphError) -> ObjectID? {
        let candidates = model.entityAndSubentities(of: entity).map { ObjectID(entity: $0, key: key) }
        return try state.withLock { (state) throws(ObjectGraphError) -> ObjectID? in
            if let found = candidates.first(where: { state.pending[$0] != nil }) { return found }
            let live = candidates.filter { state.deleted[$0] == nil }
            if let found = live.first(where: { cache.contains($0) }) { return found }
            guard !live.isEmpty else { return nil }
            // Read ahead as snapshotLocked does: the keys that follow, in the same request; not
            // while changes are pending (a copy into the mount looks up keys that do not exist
            // yet, and each would fetch a batch of nothing).
            let entities = Set(live.map(\.entity))
            var wanted = live
            let readAhead = state.pending.isEmpty ? Int64(batchSize) : 1
            for next in Self.keys(from: key.rawValue, count: readAhead).dropFirst() {
                for entity in entities {
                    let other = ObjectID(entity: entity, key: PrimaryKey(next))
                    if state.pending[other] == nil && state.deleted[other] == nil && !cache.contains(other) { wanted.append(other) }
                }
            }
            let snapshots = try store.snapshots(for: wanted)
            state.faultsFired += snapshots.count
            cache.store(snapshots)
            return snapshots.first(where: { live.contains($0.objectID) })?.objectID
        }
    }

    /// The number of objects of exactly `entity`.
    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        try state.withLock { (state) throws(ObjectGraphError) -> Int in
            let stored = try store.count(of: entity)
            let inserted = state.pending.values.count { $0.isInserted && $0.snapshot.objectID.entity == entity }
            let deleted = state.deleted.keys.count { $0.entity == entity }
            return stored + inserted - deleted
        }
    }

    // MARK: - Faulting

    /// Fires the faults of `ids` in batches: one store request per ``EngineConfiguration/batchSize``
    /// objects not already in memory.
    public func prefetch(_ ids: [ObjectID]) throws(ObjectGraphError) {
        try state.withLock { (state) throws(ObjectGraphError) in
            let missing = ids.filter { state.pending[$0] == nil && state.deleted[$0] == nil && !cache.contains($0) }
            var start = 0
            while start < missing.count {
                let batch = Array(missing[start..<min(start + batchSize, missing.count)])
                let snapshots = try store.snapshots(for: batch)
                cache.store(snapshots)
                state.faultsFired += snapshots.count
                remember(batch, &state)
                start += batchSize
            }
        }
    }

    /// Fires the to-many faults of `relationship` for `ids` in batches.
    public func prefetch(_ relationship: String, for ids: [ObjectID]) throws(ObjectGraphError) {
        guard let first = ids.first else { return }
        try state.withLock { (state) throws(ObjectGraphError) in
            let missing = ids.filter {
                state.pending[$0]?.toMany[relationship] == nil
                    && cache.toManyDestinations(of: relationship, for: $0) == nil
            }
            var start = 0
            while start < missing.count {
                let batch = Array(missing[start..<min(start + batchSize, missing.count)])
                let found = try store.toManyDestinations(of: relationship, in: first.entity, for: batch)
                for (source, destinations) in found {
                    cache.storeToMany(destinations, of: relationship, for: source)
                }
                start += batchSize
            }
        }
    }

    /// The snapshot of `id` as this context sees it (pending changes included); nil when the
    /// object does not exist.
    public func snapshot(of id: ObjectID) throws(ObjectGraphError) -> Snapshot? {
        try state.withLock { (state) throws(ObjectGraphError) -> Snapshot? in
            if state.deleted[id] != nil { return nil }
            return try snapshotLocked(id, &state)
        }
    }

    /// `count` keys from `first` on (at least `first` itself), fewer near Int64.max: keys come
    /// from names and store rows (a to-one column holding 9223372036854775807), so read-ahead
    /// arithmetic must not overflow.
    private static func keys(from first: Int64, count: Int64) -> ClosedRange<Int64> {
        let (last, overflow) = first.addingReportingOverflow(max(count, 1) - 1)
        return first...(overflow ? Int64.max : last)
    }

    private func snapshotLocked(_ id: ObjectID, _ state: inout State) throws(ObjectGraphError) -> Snapshot? {
        if let pending = state.pending[id] { return pending.snapshot }
        if state.deleted[id] != nil { return nil }
        if let cached = cache.snapshot(for: id) { return cached }
        // Read ahead: a fault that fires alone fires for the batch of keys that follow it too, in
        // the same store request, since objects are mostly read in key order (a listing, then a
        // `cat` of every object); a random read pays for a few hundred rows it may not need.
        let start = id.key.rawValue
        let readAhead = state.pending.isEmpty ? Int64(batchSize) : 1
        let candidates = Self.keys(from: start, count: readAhead).map { ObjectID(entity: id.entity, key: PrimaryKey($0)) }
            .filter { $0 == id || (state.pending[$0] == nil && state.deleted[$0] == nil && !cache.contains($0)) }
        let fetched = try store.snapshots(for: candidates)
        state.faultsFired += fetched.count
        cache.store(fetched)
        // The objects read ahead form a batch as a prefetch does, so their to-many faults fire
        // together too.
        if fetched.count > 1 { remember(fetched.map(\.objectID), &state) }
        return fetched.first { $0.objectID == id }
    }

    private func existingSnapshot(_ id: ObjectID, _ state: inout State) throws(ObjectGraphError) -> Snapshot {
        guard let snapshot = try snapshotLocked(id, &state) else {
            throw ObjectGraphError(.notFound, "object \(describe(id)) does not exist")
        }
        return snapshot
    }

    // MARK: - Reading properties

    /// The value of attribute `name` of `id`; nil when the value is nil.
    public func value(of name: String, for id: ObjectID) throws(ObjectGraphError) -> AttributeValue? {
        _ = try attribute(name, of: id.entity)
        return try state.withLock { (state) throws(ObjectGraphError) in
            try existingSnapshot(id, &state).attributes[name]
        }
    }

    /// The destination of to-one relationship `name` of `id`.
    public func destination(of name: String, for id: ObjectID) throws(ObjectGraphError) -> ObjectID? {
        let relationship = try self.relationship(name, of: id.entity)
        guard !relationship.isToMany else {
            throw ObjectGraphError(.unsupported, "\(model[id.entity].name).\(name) is a to-many relationship")
        }
        return try state.withLock { (state) throws(ObjectGraphError) in
            try existingSnapshot(id, &state).toOne[name]
        }
    }

    /// The destinations of to-many relationship `name` of `id`, in order for ordered ones.
    public func destinations(of name: String, for id: ObjectID) throws(ObjectGraphError) -> [ObjectID] {
        let relationship = try self.relationship(name, of: id.entity)
        guard relationship.isToMany else {
            throw ObjectGraphError(.unsupported, "\(model[id.entity].name).\(name) is a to-one relationship")
        }
        return try state.withLock { (state) throws(ObjectGraphError) in
            _ = try existingSnapshot(id, &state)
            return try toManyLocked(name, id, &state)
        }
    }

    private func toManyLocked(_ name: String, _ id: ObjectID, _ state: inout State) throws(ObjectGraphError)
        -> [ObjectID]
    {
        if let pending = state.pending[id] {
            if let list = pending.toMany[name] { return list }
            if pending.isInserted { return [] }
        }
        if let cached = cache.toManyDestinations(of: name, for: id) { return cached }
        // Fire the same fault for the rest of the batch this object was prefetched with; when that
        // batch is forgotten (a listing longer than the batches remembered), for the objects in
        // memory whose keys follow, as a row fault reads ahead.
        var sources = [id]
        func isPeer(_ peer: ObjectID) -> Bool {
            peer != id && peer.entity == id.entity && state.pending[peer] == nil && state.deleted[peer] == nil
                && cache.toManyDestinations(of: name, for: peer) == nil
        }
        if let batch = state.batchOf[id].flatMap({ state.batches[$0] }) {
            sources += batch.filter(isPeer)
        } else if state.pending.isEmpty {
            sources += Self.keys(from: id.key.rawValue, count: Int64(batchSize)).dropFirst()
                .map { ObjectID(entity: id.entity, key: PrimaryKey($0)) }
                .filter { isPeer($0) && cache.contains($0) }
        }
        let found = try store.toManyDestinations(of: name, in: id.entity, for: sources)
        for source in sources { cache.storeToMany(found[source] ?? [], of: name, for: source) }
        return found[id] ?? []
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
        try state.withLock { (state) throws(ObjectGraphError) in
            if let pending = state.pending[id] { return pending.baseVersion }
            return try existingSnapshot(id, &state).version
        }
    }

    // MARK: - Changing

    /// Sets attribute `name` of `id`, after checking the value against the attribute (type, range,
    /// length, optionality).
    public func setValue(_ value: AttributeValue?, of name: String, for id: ObjectID) throws(ObjectGraphError) {
        let attribute = try attribute(name, of: id.entity)
        try Validator.check(value, for: attribute, in: model[id.entity])
        try state.withLock { (state) throws(ObjectGraphError) in
            try modify(id, &state) { $0.snapshot.attributes[name] = value }
        }
    }

    /// Sets to-one relationship `name` of `id` to `destination`, keeping the inverse consistent.
    public func setDestination(_ destination: ObjectID?, of name: String, for id: ObjectID) throws(ObjectGraphError) {
        let relationship = try self.relationship(name, of: id.entity)
        guard !relationship.isToMany else {
            throw ObjectGraphError(.unsupported, "\(model[id.entity].name).\(name) is a to-many relationship")
        }
        try state.withLock { (state) throws(ObjectGraphError) in
            if let destination { try checkDestination(destination, of: relationship, &state) }
            try setToOneLocked(destination, relationship, id, &state)
        }
    }

    /// Replaces the contents of to-many relationship `name` of `id` (in order, for ordered ones),
    /// keeping inverses consistent.
    public func setDestinations(_ destinations: [ObjectID], of name: String, for id: ObjectID) throws(ObjectGraphError) {
        let relationship = try self.relationship(name, of: id.entity)
        guard relationship.isToMany else {
            throw ObjectGraphError(.unsupported, "\(model[id.entity].name).\(name) is a to-one relationship")
        }
        var unique: [ObjectID] = []
        var seen: Set<ObjectID> = []
        for d in destinations where seen.insert(d).inserted { unique.append(d) }
        try state.withLock { (state) throws(ObjectGraphError) in
            for d in unique { try checkDestination(d, of: relationship, &state) }
            try setToManyLocked(unique, relationship, id, &state)
        }
    }

    /// Adds `destination` to to-many relationship `name` of `id` (at the end, or at `index` for an
    /// ordered relationship).
    public func addDestination(_ destination: ObjectID, to name: String, of id: ObjectID, at index: Int? = nil)
        throws(ObjectGraphError)
    {
        var list = try destinations(of: name, for: id).filter { $0 != destination }
        list.insert(destination, at: min(max(index ?? list.count, 0), list.count))
        try setDestinations(list, of: name, for: id)
    }

    /// Removes `destination` from to-many relationship `name` of `id`.
    public func removeDestination(_ destination: ObjectID, from name: String, of id: ObjectID) throws(ObjectGraphError) {
        let list = try destinations(of: name, for: id)
        guard list.contains(destination) else {
            throw ObjectGraphError(.notFound, "\(describe(destination)) is not in \(model[id.entity].name).\(name) of \(describe(id))")
        }
        try setDestinations(list.filter { $0 != destination }, of: name, for: id)
    }

    /// Inserts a new object of `entity` with the model's default values. With `key`, the object
    /// keeps that key when no object has it (``ObjectGraphError/Code/exists`` otherwise).
    @discardableResult
    public func insertObject(of entity: EntityID, key: PrimaryKey? = nil) throws(ObjectGraphError) -> ObjectID {
        let description = model[entity]
        guard !description.isAbstract else {
            throw ObjectGraphError(.validation, "entity \(description.name) is abstract: insert an object of one of its subentities")
        }
        return try state.withLock { (state) throws(ObjectGraphError) -> ObjectID in
            let assigned: PrimaryKey
            if let key {
                let taken = state.pending.keys.contains {
                    $0.key == key && model[$0.entity].rootID == description.rootID
                }
                guard !taken, try store.claimKey(key, in: description.rootID) else {
                    throw ObjectGraphError(.exists, "\(description.name) key \(key) is already in use")
                }
                assigned = key
            } else {
                assigned = try store.reserveKeys(in: description.rootID, count: 1)[0]
            }
            let id = ObjectID(entity: entity, key: assigned)
            state.pending[id] = PendingObject(
                snapshot: Self.newSnapshot(id, description), baseVersion: 0, isInserted: true)
            return id
        }
    }

    /// Inserts `count` objects of `entity` with default values, reserving their keys in one store
    /// request (for bulk loads).
    public func insertObjects(of entity: EntityID, count: Int) throws(ObjectGraphError) -> [ObjectID] {
        let description = model[entity]
        return try state.withLock { (state) throws(ObjectGraphError) -> [ObjectID] in
            let keys = try store.reserveKeys(in: description.rootID, count: count)
            return keys.map { key in
                let id = ObjectID(entity: entity, key: key)
                state.pending[id] = PendingObject(
                    snapshot: Self.newSnapshot(id, description), baseVersion: 0, isInserted: true)
                return id
            }
        }
    }

    /// Inserts an object with a given key and snapshot as is (no defaults), for migration and copies
    /// that must keep identity. Relationships are set separately.
    public func insertObject(_ snapshot: Snapshot) throws(ObjectGraphError) {
        try state.withLock { (state) throws(ObjectGraphError) in
            state.pending[snapshot.objectID] = PendingObject(
                snapshot: Snapshot(objectID: snapshot.objectID, version: 0, attributes: snapshot.attributes),
                baseVersion: 0, isInserted: true)
        }
    }

    private static func newSnapshot(_ id: ObjectID, _ entity: EntityDescription) -> Snapshot {
        var values: [String: AttributeValue] = [:]
        for attribute in entity.allAttributes {
            if let value = attribute.defaultValue { values[attribute.name] = value }
        }
        return Snapshot(objectID: id, version: 0, attributes: values)
    }

    /// Deletes `id`, applying the delete rules of its relationships: Deny refuses while the
    /// relationship is not empty, Cascade deletes the destinations, Nullify removes the object from
    /// its destinations' inverses, No Action leaves them as they are. Nothing changes when the
    /// delete is refused.
    public func delete(_ id: ObjectID) throws(ObjectGraphError) {
        try state.withLock { (state) throws(ObjectGraphError) in
            _ = try existingSnapshot(id, &state)
            // Collect the cascade closure first, so that a Deny anywhere refuses the whole delete.
            var closure: [ObjectID] = []
            var seen: Set<ObjectID> = [id]
            var queue = [id]
            while let current = queue.popLast() {
                closure.append(current)
                for relationship in model[current.entity].persistentRelationships
                where relationship.deleteRule == .cascade {
                    for d in try relatedLocked(relationship, current, &state) where seen.insert(d).inserted {
                        queue.append(d)
                    }
                }
            }
            for current in closure {
                for relationship in model[current.entity].persistentRelationships where relationship.deleteRule == .deny {
                    let blocking = try relatedLocked(relationship, current, &state).filter { !seen.contains($0) }
                    if !blocking.isEmpty {
                        throw ObjectGraphError(
                            .deleteDenied,
                            "cannot delete \(describe(current)): its relationship \(relationship.name) has the "
                                + "Deny rule and still holds \(blocking.map(describe).joined(separator: ", "))")
                    }
                }
            }
            for current in closure {
                for relationship in model[current.entity].persistentRelationships
                where relationship.deleteRule != .noAction {
                    guard let inverse = model.inverse(of: relationship) else { continue }
                    for d in try relatedLocked(relationship, current, &state) where !seen.contains(d) {
                        if inverse.isToMany {
                            let list = try toManyLocked(inverse.name, d, &state).filter { $0 != current }
                            try modify(d, &state) { $0.toMany[inverse.name] = list }
                        } else {
                            try modify(d, &state) { $0.snapshot.toOne[inverse.name] = nil }
                        }
                    }
                }
            }
            for current in closure {
                if let pending = state.pending.removeValue(forKey: current), pending.isInserted { continue }
                state.deleted[current] = try existingSnapshot(current, &state).version
            }
        }
    }

    /// Sets a store metadata key (nil removes it); written with the next save. Keys storefs
    /// manages (NSStoreType, NSStoreUUID) are refused.
    public func setMetadata(_ value: MetadataValue?, for key: String) throws(ObjectGraphError) {
        guard !StoreMetadata.managedKeys.contains(key) else {
            throw ObjectGraphError(.readOnly, "metadata key \(key) is managed by the store and cannot be changed")
        }
        try state.withLock { (state) throws(ObjectGraphError) in
            var metadata = try currentMetadata(state)
            metadata[key] = value
            state.metadata = metadata
        }
    }

    /// The store's metadata with this context's unsaved changes.
    public func metadata() throws(ObjectGraphError) -> StoreMetadata {
        try state.withLock { (state) throws(ObjectGraphError) in try currentMetadata(state) }
    }

    private func currentMetadata(_ state: State) throws(ObjectGraphError) -> StoreMetadata {
        if let metadata = state.metadata { return metadata }
        return try store.metadata()
    }

    // MARK: - Saving

    /// Whether there is anything to save.
    public var hasChanges: Bool {
        state.withLock { !$0.pending.isEmpty || !$0.deleted.isEmpty || $0.metadata != nil }
    }

    /// Validates every changed object and writes all changes as one transaction. On failure
    /// nothing is written and the changes stay pending (fix them, or ``rollback()``).
    ///
    /// - Throws: ``ObjectGraphError/Code/validation`` naming the object and property;
    ///   ``ObjectGraphError/Code/conflict`` when another context or process saved one of the
    ///   changed objects since this context read it.
    public func save() throws(ObjectGraphError) {
        try state.withLock { (state) throws(ObjectGraphError) in
            guard !state.pending.isEmpty || !state.deleted.isEmpty || state.metadata != nil else { return }
            var request = SaveRequest()
            for pending in state.pending.values.sorted(by: { $0.snapshot.objectID < $1.snapshot.objectID }) {
                try validateForSave(pending, &state)
                if pending.isInserted {
                    request.inserted.append(pending.snapshot)
                } else {
                    var snapshot = pending.snapshot
                    snapshot.version = pending.baseVersion
                    request.updated.append(snapshot)
                }
                for (name, list) in pending.toMany.sorted(by: { $0.key < $1.key }) {
                    request.toManyChanges.append(.init(source: pending.snapshot.objectID, relationship: name, destinations: list))
                }
            }
            request.deleted = state.deleted.sorted { $0.key < $1.key }.map {
                SaveRequest.Deletion(objectID: $0.key, expectedVersion: $0.value)
            }
            request.metadata = state.metadata
            try store.save(request)
            cache.remove(state.deleted.keys)
            for pending in state.pending.values {
                var snapshot = pending.snapshot
                snapshot.version = pending.isInserted ? 1 : pending.baseVersion + 1
                cache.store([snapshot])
                for (name, list) in pending.toMany { cache.storeToMany(list, of: name, for: snapshot.objectID) }
            }
            state.pending = [:]
            state.deleted = [:]
            state.metadata = nil
        }
    }

    /// Discards every unsaved change.
    public func rollback() {
        state.withLock { state in
            state.pending = [:]
            state.deleted = [:]
            state.metadata = nil
        }
    }

    /// Forgets what is cached about `ids` so the next read fetches them again (Core Data's
    /// refreshObject with mergeChanges false). Pending changes of those objects are discarded.
    public func refresh(_ ids: [ObjectID]) {
        state.withLock { state in
            for id in ids { state.pending[id] = nil }
        }
        cache.remove(ids)
    }

    /// Figures for statistics: faults fired by this context so far.
    public var faultsFired: Int { state.withLock { $0.faultsFired } }

    // MARK: - Private

    private func attribute(_ name: String, of entity: EntityID) throws(ObjectGraphError) -> AttributeDescription {
        guard let attribute = model[entity].attribute(named: name) else {
            throw ObjectGraphError(.notFound, "entity \(model[entity].name) has no attribute \(name)")
        }
        return attribute
    }

    private func relationship(_ name: String, of entity: EntityID) throws(ObjectGraphError) -> RelationshipDescription {
        guard let relationship = model[entity].relationship(named: name) else {
            throw ObjectGraphError(.notFound, "entity \(model[entity].name) has no relationship \(name)")
        }
        return relationship
    }

    func describe(_ id: ObjectID) -> String { "\(model[id.entity].name)/\(id.key)" }

    private func checkDestination(_ d: ObjectID, of relationship: RelationshipDescription, _ state: inout State)
        throws(ObjectGraphError)
    {
        guard let destinationEntity = model.entityID(named: relationship.destinationEntityName),
            d.entity.rawValue >= 1, d.entity.rawValue <= model.entities.count,
            model.entity(d.entity, isKindOf: destinationEntity)
        else {
            throw ObjectGraphError(
                .validation, "\(relationship.name) holds \(relationship.destinationEntityName) objects; "
                    + "\(d.entity.rawValue >= 1 && d.entity.rawValue <= model.entities.count ? describe(d) : d.description) is not one")
        }
        guard state.deleted[d] == nil, try snapshotLocked(d, &state) != nil else {
            throw ObjectGraphError(.notFound, "object \(describe(d)) does not exist")
        }
    }

    /// The objects `relationship` of `id` reaches (to-one or to-many).
    private func relatedLocked(_ relationship: RelationshipDescription, _ id: ObjectID, _ state: inout State)
        throws(ObjectGraphError) -> [ObjectID]
    {
        if relationship.isToMany { return try toManyLocked(relationship.name, id, &state) }
        return try existingSnapshot(id, &state).toOne[relationship.name].map { [$0] } ?? []
    }

    /// Applies `change` to the pending state of `id`, registering it as updated on first change.
    private func modify(_ id: ObjectID, _ state: inout State, _ change: (inout PendingObject) -> Void)
        throws(ObjectGraphError)
    {
        if state.pending[id] == nil {
            let snapshot = try existingSnapshot(id, &state)
            state.pending[id] = PendingObject(snapshot: snapshot, baseVersion: snapshot.version, isInserted: false)
        }
        change(&state.pending[id]!)
    }

    private func setToOneLocked(
        _ destination: ObjectID?, _ relationship: RelationshipDescription, _ id: ObjectID, _ state: inout State
    ) throws(ObjectGraphError) {
        let old = try existingSnapshot(id, &state).toOne[relationship.name]
        guard old != destination else { return }
        if let inverse = model.inverse(of: relationship) {
            if let old { try unlinkInverse(inverse, of: old, from: id, &state) }
            if let destination { try linkInverse(inverse, of: destination, to: id, &state) }
        }
        try modify(id, &state) { $0.snapshot.toOne[relationship.name] = destination }
    }

    private func setToManyLocked(
        _ list: [ObjectID], _ relationship: RelationshipDescription, _ id: ObjectID, _ state: inout State
    ) throws(ObjectGraphError) {
        _ = try existingSnapshot(id, &state)
        let old = try toManyLocked(relationship.name, id, &state)
        guard old != list else { return }
        if let inverse = model.inverse(of: relationship) {
            let newSet = Set(list)
            let oldSet = Set(old)
            for removed in old where !newSet.contains(removed) {
                try unlinkInverse(inverse, of: removed, from: id, &state)
            }
            for added in list where !oldSet.contains(added) {
                try linkInverse(inverse, of: added, to: id, &state)
            }
        }
        try modify(id, &state) { $0.toMany[relationship.name] = list }
    }

    /// Removes `source` from relationship `inverse` of `object` (the other side of a change).
    private func unlinkInverse(
        _ inverse: RelationshipDescription, of object: ObjectID, from source: ObjectID, _ state: inout State
    ) throws(ObjectGraphError) {
        guard state.deleted[object] == nil, try snapshotLocked(object, &state) != nil else { return }
        if inverse.isToMany {
            let list = try toManyLocked(inverse.name, object, &state)
            guard list.contains(source) else { return }
            try modify(object, &state) { $0.toMany[inverse.name] = list.filter { $0 != source } }
        } else if try existingSnapshot(object, &state).toOne[inverse.name] == source {
            try modify(object, &state) { $0.snapshot.toOne[inverse.name] = nil }
        }
    }

    /// Makes relationship `inverse` of `object` include `source`, taking `object` away from the
    /// object its to-one inverse pointed at before (so both sides of every pair agree).
    private func linkInverse(
        _ inverse: RelationshipDescription, of object: ObjectID, to source: ObjectID, _ state: inout State
    ) throws(ObjectGraphError) {
        if inverse.isToMany {
            let list = try toManyLocked(inverse.name, object, &state)
            guard !list.contains(source) else { return }
            try modify(object, &state) { $0.toMany[inverse.name] = list + [source] }
        } else {
            let previous = try existingSnapshot(object, &state).toOne[inverse.name]
            guard previous != source else { return }
            if let previous, let forward = model.inverse(of: inverse) {
                // `object` leaves `previous`'s side of the pair.
                if forward.isToMany {
                    let list = try toManyLocked(forward.name, previous, &state)
                    try modify(previous, &state) { $0.toMany[forward.name] = list.filter { $0 != object } }
                } else {
                    try modify(previous, &state) { $0.snapshot.toOne[forward.name] = nil }
                }
            }
            try modify(object, &state) { $0.snapshot.toOne[inverse.name] = source }
        }
    }

    private func validateForSave(_ pending: PendingObject, _ state: inout State) throws(ObjectGraphError) {
        let id = pending.snapshot.objectID
        let entity = model[id.entity]
        for attribute in entity.persistentAttributes {
            try Validator.check(pending.snapshot.attributes[attribute.name], for: attribute, in: entity, object: describe(id))
        }
        for relationship in entity.persistentRelationships {
            let count: Int
            if relationship.isToMany {
                count = try toManyLocked(relationship.name, id, &state).count
            } else {
                count = pending.snapshot.toOne[relationship.name] == nil ? 0 : 1
            }
            try Validator.check(count: count, for: relationship, object: describe(id))
        }
    }
}
