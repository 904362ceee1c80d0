/// A managed object model: the entities, their properties and inheritance, fetch request templates
/// and configurations.
///
/// Building a model checks that it is consistent (parents exist, relationship destinations and
/// inverses exist, names are unique) and numbers the entities as Core Data does. Models are values
/// and may be shared between threads.
public struct ManagedObjectModel: Sendable, Hashable {
    /// Every entity, in `EntityID` order (`entities[id.rawValue - 1]`).
    public let entities: [EntityDescription]
    public let fetchRequestTemplates: [FetchRequestTemplate]
    public let configurations: [ModelConfiguration]
    /// Xcode's `userDefinedModelVersionIdentifier`.
    public let versionIdentifier: String?
    private let idsByName: [String: EntityID]

    /// How many ancestors an entity may have. Real models have a few; the model is walked by
    /// recursion and may come from a file (a store's schema or kept model), so the depth is bounded.
    public static let maximumInheritanceDepth = 64

    /// Builds and checks a model from entity declarations.
    ///
    /// - Throws: ``ObjectGraphError/Code/invalidModel`` naming the entity and property at fault.
    public init(
        entities declared: [EntityDescription], fetchRequestTemplates: [FetchRequestTemplate] = [],
        configurations: [ModelConfiguration] = [], versionIdentifier: String? = nil
    ) throws(ObjectGraphError) {
        var byName: [String: EntityDescription] = [:]
        for entity in declared {
            guard !entity.name.isEmpty else {
                throw ObjectGraphError(.invalidModel, "an entity has an empty name")
            }
            guard byName[entity.name] == nil else {
                throw ObjectGraphError(.invalidModel, "entity \(entity.name) is declared twice")
            }
            byName[entity.name] = entity
        }
        for entity in declared {
            if let parent = entity.parentName, byName[parent] == nil {
                throw ObjectGraphError(
                    .invalidModel, "entity \(entity.name) names parent entity \(parent), which does not exist")
            }
        }
        // Number entities depth-first, roots and siblings by name: Core Data's Z_ENT order.
        var children: [String: [String]] = [:]
        var roots: [String] = []
        for entity in declared {
            if let parent = entity.parentName {
                children[parent, default: []].append(entity.name)
            } else {
                roots.append(entity.name)
            }
        }
        var order: [String] = []
        func visit(_ name: String, depth: Int) throws(ObjectGraphError) {
            guard depth <= declared.count else {
                throw ObjectGraphError(.invalidModel, "entity \(name) is its own ancestor")
            }
            guard depth <= Self.maximumInheritanceDepth else {
                throw ObjectGraphError(
                    .invalidModel,
                    "entity \(name) has more than \(Self.maximumInheritanceDepth) ancestors; storefs supports "
                        + "inheritance up to that depth")
            }
            order.append(name)
            for child in (children[name] ?? []).sorted() { try visit(child, depth: depth + 1) }
        }
        for root in roots.sorted() { try visit(root, depth: 0) }
        guard order.count == declared.count else {
            let cyclic = declared.map(\.name).filter { !order.contains($0) }.sorted()
            throw ObjectGraphError(
                .invalidModel, "entities \(cyclic.joined(separator: ", ")) form an inheritance cycle")
        }
        var ids: [String: EntityID] = [:]
        for (index, name) in order.enumerated() { ids[name] = EntityID(index + 1) }

        var resolved: [EntityDescription] = []
        for name in order {
            var entity = byName[name]!
            try Self.flattenComposites(of: &entity)
            entity.id = ids[name]!
            entity.parentID = entity.parentName.flatMap { ids[$0] }
            entity.subentityIDs = (children[name] ?? []).sorted().map { ids[$0]! }
            if let parentID = entity.parentID {
                let parent = resolved[parentID.rawValue - 1]
                entity.rootID = parent.rootID
                entity.allAttributes = parent.allAttributes + entity.attributes
                entity.allRelationships = parent.allRelationships + entity.relationships
                entity.allFetchedProperties = parent.allFetchedProperties + entity.fetchedProperties
                entity.allComposites = parent.allComposites + entity.composites
            } else {
                entity.rootID = entity.id
                entity.allAttributes = entity.attributes
                entity.allRelationships = entity.relationships
                entity.allFetchedProperties = entity.fetchedProperties
                entity.allComposites = entity.composites
            }
            entity.compositePaths = entity.allComposites.flatMap { $0.folders().map(\.path) }
            try Self.checkProperties(of: entity)
            resolved.append(entity)
        }
        for entity in resolved {
            for relationship in entity.relationships {
                guard let destinationID = ids[relationship.destinationEntityName] else {
                    throw ObjectGraphError(
                        .invalidModel,
                        "relationship \(entity.name).\(relationship.name) names destination entity "
                            + "\(relationship.destinationEntityName), which does not exist")
                }
                if let inverse = relationship.inverseName {
                    let destination = resolved[destinationID.rawValue - 1]
                    guard destination.relationship(named: inverse) != nil else {
                        throw ObjectGraphError(
                            .invalidModel,
                            "relationship \(entity.name).\(relationship.name) names inverse \(inverse), "
                                + "which entity \(destination.name) does not have")
                    }
                }
            }
            for fetched in entity.fetchedProperties where ids[fetched.destinationEntityName] == nil {
                throw ObjectGraphError(
                    .invalidModel,
                    "fetched property \(entity.name).\(fetched.name) names entity "
                        + "\(fetched.destinationEntityName), which does not exist")
            }
        }
        self.entities = resolved
        self.idsByName = ids
        self.fetchRequestTemplates = fetchRequestTemplates
        self.configurations = configurations
        self.versionIdentifier = versionIdentifier
    }

