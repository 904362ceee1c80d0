/// Everything one save writes, applied by a store as one transaction: all of it or none of it.
///
/// Versions: an inserted snapshot is written with version 1; an updated or deleted object carries
/// the version its context read, and the store refuses the whole save with
/// ``ObjectGraphError/Code/conflict`` when the stored version differs. An updated object is written
/// with version + 1.
public struct SaveRequest: Sendable {
    /// A to-many relationship's complete new contents for one source object, in order for ordered
    /// relationships.
    public struct ToManyChange: Sendable, Hashable {
        public var source: ObjectID
        public var relationship: String
        public var destinations: [ObjectID]

        public init(source: ObjectID, relationship: String, destinations: [ObjectID]) {
            self.source = source
            self.relationship = relationship
            self.destinations = destinations
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
    /// Complete new snapshots of changed objects; `version` is the version that was read.
    public var updated: [Snapshot] = []
    public var deleted: [Deletion] = []
    /// To-many changes of inserted and updated objects. Both sides of a many-to-many change are
    /// listed; they agree, because the context keeps inverses consistent.
    public var toManyChanges: [ToManyChange] = []
    /// The metadata to write with this save, when it changed.
    public var metadata: StoreMetadata?

    public init() {}

    public var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && toManyChanges.isEmpty && metadata == nil
    }
}
