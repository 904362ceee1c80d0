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
    public var attributes: [String: AttributeValue]
    /// Non-nil to-one destinations by relationship name; a missing name is nil.
    public var toOne: [String: ObjectID]

    public init(
        objectID: ObjectID, version: Int64, attributes: [String: AttributeValue] = [:],
        toOne: [String: ObjectID] = [:]
    ) {
        self.objectID = objectID
        self.version = version
        self.attributes = attributes
        self.toOne = toOne
    }

    /// An estimate of the memory the snapshot takes, for the row cache's limit.
    public var approximateSize: Int {
        64 + attributes.reduce(0) { $0 + 24 + $1.key.utf8.count + $1.value.approximateSize }
            + toOne.count * 48
    }
}
