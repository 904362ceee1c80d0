import Foundation

/// A mapping model: how the objects of a store of one model version become the objects of a
/// store of another, as Core Data's `NSMappingModel` says it: entity mappings, each with the
/// property mappings that give the new objects' values.
///
/// It comes from Xcode (`.xcmappingmodel`, read by ``XcodeMappingModelReader``), from a compiled
/// `.cdm` (``CompiledMappingModelDecoder``), or is inferred from two models the way Core Data
/// infers one for a lightweight migration (``inferred(from:to:)``). ``MigrationRun`` carries it
/// out.
///
/// Threading: a value; share it freely.
public struct MappingModel: Sendable, Hashable {
    /// Where the mapping came from, for messages: a path, or "lightweight (inferred)".
    public var source: String
    public var entityMappings: [EntityMapping]
    /// The model versions the mapping was made for, when its file names them (Xcode's mapping
    /// models record the model folders' paths): `X 2.xcdatamodel`, to find the step of a staged
    /// migration it belongs to.
    public var sourceModelName: String?
    public var destinationModelName: String?
    /// Whether this mapping was inferred (lightweight) rather than made by a developer.
    public var isInferred: Bool

    public init(
        source: String, entityMappings: [EntityMapping], sourceModelName: String? = nil,
        destinationModelName: String? = nil, isInferred: Bool = false
    ) {
        self.source = source
        self.entityMappings = entityMappings
        self.sourceModelName = sourceModelName
        self.destinationModelName = destinationModelName
        self.isInferred = isInferred
    }

    /// The entity mapping named `name`: by its name, or (as Core Data names unnamed mappings)
    /// `Source->Destination`.
    public func entityMapping(named name: String) -> EntityMapping? {
        entityMappings.first { $0.name == name }
            ?? entityMappings.first { "\($0.sourceEntityName ?? "")->\($0.destinationEntityName ?? "")" == name }
    }
}

/// Core Data's `NSEntityMappingType`.
public enum EntityMappingKind: String, Sendable, Hashable {
    /// Xcode's "Undefined": decided by what the mapping names (a source and a destination:
    /// transform; only a destination: add; only a source: remove).
    case undefined = "Undefined"
    /// A developer's own code creates the objects (a migration policy class).
    case custom = "Custom"
    /// A new entity: no object of the old store becomes one of it.
    case add = "Add"
    /// An entity that goes: its objects are not migrated.
    case remove = "Remove"
    /// Each object is copied as it is.
    case copy = "Copy"
    /// Each object becomes one object of the destination entity, its values given by the
    /// property mappings.
    case transform = "Transform"

    /// Core Data's numbers for the kinds (`NSEntityMappingType`).
    public init?(code: Int64) {
        switch code {
        case 0: self = .undefined
        case 1: self = .custom
        case 2: self = .add
        case 3: self = .remove
        case 4: self = .copy
        case 5: self = .transform
        default: return nil
        }
    }

    public var code: Int64 {
        switch self {
        case .undefined: 0
        case .custom: 1
        case .add: 2
        case .remove: 3
        case .copy: 4
        case .transform: 5
        }
    }
}

/// One entity mapping (`NSEntityMapping`): which objects of the old store it takes, which entity
/// their new objects are, and how their properties get their values.
public struct EntityMapping: Sendable, Hashable {
    /// The mapping's name, by which relationship mappings refer to it (Xcode: `PostToPost`).
    public var name: String
    public var kind: EntityMappingKind
    public var sourceEntityName: String?
    public var destinationEntityName: String?
    /// The entity version hashes the mapping was compiled for (compiled `.cdm` files only).
    public var sourceEntityVersionHash: Data?
    public var destinationEntityVersionHash: Data?
    /// Which source objects the mapping takes, when not all of the source entity's own objects
    /// (Xcode's "Filter Predicate"), as predicate text.
    public var filterPredicate: String?
    /// A custom `NSEntityMigrationPolicy` subclass: code that storefs cannot run.
    public var migrationPolicyClassName: String?
    public var attributeMappings: [PropertyMapping]
    public var relationshipMappings: [PropertyMapping]

