/// Everything one save writes, applied by a store as one transaction: all of it or none of it.
///
/// A save writes only what changed, and never over what another process changed since it was
/// read: an update carries the object as it was read (``Update/original``) beside its new state,
/// the store writes the properties that differ and refuses the whole save with
/// ``ObjectGraphError/Code/conflict`` (naming the object) when one of those properties no longer
/// holds the value that was read, or the object is gone. Properties this save does not change
/// are left as the store has them, whatever another process did to them. Deletions carry the
/// version (`Z_OPT`) that was read and conflict when it moved. An inserted object is written
/// with version 1; an object whose update writes anything gets version + 1.
public struct SaveRequest: Sendable {
    /// A changed object: its complete new state and its state as read.
    public struct Update: Sendable, Hashable {
        /// The new state; `version` is the version that was read.
        public var snapshot: Snapshot
        /// The object as it was read.
        public var original: Snapshot

        public init(snapshot: Snapshot, original: Snapshot) {
            self.snapshot = snapshot
            self.original = original
        }

        public var objectID: ObjectID { snapshot.objectID }

        /// Attributes whose new value differs from the value read, by name.
        public var changedAttributes: [String] {
            Set(snapshot.attributes.keys).union(original.attributes.keys)
                .filter { snapshot.attributes[$0] != original.attributes[$0] }.sorted()
        }

        /// To-one relationships whose new destination differs from the one read, by name.
        public var changedToOne: [String] {
            Set(snapshot.toOne.keys).union(original.toOne.keys).filter { snapshot.toOne[$0] != original.toOne[$0] }
                .sorted()
        }

        /// Whether the update writes nothing (every property is as it was read).
        public var isEmpty: Bool { snapshot.attributes == original.attributes && snapshot.toOne == original.toOne }
    }

    /// A to-many relationship's new contents for one source object, in order for ordered
    /// relationships, with the contents as read: a store adds and removes the difference, so
    /// destinations another process added or removed meanwhile stay as it left them.
    public struct ToManyChange: Sendable, Hashable {
        public var source: ObjectID
        public var relationship: String
        public var destinations: [ObjectID]
        /// The contents as read (empty for an inserted source).
        public var original: [ObjectID]

        public init(source: ObjectID, relationship: String, destinations: [ObjectID], original: [ObjectID] = []) {
            self.source = source
            self.relationship = relationship
            self.destinations = destinations
            self.original = original
        }

        /// Destinations this change adds, in their new order.
        public var added: [ObjectID] {
            let before = Set(original)
            return destinations.filter { !before.contains($0) }
        }

        /// Destinations this change removes.
        public var removed: [ObjectID] {
            let after = Set(destinations)
            return original.filter { !after.contains($0) }
        }

        /// Applies the change to contents a store holds now: what was removed goes, what was added
        /// comes; when nobody else changed the contents, the result is exactly ``destinations``.
        public func applied(to current: [ObjectID]) -> [ObjectID] {
            if current == original { return destinations }
            let gone = Set(removed)
            var result = current.filter { !gone.contains($0) }
            var present = Set(result)
            for destination in added where present.insert(destination).inserted { result.append(destination) }
            return result
        }
    }

    /// An object to delete and the version its context read.
    public struct Deletion: Sendable, Hashable {
        public var objectID: ObjectID
        public var expectedVersion: Int64

        public init(objectID: ObjectID, expectedVersion: Int64) {
            self.objectID = objectID
            self.expectedVersion = expectedVersion
        }
    }

    public var inserted: [Snapshot] = []
    public var updated: [Update] = []
    public var deleted: [Deletion] = []
    /// To-many changes of inserted and updated objects. Both sides of a many-to-many change are
    /// listed; they agree, because the context keeps inverses consistent.
    public var toManyChanges: [ToManyChange] = []
    /// The metadata to write with this save, when it changed.
    public var metadata: StoreMetadata?
    /// Per root entity, a key counter (Core Data's Z_MAX) to raise the store's to, when it is
    /// lower: a migration carries the old store's counter, so keys of objects deleted before it
    /// are not handed out again. Stores that keep no counter ignore it.
    public var keyCounters: [EntityID: Int64] = [:]

    public init() {}

    public var isEmpty: Bool {
        inserted.isEmpty && updated.allSatisfy(\.isEmpty) && deleted.isEmpty && toManyChanges.isEmpty && metadata == nil
            && keyCounters.isEmpty
    }
}
