import ObjectGraph

/// What one save wrote, object by object, inside its transaction (tombstone values in the
/// store's own representation, `Value`): what Core Data's persistent
/// history records about it (``PersistentHistory``), and which rows the store changed beyond the
/// request to keep relationships consistent (reported back as ``SaveEffects``).
package struct WrittenChanges<Value> {
    /// Inserted objects, in the order they were written.
    package var inserted: [ObjectID] = []
    /// Updated objects and the properties their update changed (attributes, to-one and to-many
    /// relationships, by name).
    package var updated: [ObjectID: Set<String>] = [:]
    /// Deleted objects, in order, with the values their entity preserves in history (read before
    /// the row went, in tombstone order).
    package var deleted: [(id: ObjectID, tombstone: [Value])] = []
    /// Objects whose rows the store changed on its own (a key cleared so no relationship points
    /// two ways or at a deleted object).
    package var repaired: Set<ObjectID> = []
    /// Updated objects whose rows the save found exactly as the request read them
    /// (``SaveEffects/rowsAsRead``).
    package var rowsAsRead: Set<ObjectID> = []

    private var insertedSet: Set<ObjectID> = []

    package init() {}

    package mutating func insert(_ id: ObjectID) {
        if insertedSet.insert(id).inserted { inserted.append(id) }
    }

    /// Records that `names` of `id` changed; an object inserted by this save records nothing
    /// more (its insert covers it).
    package mutating func update(_ id: ObjectID, _ names: some Sequence<String>) {
        guard !insertedSet.contains(id) else { return }
        updated[id, default: []].formUnion(names)
    }

    package var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}
