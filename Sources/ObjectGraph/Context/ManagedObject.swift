/// An object registered in a context: a handle whose values live in the context and the row cache.
///
/// A context hands out one instance per record while it is in use (uniquing), so `===` tells two
/// references to the same record apart from two records. Reading a property fires the object's
/// fault if its row is not in memory.
///
/// Threading: as thread-safe as its context (all state is the context's).
public final class ManagedObject: Sendable, CustomStringConvertible {
    public let objectID: ObjectID
    public let context: ObjectContext

    init(objectID: ObjectID, context: ObjectContext) {
        self.objectID = objectID
        self.context = context
    }

    /// The entity of the object.
    public var entity: EntityDescription { context.model[objectID.entity] }

    /// Whether reading a property would have to fetch the row from the store.
    public var isFault: Bool { context.isFault(objectID) }

    /// The value of attribute `name`; nil when it is nil.
    public func value(of name: String) throws(ObjectGraphError) -> AttributeValue? {
        try context.value(of: name, for: objectID)
    }

    public func setValue(_ value: AttributeValue?, of name: String) throws(ObjectGraphError) {
        try context.setValue(value, of: name, for: objectID)
    }

    /// The destination of to-one relationship `name`.
    public func destination(of name: String) throws(ObjectGraphError) -> ObjectID? {
        try context.destination(of: name, for: objectID)
    }

    /// The destinations of to-many relationship `name`, in order for ordered relationships.
    public func destinations(of name: String) throws(ObjectGraphError) -> [ObjectID] {
        try context.destinations(of: name, for: objectID)
    }

    public var description: String { "<\(entity.name) \(objectID.key)>" }
}