    public init(
        name: String, kind: EntityMappingKind, sourceEntityName: String?, destinationEntityName: String?,
        sourceEntityVersionHash: Data? = nil, destinationEntityVersionHash: Data? = nil, filterPredicate: String? = nil,
        migrationPolicyClassName: String? = nil, attributeMappings: [PropertyMapping] = [],
        relationshipMappings: [PropertyMapping] = []
    ) {
        self.name = name
        self.kind = kind
        self.sourceEntityName = sourceEntityName
        self.destinationEntityName = destinationEntityName
        self.sourceEntityVersionHash = sourceEntityVersionHash
        self.destinationEntityVersionHash = destinationEntityVersionHash
        self.filterPredicate = filterPredicate
        self.migrationPolicyClassName = migrationPolicyClassName
        self.attributeMappings = attributeMappings
        self.relationshipMappings = relationshipMappings
    }

    /// What the mapping does, once `undefined` is resolved by what it names.
    public var effectiveKind: EntityMappingKind {
        guard kind == .undefined else { return kind }
        switch (sourceEntityName, destinationEntityName) {
        case (_?, _?): return .transform
        case (nil, _?): return .add
        case (_?, nil): return .remove
        case (nil, nil): return .remove
        }
    }

    /// Whether the mapping names a policy class other than Core Data's own default one.
    public var hasCustomPolicy: Bool {
        guard let name = migrationPolicyClassName?.trimmingCharacters(in: .whitespaces), !name.isEmpty else {
            return false
        }
        return name != "NSEntityMigrationPolicy"
    }
}

/// One property mapping (`NSPropertyMapping`): a destination property and the expression that
/// gives its value; no expression leaves the property at its default (attributes) or empty
/// (relationships).
public struct PropertyMapping: Sendable, Hashable {
    public var name: String
    public var valueExpression: MappingExpression?
    /// Xcode's automatic expression, which its mapping file leaves out: `$source.NAME` (for a
    /// relationship, the new objects of `$source.NAME`) when the source entity has a property
    /// of that name, else none (``MappingModel/resolvingAutomaticExpressions(from:)``).
    public var isAutomatic: Bool

    public init(name: String, valueExpression: MappingExpression?, isAutomatic: Bool = false) {
        self.name = name
        self.valueExpression = valueExpression
        self.isAutomatic = isAutomatic
    }
}

extension MappingModel {
    /// The mapping with Xcode's automatic expressions spelled out for `source`'s entities.
    public func resolvingAutomaticExpressions(from source: ManagedObjectModel) -> MappingModel {
        var copy = self
        for index in copy.entityMappings.indices {
            let entity = copy.entityMappings[index].sourceEntityName.flatMap { source.entity(named: $0) }
            for p in copy.entityMappings[index].attributeMappings.indices
            where copy.entityMappings[index].attributeMappings[p].isAutomatic {
                let name = copy.entityMappings[index].attributeMappings[p].name
                if let entity, let attribute = entity.attribute(named: name), !attribute.isTransient {
                    copy.entityMappings[index].attributeMappings[p].valueExpression = .variable(
                        "source", keyPath: [name])
                }
                copy.entityMappings[index].attributeMappings[p].isAutomatic = false
            }
            for p in copy.entityMappings[index].relationshipMappings.indices
            where copy.entityMappings[index].relationshipMappings[p].isAutomatic {
                let name = copy.entityMappings[index].relationshipMappings[p].name
                if let entity, let relationship = entity.relationship(named: name), !relationship.isTransient {
                    copy.entityMappings[index].relationshipMappings[p].valueExpression = .followingSourceRelationship(
                        name)
                }
                copy.entityMappings[index].relationshipMappings[p].isAutomatic = false
            }
        }
        return copy
    }
}
