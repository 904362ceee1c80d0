/// The stored state of one object: its attribute values and to-one destinations, and the version
/// the store had when it was read.
///
/// To-many relationships are not part of a snapshot: a store answers them separately (and in
/// batches) through ``PersistentStore/toManyDestinations(of:in:for:)``, as Core Data fires them as
/// separate faults.
public struct Snapshot: Sendable, Hashable {
    public var objectID: ObjectID
    /// The optimistic-locking version (`Z_OPT`): 1 after the first save, bumped on every update.
    public var version: Int64
    /// Non-nil persistent attribute values by attribute name; a missing name is nil.
    public var attributes: PropertyValues<AttributeValue>
    /// Non-nil to-one destinations by relationship name; a missing name is nil.
    public var toOne: PropertyValues<ObjectID>

    public init(
        objectID: ObjectID, version: Int64, attributes: PropertyValues<AttributeValue> = [:],
        toOne: PropertyValues<ObjectID> = [:]
    ) {
        self.objectID = objectID
        self.version = version
        self.attributes = attributes
        self.toOne = toOne
    }

    /// An estimate of the memory the snapshot takes, for the row cache's limit: what the process
    /// really holds for it, not only its values' bytes (the slot arrays' headers and malloc's
    /// rounding, values longer than a small string in allocations of their own). Counting only
    /// the values' bytes let a 64 MiB cache take 160 MB (measured: 85,000 sample Employees, when
    /// snapshots held dictionaries). Names are not counted: a store's snapshots share their
    /// entity's list, and a long name's text is shared by every copy of it.
    public var approximateSize: Int {
        var size = 96  // the cache's bucket for the snapshot
        size += attributes.storageBytes + toOne.storageBytes
        for (_, value) in attributes { size += value.approximateSize }
        return size
    }
}