    /// Lists the leaf elements of the entity's composites among its attributes, each placed before
    /// the first plain attribute whose name follows the composite's (Core Data lays out columns in
    /// that order); leaves a description already carries are replaced, so resolving twice is the same.
    private static func flattenComposites(of entity: inout EntityDescription) throws(ObjectGraphError) {
        var plain = entity.attributes.filter { $0.composite == nil }
        guard !entity.composites.isEmpty else {
            entity.attributes = plain
            return
        }
        for composite in entity.composites.sorted(by: { $0.name < $1.name }) {
            guard composite.depth <= CompositeAttributeDescription.maximumDepth else {
                throw ObjectGraphError(
                    .invalidModel,
                    "composite attribute \(entity.name).\(composite.name) nests more than "
                        + "\(CompositeAttributeDescription.maximumDepth) composites deep")
            }
            for (path, folder) in composite.folders() {
                var seen: Set<String> = []
                for element in folder.elements {
                    guard !element.name.isEmpty, !element.name.contains(".") else {
                        throw ObjectGraphError(
                            .invalidModel,
                            "composite attribute \(entity.name).\(path) has an element named '\(element.name)'")
                    }
                    guard seen.insert(element.name).inserted else {
                        throw ObjectGraphError(
                            .invalidModel,
                            "composite attribute \(entity.name).\(path) has two elements named \(element.name)")
                    }
                }
            }
            let place = plain.firstIndex { $0.name > composite.name } ?? plain.endIndex
            plain.insert(contentsOf: composite.flattenedElements(), at: place)
        }
        entity.attributes = plain
    }

    private static func checkProperties(of entity: EntityDescription) throws(ObjectGraphError) {
        var seen: Set<String> = []
        let names =
            entity.allAttributes.map(\.name) + entity.allComposites.map(\.name)
            + entity.allRelationships.map(\.name) + entity.allFetchedProperties.map(\.name)
        for name in names {
            guard !name.isEmpty else {
                throw ObjectGraphError(.invalidModel, "entity \(entity.name) has a property with an empty name")
            }
            guard seen.insert(name).inserted else {
                throw ObjectGraphError(.invalidModel, "entity \(entity.name) has two properties named \(name)")
            }
        }
    }

    // MARK: - Lookup

    /// The entity numbered `id`. Yielded, not returned: `model[id].name` then reads in place
    /// instead of copying the whole description (a retain and release per field), which showed
    /// in profiles of listing folders.
    public subscript(id: EntityID) -> EntityDescription {
        _read { yield entities[id.rawValue - 1] }
    }

    /// The entity named `name`, or nil.
    public func entity(named name: String) -> EntityDescription? {
        idsByName[name].map { self[$0] }
    }

    /// The ID of the entity named `name`, or nil.
    public func entityID(named name: String) -> EntityID? { idsByName[name] }

    /// The entity itself and all its subentities, at any depth, in ID order.
    public func entityAndSubentities(of id: EntityID) -> [EntityID] {
        var result = [id]
        for child in self[id].subentityIDs { result += entityAndSubentities(of: child) }
        return result
    }

    /// Whether `id` is `ancestor` or one of its subentities.
    public func entity(_ id: EntityID, isKindOf ancestor: EntityID) -> Bool {
        var current: EntityID? = id
        while let c = current {
            if c == ancestor { return true }
            current = self[c].parentID
        }
        return false
    }

    /// Root entities, in ID order.
    public var rootEntities: [EntityDescription] { entities.filter { $0.parentID == nil } }

    /// The inverse of `relationship` declared on `entity`, if the model names one.
    public func inverse(of relationship: RelationshipDescription) -> RelationshipDescription? {
        guard let inverseName = relationship.inverseName else { return nil }
        return entity(named: relationship.destinationEntityName)?.relationship(named: inverseName)
    }
}
