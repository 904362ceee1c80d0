import GRDB
import ObjectGraph

/// What one save wrote, object by object, inside its transaction: what Core Data's persistent
/// history records about it (``PersistentHistory``), and which rows the store changed beyond the
/// request to keep relationships consistent (reported back as ``SaveEffects``).
struct WrittenChanges {
    /// Inserted objects, in the order they were written.
    var inserted: [ObjectID] = []
    /// Updated objects and the properties their update changed (attributes, to-one and to-many
    /// relationships, by name).
    var updated: [ObjectID: Set<String>] = [:]
    /// Deleted objects, in order, with the values their entity preserves in history (read before
    /// the row went, in tombstone order).
    var deleted: [(id: ObjectID, tombstone: [DatabaseValue])] = []
    /// Objects whose rows the store changed on its own (a key cleared so no relationship points
    /// two ways or at a deleted object).
    var repaired: Set<ObjectID> = []

    private var insertedSet: Set<ObjectID> = []

    mutating func insert(_ id: ObjectID) {
        if insertedSet.insert(id).inserted { inserted.append(id) }
    }

    /// Records that `names` of `id` changed; an object inserted by this save records nothing
    /// more (its insert covers it).
    mutating func update(_ id: ObjectID, _ names: some Sequence<String>) {
        guard !insertedSet.contains(id) else { return }
        updated[id, default: []].formUnion(names)
    }

    var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}
