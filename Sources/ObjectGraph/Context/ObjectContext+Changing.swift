import Foundation

/// Changing objects: values, relationships with their inverses, inserts and deletes by the delete
/// rules. Every change is checked when it is made (type, range, length, optionality, what the
/// store can hold) and joins the change group of every object it touches.
extension ObjectContext {
    // MARK: - Values

    /// Sets attribute `name` of `id`, after checking the value against the attribute (type, range,
    /// length, optionality) and against what the store can hold.
    public func setValue(_ value: AttributeValue?, of name: String, for id: ObjectID) throws(ObjectGraphError) {
        try check(value, of: name, for: id)
        try change { () throws(ObjectGraphError) in try modify(id) { $0.snapshot.attributes[name] = value } }
    }

    /// Checks `value` for attribute `name` of `id` as ``setValue(_:of:for:)`` would, without
    /// setting it.
    public func check(_ value: AttributeValue?, of name: String, for id: ObjectID) throws(ObjectGraphError) {
        let attribute = try attribute(name, of: id.entity)
        try Validator.check(value, for: attribute, in: model[id.entity], object: describe(id))
        if let value {
            try store.check(value, for: attribute, of: id.entity)
        } else {
            try store.checkRemoval(of: attribute, of: id.entity)
        }
        try checkUniqueness(of: id, setting: name, to: value.map(KeyPart.value))
    }

    // MARK: - Relationships

    /// Sets to-one relationship `name` of `id` to `destination`, keeping the inverse consistent.
    public func setDestination(_ destination: ObjectID?, of name: String, for id: ObjectID) throws(ObjectGraphError) {
        let relationship = try self.relationship(name, of: id.entity)
        guard !relationship.isToMany else {
            throw ObjectGraphError(.unsupported, "\(model[id.entity].name).\(name) is a to-many relationship")
        }
        try checkUniqueness(of: id, setting: name, to: destination.map(KeyPart.object))
        try change { () throws(ObjectGraphError) in
            if let destination { try checkDestination(destination, of: relationship) }
            try setToOne(destination, relationship, id)
        }
    }

