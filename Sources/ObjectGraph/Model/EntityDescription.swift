/// An entity of a model: its own properties as declared, and, once the model has resolved it, its
/// place in the inheritance tree and the properties it inherits.
public struct EntityDescription: Sendable, Hashable {
    public var name: String
    public var parentName: String?
    public var isAbstract: Bool
    public var representedClassName: String?
    /// Attributes declared on this entity (not inherited ones), in declaration order.
    public var attributes: [AttributeDescription]
    /// Relationships declared on this entity, in declaration order.
    public var relationships: [RelationshipDescription]
    public var fetchedProperties: [FetchedPropertyDescription]
    /// Composite attributes declared on this entity. The model lists their leaf elements among
    /// ``attributes`` (named by key path, ``AttributeDescription/composite`` set), placed by the
    /// composite's name among the other attributes: Core Data's order, which decides which of two
    /// same-named columns gets the suffix (`ZID`, `ZID1`).
    public var composites: [CompositeAttributeDescription] = []
    /// Fetch indexes (Core Data's `NSFetchIndexDescription`, SwiftData's `#Index`), kept so that a
    /// store written or migrated keeps them.
    public var fetchIndexes: [FetchIndexDescription] = []
    public var userInfo: [String: String]
    /// Uniqueness constraints: each a list of property names.
    public var uniquenessConstraints: [[String]]
    public var renamingIdentifier: String?
    public var versionHashModifier: String?

    // MARK: - Resolved by the model

    /// This entity's number in its model; set when a model is built.
    public internal(set) var id = EntityID(0)
    public internal(set) var parentID: EntityID?
    /// The root of this entity's inheritance tree (itself for a root entity).
    public internal(set) var rootID = EntityID(0)
    /// Direct subentities.
    public internal(set) var subentityIDs: [EntityID] = []
    /// Every attribute, inherited ones first, as Core Data lists `attributesByName` for a subentity.
    public internal(set) var allAttributes: [AttributeDescription] = []
    /// Every relationship, inherited ones first.
    public internal(set) var allRelationships: [RelationshipDescription] = []
    /// Every fetched property, inherited ones first.
    public internal(set) var allFetchedProperties: [FetchedPropertyDescription] = []
    /// Every composite attribute, inherited ones first.
    public internal(set) var allComposites: [CompositeAttributeDescription] = []
    /// The key path of every composite, nested ones included (`author`, `a.b`), parents first,
    /// in ``allComposites`` order: what shows as a folder in an object's folder.
    public internal(set) var compositePaths: [String] = []

    public init(
        name: String, parentName: String? = nil, isAbstract: Bool = false,
        representedClassName: String? = nil, attributes: [AttributeDescription] = [],
        relationships: [RelationshipDescription] = [],
        fetchedProperties: [FetchedPropertyDescription] = [], userInfo: [String: String] = [:],
        uniquenessConstraints: [[String]] = [], renamingIdentifier: String? = nil,
        versionHashModifier: String? = nil
    ) {
        self.name = name
        self.parentName = parentName
        self.isAbstract = isAbstract
        self.representedClassName = representedClassName
        self.attributes = attributes
        self.relationships = relationships
        self.fetchedProperties = fetchedProperties
        self.userInfo = userInfo
        self.uniquenessConstraints = uniquenessConstraints
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
    }

    /// The attribute named `name`, inherited or not.
    public func attribute(named name: String) -> AttributeDescription? {
        allAttributes.first { $0.name == name }
    }

    /// The relationship named `name`, inherited or not.
    public func relationship(named name: String) -> RelationshipDescription? {
        allRelationships.first { $0.name == name }
    }

    /// The fetched property named `name`, inherited or not.
    public func fetchedProperty(named name: String) -> FetchedPropertyDescription? {
        allFetchedProperties.first { $0.name == name }
    }

    /// The composite attribute named `name` (top level), inherited or not.
    public func composite(named name: String) -> CompositeAttributeDescription? {
        allComposites.first { $0.name == name }
    }

    /// Attributes declared on this entity that are not composite elements.
    public var plainAttributes: [AttributeDescription] { attributes.filter { $0.composite == nil } }

    /// Attributes a store keeps (every non-transient one).
    public var persistentAttributes: [AttributeDescription] { allAttributes.filter { !$0.isTransient } }

    /// Relationships a store keeps (every non-transient one).
    public var persistentRelationships: [RelationshipDescription] {
        allRelationships.filter { !$0.isTransient }
    }
}
