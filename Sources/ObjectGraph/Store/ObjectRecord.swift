/// One object's stored state, whole: its attribute values, its to-one destinations and the
/// contents of every to-many relationship, as a walk that shows or compares objects needs it
/// (`storefs export` and `diff`, a query's `.json`).
///
/// A ``Snapshot`` leaves to-many relationships out (they fault separately); a record has them all.
///
/// Threading: a value; share it freely.
public struct ObjectRecord: Sendable, Hashable {
    public var objectID: ObjectID
    /// The optimistic-locking version (`Z_OPT`).
    public var version: Int64
    /// Non-nil persistent attribute values by name.
    public var attributes: PropertyValues<AttributeValue>
    /// Non-nil to-one destinations by relationship name.
    public var toOne: PropertyValues<ObjectID>
    /// Every persistent to-many relationship of the object's entity, empty ones included; ordered
    /// relationships in their order, others by destination key.
    public var toMany: PropertyValues<[ObjectID]>

    public init(snapshot: Snapshot, toMany: PropertyValues<[ObjectID]>) {
        objectID = snapshot.objectID
        version = snapshot.version
        attributes = snapshot.attributes
        toOne = snapshot.toOne
        self.toMany = toMany
    }

    public init(snapshot: Snapshot, toMany: [String: [ObjectID]]) {
        self.init(snapshot: snapshot, toMany: PropertyValues(toMany))
    }
}
