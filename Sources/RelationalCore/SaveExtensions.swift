import ObjectGraph

/// What an engine adds to the rows a save writes, beyond Core Data's relational rules: SQLite's
/// derived attributes its triggers compute (never written) and its external data files (a
/// large value written to a file and a reference stored; a replaced file removed after the
/// commit). PostgreSQL adds nothing (``NoSaveExtensions``).
package protocol SaveExtensions {
    /// Whether the store computes attribute `name` of `entity` itself: a save leaves its column
    /// alone and refuses an update that sets it.
    func isComputed(_ name: String, of entity: EntityID) -> Bool

    /// What is stored for `value` of `attribute`, which allows external storage.
    mutating func stored(_ value: SQLValue, for attribute: AttributeDescription, of id: ObjectID)
        throws(ObjectGraphError) -> SQLValue

    /// Called before the row of `id` changes: an update of `attributes`, or a delete (nil).
    mutating func willChange(_ id: ObjectID, attributes: Set<String>?, on connection: some SQLConnection)
        throws(ObjectGraphError)
}

extension SaveExtensions {
    package func isComputed(_ name: String, of entity: EntityID) -> Bool { false }

    package mutating func stored(_ value: SQLValue, for attribute: AttributeDescription, of id: ObjectID)
        throws(ObjectGraphError) -> SQLValue
    { value }

    package mutating func willChange(_ id: ObjectID, attributes: Set<String>?, on connection: some SQLConnection)
        throws(ObjectGraphError)
    {}
}

/// An engine that adds nothing to a save.
package struct NoSaveExtensions: SaveExtensions {
    package init() {}
}
