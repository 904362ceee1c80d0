/// What deleting the source object does to the objects a relationship reaches.
public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
    /// The destinations stay; their inverse no longer points at the deleted object.
    case nullify = "Nullify"
    /// The destinations are deleted too.
    case cascade = "Cascade"
    /// Deleting the source is refused while the relationship is not empty.
    case deny = "Deny"
    /// Nothing is done: the destinations keep dangling inverses (Core Data's "No Action").
    case noAction = "No Action"
}

/// A relationship from one entity to another: to-one or to-many, ordered or not, with its inverse.
public struct RelationshipDescription: Sendable, Hashable {
    public var name: String
    public var destinationEntityName: String
    public var inverseName: String?
    public var isToMany: Bool
    public var isOrdered: Bool
    public var isOptional: Bool
    public var isTransient: Bool
    /// Minimum number of destinations (0 = no minimum).
    public var minCount: Int
    /// Maximum number of destinations (0 = unbounded; 1 for a to-one).
    public var maxCount: Int
    public var deleteRule: DeleteRule
    public var userInfo: [String: String]
    public var renamingIdentifier: String?
    public var versionHashModifier: String?

    public init(
        name: String, destinationEntityName: String, inverseName: String? = nil,
        isToMany: Bool = false, isOrdered: Bool = false, isOptional: Bool = true,
        isTransient: Bool = false, minCount: Int = 0, maxCount: Int? = nil,
        deleteRule: DeleteRule = .nullify, userInfo: [String: String] = [:],
        renamingIdentifier: String? = nil, versionHashModifier: String? = nil
    ) {
        self.name = name
        self.destinationEntityName = destinationEntityName
        self.inverseName = inverseName
        self.isToMany = isToMany
        self.isOrdered = isOrdered
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.minCount = minCount
        self.maxCount = maxCount ?? (isToMany ? 0 : 1)
        self.deleteRule = deleteRule
        self.userInfo = userInfo
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
    }
}

/// A fetched property: a relationship computed by a fetch request over the destination entity.
///
/// The predicate is kept as the string the model gives; the engine evaluates it later.
public struct FetchedPropertyDescription: Sendable, Hashable {
    public var name: String
    public var destinationEntityName: String
    public var predicateString: String
    public var isOptional: Bool
    public var userInfo: [String: String]

    public init(
        name: String, destinationEntityName: String, predicateString: String,
        isOptional: Bool = true, userInfo: [String: String] = [:]
    ) {
        self.name = name
        self.destinationEntityName = destinationEntityName
        self.predicateString = predicateString
        self.isOptional = isOptional
        self.userInfo = userInfo
    }
}

/// A fetch request template stored in the model (`<fetchRequest>` at model level).
public struct FetchRequestTemplate: Sendable, Hashable {
    public var name: String
    public var entityName: String
    public var predicateString: String?
    /// The remaining attributes of the element (fetchLimit, includeSubentities, ...), kept verbatim.
    public var options: [String: String]

    public init(name: String, entityName: String, predicateString: String?, options: [String: String] = [:]) {
        self.name = name
        self.entityName = entityName
        self.predicateString = predicateString
        self.options = options
    }
}

/// A named configuration: the subset of entities a store of that configuration holds.
public struct ModelConfiguration: Sendable, Hashable {
    public var name: String
    public var entityNames: [String]

    public init(name: String, entityNames: [String]) {
        self.name = name
        self.entityNames = entityNames
    }
}