    /// Replaces the contents of to-many relationship `name` of `id` (in order, for ordered ones),
    /// keeping inverses consistent.
    public func setDestinations(_ destinations: [ObjectID], of name: String, for id: ObjectID) throws(ObjectGraphError)
    {
        let relationship = try self.relationship(name, of: id.entity)
        guard relationship.isToMany else {
            throw ObjectGraphError(.unsupported, "\(model[id.entity].name).\(name) is a to-one relationship")
        }
        var unique: [ObjectID] = []
        var seen: Set<ObjectID> = []
        for d in destinations where seen.insert(d).inserted { unique.append(d) }
        try change { () throws(ObjectGraphError) in
            for d in unique { try checkDestination(d, of: relationship) }
            try setToMany(unique, relationship, id)
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
    public func removeDestination(_ destination: ObjectID, from name: String, of id: ObjectID) throws(ObjectGraphError)
    {
        let list = try destinations(of: name, for: id)
        guard list.contains(destination) else {
            throw ObjectGraphError(
                .notFound, "\(describe(destination)) is not in \(model[id.entity].name).\(name) of \(describe(id))")
        }
        try setDestinations(list.filter { $0 != destination }, of: name, for: id)
    }

    // MARK: - Inserting

    /// Inserts a new object of `entity` with the model's default values. With `key`, the object
    /// keeps that key when no object has it (``ObjectGraphError/Code/exists`` otherwise).
    @discardableResult
    public func insertObject(of entity: EntityID, key: PrimaryKey? = nil) throws(ObjectGraphError) -> ObjectID {
        let description = model[entity]
        try ChangeValidation.checkInsert(of: description)
        return try change { () throws(ObjectGraphError) -> ObjectID in
            let assigned: PrimaryKey
            if let key {
                // Keys are unique per root entity: look the key up under each entity of the
                // hierarchy (a few) rather than scan every pending object (a copy inserts thousands).
                let members = model.entityAndSubentities(of: description.rootID)
                let taken = state.withLock { state in
                    members.contains { member in
                        let id = ObjectID(entity: member, key: key)
                        return state.pending[id] != nil || state.deleted[id] != nil
                    }
                }
                // The store is asked holding only the change lock: a store on a server answers
                // over the network.
                guard !taken, try store.claimKey(key, in: description.rootID) else {
                    throw ObjectGraphError(.exists, "\(description.name) key \(key) is already in use")
                }
                assigned = key
            } else {
                assigned = try store.reserveKeys(in: description.rootID, count: 1)[0]
            }
            let id = ObjectID(entity: entity, key: assigned)
            state.withLock { insertLocked(Self.newSnapshot(id, description), &$0) }
            return id
        }
    }

    /// Inserts `count` objects of `entity` with default values, reserving their keys in one store
    /// request (for bulk loads).
    public func insertObjects(of entity: EntityID, count: Int) throws(ObjectGraphError) -> [ObjectID] {
        let description = model[entity]
        return try changeLock.withLock { _ throws(ObjectGraphError) -> [ObjectID] in
            let keys = try store.reserveKeys(in: description.rootID, count: count)
            return state.withLock { state in
                keys.map { key in
                    let id = ObjectID(entity: entity, key: key)
                    insertLocked(Self.newSnapshot(id, description), &state, touching: false)
                    return id
                }
            }
        }
    }

    /// Inserts an object with a given key and snapshot as is (no defaults), for migration and copies
    /// that must keep identity. Relationships are set separately.
    public func insertObject(_ snapshot: Snapshot) throws(ObjectGraphError) {
        changeLock.withLock { _ in
            state.withLock { state in
                insertLocked(
                    Snapshot(objectID: snapshot.objectID, version: 0, attributes: snapshot.attributes), &state,
                    touching: false)
            }
        }
    }

    /// Bulk inserts (`touching: false`) start a group of their own per object, which the
    /// relationships set later join.
    private func insertLocked(_ snapshot: Snapshot, _ state: inout State, touching: Bool = true) {
        let id = snapshot.objectID
        // Before the object is visible: a lookup of its key must not be answered from a bound
        // below it once it is saved.
        coordinator.keyBounds.raise(id, root: model[id.entity].rootID)
        state.pending[id] = PendingObject(
            snapshot: snapshot, original: Snapshot(objectID: id, version: 0), isInserted: true)
        state.changeCount[id, default: 0] += 1
        if touching { state.touched.append(id) }
    }

    static func newSnapshot(_ id: ObjectID, _ entity: EntityDescription) -> Snapshot {
        var values: PropertyValues<AttributeValue> = [:]
        for attribute in entity.allAttributes {
            if let value = attribute.defaultValue { values[attribute.name] = value }
        }
        return Snapshot(objectID: id, version: 0, attributes: values)
    }

    // MARK: - Deleting

    /// Deletes `id`, applying the delete rules of its relationships: Deny refuses while the
    /// relationship is not empty, Cascade deletes the destinations, Nullify removes the object from
    /// its destinations' inverses, No Action leaves them as they are. Nothing changes when the
    /// delete is refused.
    ///
    /// Returns what was deleted (the object and what its Cascade rules reached), each with the
    /// destinations its relationships held, so a caller can say where each one was shown.
    @discardableResult
    public func delete(_ id: ObjectID) throws(ObjectGraphError) -> [DeletedObject] {
        try change { () throws(ObjectGraphError) -> [DeletedObject] in
            _ = try existingSnapshot(id)
            // Collect the cascade closure first, so that a Deny anywhere refuses the whole delete.
            var closure: [ObjectID] = []
            var seen: Set<ObjectID> = [id]
            var queue = [id]
            while let current = queue.popLast() {
                closure.append(current)
                for relationship in model[current.entity].persistentRelationships
                where relationship.deleteRule == .cascade {
                    for d in try related(relationship, current) where seen.insert(d).inserted {
                        queue.append(d)
                    }
                }
            }
            for current in closure {
                for relationship in model[current.entity].persistentRelationships where relationship.deleteRule == .deny
                {
                    let blocking = try related(relationship, current).filter { !seen.contains($0) }
                    if !blocking.isEmpty {
                        throw ObjectGraphError(
                            .deleteDenied,
                            "cannot delete \(describe(current)): its relationship \(relationship.name) has the "
                                + "Deny rule and still holds \(blocking.map(describe).joined(separator: ", "))",
                            objects: [current])
                    }
                }
            }
            var deleted: [DeletedObject] = []
            for current in closure {
                var held: [String: [ObjectID]] = [:]
                for relationship in model[current.entity].persistentRelationships {
                    let destinations = try related(relationship, current)
                    if !destinations.isEmpty { held[relationship.name] = destinations }
                }
                deleted.append(DeletedObject(objectID: current, relationships: held))
            }
            for current in closure {
                for relationship in model[current.entity].persistentRelationships
                where relationship.deleteRule != .noAction {
                    guard let inverse = model.inverse(of: relationship) else { continue }
                    for d in try related(relationship, current) where !seen.contains(d) {
                        if inverse.isToMany {
                            let list = try toManyList(inverse.name, d).filter { $0 != current }
                            try setToManyPending(inverse.name, list, d)
                        } else {
                            try modify(d) { $0.snapshot.toOne[inverse.name] = nil }
                        }
                    }
                }
            }
            var snapshots: [ObjectID: Snapshot] = [:]
            for current in closure { snapshots[current] = try existingSnapshot(current) }
            state.withLock { state in
                for current in closure {
                    state.touched.append(current)
                    state.changeCount[current, default: 0] += 1
                    if let pending = state.pending.removeValue(forKey: current) {
                        if pending.isInserted { continue }
                        state.deleted[current] = pending.original
                    } else {
                        state.deleted[current] = snapshots[current]
                    }
                }
            }
            return deleted
        }
    }

    // MARK: - Metadata

    /// Sets a store metadata key (nil removes it); written with the next save. Keys storefs
    /// manages (NSStoreType, NSStoreUUID) are refused.
    public func setMetadata(_ value: MetadataValue?, for key: String) throws(ObjectGraphError) {
        guard !StoreMetadata.managedKeys.contains(key) else {
            throw ObjectGraphError(.readOnly, "metadata key \(key) is managed by the store and cannot be changed")
        }
        try changeLock.withLock { _ throws(ObjectGraphError) in
            var metadata = try self.metadata()
            metadata[key] = value
            state.withLock { $0.metadata = metadata }
        }
    }

    /// The store's metadata with this context's unsaved changes.
    public func metadata() throws(ObjectGraphError) -> StoreMetadata {
        if let metadata = state.withLock({ $0.metadata }) { return metadata }
        let stored = try store.metadata()
        // Set here while the store was asked: the change wins.
        return state.withLock { $0.metadata } ?? stored
    }

    // MARK: - Change groups

    /// Runs one change holding ``changeLock``: every object it touches joins one change group.
    /// The change faults what it needs without the state lock (reads never wait for it).
    func change<T: Sendable>(_ body: () throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        try changeLock.withLock { _ throws(ObjectGraphError) -> T in
            state.withLock { $0.touched = [] }
            defer {
                state.withLock { state in
                    unite(state.touched, &state)
                    state.touched = []
                }
            }
            return try body()
        }
    }

    func root(of id: ObjectID, _ state: inout State) -> ObjectID {
        var current = id
        while let parent = state.groupParent[current], parent != current { current = parent }
        // Path halving keeps later walks short.
        var node = id
        while let parent = state.groupParent[node], parent != current {
            state.groupParent[node] = current
            node = parent
        }
        return current
    }

    private func unite(_ ids: [ObjectID], _ state: inout State) {
        guard let first = ids.first else { return }
        if state.groupParent[first] == nil { state.groupParent[first] = first }
        let top = root(of: first, &state)
        for id in ids.dropFirst() {
            if state.groupParent[id] == nil { state.groupParent[id] = id }
            let other = root(of: id, &state)
            if other != top { state.groupParent[other] = top }
        }
    }

    // MARK: - Helpers (called holding changeLock)

    func checkDestination(_ d: ObjectID, of relationship: RelationshipDescription) throws(ObjectGraphError) {
        guard let destinationEntity = model.entityID(named: relationship.destinationEntityName),
            d.entity.rawValue >= 1, d.entity.rawValue <= model.entities.count,
            model.entity(d.entity, isKindOf: destinationEntity)
        else {
            throw ObjectGraphError(
                .validation,
                "\(relationship.name) holds \(relationship.destinationEntityName) objects; \(describe(d)) is not one")
        }
        guard try snapshot(of: d) != nil else {
            throw ObjectGraphError(.notFound, "object \(describe(d)) does not exist")
        }
    }

    /// The destinations of `relationship` of `id` that still exist in this context: an object
    /// deleted already (through a No Action relationship, its inverse may still name it) is
    /// neither deleted again nor in anyone's way.
    func related(_ relationship: RelationshipDescription, _ id: ObjectID) throws(ObjectGraphError) -> [ObjectID] {
        let related =
            relationship.isToMany
            ? try toManyList(relationship.name, id)
            : try existingSnapshot(id).toOne[relationship.name].map { [$0] } ?? []
        return state.withLock { state in
            state.deleted.isEmpty ? related : related.filter { state.deleted[$0] == nil }
        }
    }

    /// Applies `change` to the pending state of `id`, registering it as updated on first change
    /// (its row faulted first, without the state lock).
    func modify(_ id: ObjectID, _ change: (inout PendingObject) -> Void) throws(ObjectGraphError) {
        let read = state.withLock { $0.pending[id] == nil } ? try existingSnapshot(id) : nil
        state.withLock { state in
            if state.pending[id] == nil, let read {
                state.pending[id] = PendingObject(snapshot: read, original: read, isInserted: false)
            }
            guard state.pending[id] != nil else { return }
            change(&state.pending[id]!)
            state.changeCount[id, default: 0] += 1
            state.touched.append(id)
        }
    }

    /// Sets the pending contents of to-many `name` of `id`, remembering the contents as read the
    /// first time.
    func setToManyPending(_ name: String, _ list: [ObjectID], _ id: ObjectID) throws(ObjectGraphError) {
        let before = try toManyList(name, id)
        try modify(id) { pending in
            if pending.toMany[name] == nil && !pending.isInserted { pending.originalToMany[name] = before }
            pending.toMany[name] = list
        }
    }

    /// Objects inserted here that a change links to: they must be saved with it, or the store
    /// would hold a key that points at nothing.
    private func touchInserted(_ ids: [ObjectID]) {
        state.withLock { state in
            for id in ids where state.pending[id]?.isUnsaved == true { state.touched.append(id) }
        }
    }

    func setToOne(_ destination: ObjectID?, _ relationship: RelationshipDescription, _ id: ObjectID)
        throws(ObjectGraphError)
    {
        let old = try existingSnapshot(id).toOne[relationship.name]
        guard old != destination else { return }
        if let inverse = model.inverse(of: relationship) {
            if let old { try unlinkInverse(inverse, of: old, from: id) }
            if let destination { try linkInverse(inverse, of: destination, to: id) }
        }
        try modify(id) { $0.snapshot.toOne[relationship.name] = destination }
        if let destination { touchInserted([destination]) }
    }

    func setToMany(_ list: [ObjectID], _ relationship: RelationshipDescription, _ id: ObjectID)
        throws(ObjectGraphError)
    {
        _ = try existingSnapshot(id)
        let old = try toManyList(relationship.name, id)
        guard old != list else { return }
        if let inverse = model.inverse(of: relationship) {
            let newSet = Set(list)
            let oldSet = Set(old)
            for removed in old where !newSet.contains(removed) {
                try unlinkInverse(inverse, of: removed, from: id)
            }
            for added in list where !oldSet.contains(added) {
                try linkInverse(inverse, of: added, to: id)
            }
        }
        try setToManyPending(relationship.name, list, id)
        touchInserted(list)
    }

    /// Removes `source` from relationship `inverse` of `object` (the other side of a change).
    private func unlinkInverse(_ inverse: RelationshipDescription, of object: ObjectID, from source: ObjectID)
        throws(ObjectGraphError)
    {
        guard try snapshot(of: object) != nil else { return }
        if inverse.isToMany {
            let list = try toManyList(inverse.name, object)
            guard list.contains(source) else { return }
            try setToManyPending(inverse.name, list.filter { $0 != source }, object)
        } else if try existingSnapshot(object).toOne[inverse.name] == source {
            try modify(object) { $0.snapshot.toOne[inverse.name] = nil }
        }
    }

    /// Makes relationship `inverse` of `object` include `source`, taking `object` away from the
    /// object its to-one inverse pointed at before (so both sides of every pair agree).
    private func linkInverse(_ inverse: RelationshipDescription, of object: ObjectID, to source: ObjectID)
        throws(ObjectGraphError)
    {
        if inverse.isToMany {
            let list = try toManyList(inverse.name, object)
            guard !list.contains(source) else { return }
            try setToManyPending(inverse.name, list + [source], object)
        } else {
            let previous = try existingSnapshot(object).toOne[inverse.name]
            guard previous != source else { return }
            if let previous, let forward = model.inverse(of: inverse) {
                // `object` leaves `previous`'s side of the pair.
                if forward.isToMany {
                    let list = try toManyList(forward.name, previous)
                    try setToManyPending(forward.name, list.filter { $0 != object }, previous)
                } else {
                    try modify(previous) { $0.snapshot.toOne[forward.name] = nil }
                }
            }
            try modify(object) { $0.snapshot.toOne[inverse.name] = source }
        }
    }
}

/// An object a delete removed, with the destinations its relationships held then.
public struct DeletedObject: Sendable, Hashable {
    public var objectID: ObjectID
    /// Destinations by relationship name (non-empty ones only).
    public var relationships: [String: [ObjectID]]
}
