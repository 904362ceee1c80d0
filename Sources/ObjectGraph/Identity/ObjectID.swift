import Foundation

/// The identity of one object in a store: its entity and primary key.
///
/// Keys are unique per root entity, so two IDs with the same key in one inheritance tree never
/// exist; the entity is the object's actual entity (a subentity where the object is one).
public struct ObjectID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let entity: EntityID
    public let key: PrimaryKey

    public init(entity: EntityID, key: PrimaryKey) {
        self.entity = entity
        self.key = key
    }

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        (lhs.entity, lhs.key) < (rhs.entity, rhs.key)
    }

    public var description: String { "\(entity.rawValue)/\(key)" }
}

/// Core Data's URI representation of an object ID: `x-coredata://<store UUID>/<Entity>/p<key>`.
public struct ObjectURI: Hashable, Sendable, CustomStringConvertible {
    public var storeUUID: String
    public var entityName: String
    public var key: PrimaryKey

    public init(storeUUID: String, entityName: String, key: PrimaryKey) {
        self.storeUUID = storeUUID
        self.entityName = entityName
        self.key = key
    }

    /// Parses the URI form; nil when the text is not an object URI.
    public init?(_ text: String) {
        let prefix = "x-coredata://"
        guard text.hasPrefix(prefix) else { return nil }
        let parts = text.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty,
            let key = PrimaryKey(reference: parts[2])
        else { return nil }
        self.storeUUID = String(parts[0])
        self.entityName = String(parts[1])
        self.key = key
    }

    public var description: String { "x-coredata://\(storeUUID)/\(entityName)/\(key)" }
}
