import Foundation

/// How two versions of a model differ, entity by entity and property by property, and whether
/// Core Data could migrate a store between them without a mapping model (lightweight).
///
/// Elements are matched the way Core Data's inferred mapping matches them: an entity or property
/// of the new model is the old one whose *identifier* it shares, the identifier being the renaming
/// identifier (Xcode's "Renaming ID") or, when there is none, the name. So a new attribute
/// `paintColor` whose renaming identifier is `color` is the old `color`, renamed; without one it
/// is an attribute added beside one removed.
///
/// Each difference carries a ``Verdict``: fine for a lightweight migration, fine only if the
/// store's objects allow it (checked object by object while migrating: a property made mandatory
/// without a default, a to-many made to-one), or refused (a type change storefs cannot convert,
/// a relationship whose destination changed). docs/MIGRATION.md lists the rules.
///
/// Threading: a value; share it freely.
public struct ModelDifference: Sendable, Hashable {
    /// What became of an entity or property.
    public enum Change: Sendable, Hashable {
        case unchanged
        case added
        case removed
        /// Matched through a renaming identifier; `from` is the old name. Other changes may come
        /// with the rename (listed in the details).
        case renamed(from: String)
        case changed
    }

    /// Whether a difference lets Core Data migrate lightweight.
    public enum Verdict: Sendable, Hashable {
        case lightweight
        /// Lightweight, provided the store's objects fit: the text says what each must satisfy.
        case dependsOnData(String)
        /// Not lightweight: the text says why, naming the property.
        case refused(String)
    }

    public enum PropertyKind: String, Sendable, Hashable {
        case attribute, relationship
    }

    public struct PropertyDifference: Sendable, Hashable {
        /// The name in the new model (the old name for a removed property).
        public var name: String
        /// The name in the old model; nil for an added property.
        public var sourceName: String?
        public var kind: PropertyKind
        public var change: Change
        /// What changed, one short phrase each (`type Integer 16 → Integer 32`).
        public var details: [String]
        public var verdict: Verdict
    }

    public struct EntityDifference: Sendable, Hashable {
        /// The name in the new model (the old name for a removed entity).
        public var name: String
        /// The name in the old model; nil for an added entity.
        public var sourceName: String?
        public var change: Change
        public var details: [String]
        public var verdicts: [Verdict]
        /// Differences of the persistent properties (inherited ones included), those that differ.
        public var properties: [PropertyDifference]
        /// Whether the entity's version hash differs (Core Data compares these).
        public var hashDiffers: Bool
    }

    /// Every entity of either model: unchanged ones too, in new-model name order, removed ones last.
    public let entities: [EntityDifference]
    /// Old entity name → new entity name, for every entity the new model keeps.
    public let entityMatches: [String: String]
    /// Per kept entity (new name): new property name → old property name, for every persistent
    /// property the new entity keeps from the old one.
    public let propertyMatches: [String: [String: String]]

    /// Entities that differ in their version hashes (Core Data would need a migration).
    public var changedEntities: [EntityDifference] { entities.filter { $0.hashDiffers } }

    /// Whether the two models have the same version hashes: a store of one opens with the other.
    public var isCompatible: Bool { changedEntities.isEmpty }

    /// Every refusal, with the element it is about.
    public var refusals: [String] {
        var result: [String] = []
        for entity in entities {
            for case .refused(let why) in entity.verdicts { result.append(why) }
            for property in entity.properties {
                if case .refused(let why) = property.verdict { result.append(why) }
            }
        }
        return result
    }

    /// What the store's objects must satisfy for a lightweight migration to succeed.
    public var conditions: [String] {
        var result: [String] = []
        for entity in entities {
            for case .dependsOnData(let what) in entity.verdicts { result.append(what) }
            for property in entity.properties {
                if case .dependsOnData(let what) = property.verdict { result.append(what) }
            }
        }
        return result
    }

    /// Whether Core Data's inference (and storefs's) can map the old model to the new one.
    public var isLightweight: Bool { refusals.isEmpty }

    /// Compares `source` (the old model) with `destination` (the new one).
    public init(from source: ManagedObjectModel, to destination: ManagedObjectModel) {
        let sourceHashes = VersionHash.entityHashes(of: source)
        let destinationHashes = VersionHash.entityHashes(of: destination)
        var sourceByIdentifier: [String: EntityDescription] = [:]
        for entity in source.entities { sourceByIdentifier[Self.identifier(entity)] = entity }
        var result: [EntityDifference] = []
        var matches: [String: String] = [:]
        var propertyMatches: [String: [String: String]] = [:]
        var kept: Set<String> = []
        for entity in destination.entities.sorted(by: { $0.name < $1.name }) {
            guard let old = sourceByIdentifier[Self.identifier(entity)], !kept.contains(old.name) else {
                result.append(
                    EntityDifference(
                        name: entity.name, sourceName: nil, change: .added, details: [], verdicts: [.lightweight],
                        properties: [], hashDiffers: true))
                continue
            }
            kept.insert(old.name)
            matches[old.name] = entity.name
            var difference = Self.compare(old, in: source, with: entity, in: destination, matches: &matches)
            difference.hashDiffers = sourceHashes[old.name] != destinationHashes[entity.name] || old.name != entity.name
            if difference.hashDiffers && difference.properties.isEmpty && difference.details.isEmpty,
                let parent = entity.parentName
            {
                difference.details.append("what it inherits from \(parent) changed")
            }
            if !difference.hashDiffers && difference.change == .changed && difference.properties.isEmpty
                && difference.details.isEmpty
            {
                difference.change = .unchanged
            }
            var names: [String: String] = [:]
            for (new, old) in Self.propertyPairs(old, entity) { names[new.name] = old.name }
            propertyMatches[entity.name] = names
            result.append(difference)
        }
        for entity in source.entities.sorted(by: { $0.name < $1.name }) where !kept.contains(entity.name) {
            let count = "its objects are dropped"
            result.append(
                EntityDifference(
                    name: entity.name, sourceName: entity.name, change: .removed, details: [count],
                    verdicts: [.lightweight], properties: [], hashDiffers: true))
        }
        // Relationship verdicts need every entity's match, known only now.
        for index in result.indices where result[index].sourceName != nil && result[index].change != .removed {
            guard let new = destination.entity(named: result[index].name),
                let old = source.entity(named: result[index].sourceName!)
            else { continue }
            for (p, property) in result[index].properties.enumerated() where property.kind == .relationship {
                guard let newRelationship = new.relationship(named: property.name), let oldName = property.sourceName,
                    let oldRelationship = old.relationship(named: oldName)
                else { continue }
                if let refusal = Self.destinationRefusal(
                    oldRelationship, newRelationship, entity: new.name, source: source, destination: destination,
                    matches: matches)
                {
                    result[index].properties[p].verdict = .refused(refusal)
                    result[index].properties[p].details.append(
                        "destination \(oldRelationship.destinationEntityName) → \(newRelationship.destinationEntityName)"
                    )
                    result[index].change = result[index].change == .unchanged ? .changed : result[index].change
                }
            }
        }
        self.entities = result
        self.entityMatches = matches
        self.propertyMatches = propertyMatches
    }

    // MARK: - Matching

    /// Core Data's identifier of an element: its renaming identifier, else its name.
    static func identifier(_ entity: EntityDescription) -> String { entity.renamingIdentifier ?? entity.name }

    /// The persistent properties of `new` paired with the properties of `old` they keep, matched
    /// by identifier; attributes and relationships separately.
    static func propertyPairs(_ old: EntityDescription, _ new: EntityDescription)
        -> [(new: PropertyRef, old: PropertyRef)]
    {
        var oldByIdentifier: [String: PropertyRef] = [:]
        for attribute in old.persistentAttributes {
            oldByIdentifier[attribute.renamingIdentifier ?? attribute.name] = .attribute(attribute)
        }
        for relationship in old.persistentRelationships {
            oldByIdentifier[relationship.renamingIdentifier ?? relationship.name] = .relationship(relationship)
        }
        var pairs: [(new: PropertyRef, old: PropertyRef)] = []
        var taken: Set<String> = []
        let newProperties: [PropertyRef] =
            new.persistentAttributes.map { .attribute($0) } + new.persistentRelationships.map { .relationship($0) }
        for property in newProperties {
            guard let match = oldByIdentifier[property.identifier], !taken.contains(match.name) else { continue }
            taken.insert(match.name)
            pairs.append((property, match))
        }
        return pairs
    }

    /// An attribute or a relationship.
    enum PropertyRef {
        case attribute(AttributeDescription)
        case relationship(RelationshipDescription)

        var name: String {
            switch self {
            case .attribute(let a): a.name
            case .relationship(let r): r.name
            }
        }

        var identifier: String {
            switch self {
            case .attribute(let a): a.renamingIdentifier ?? a.name
            case .relationship(let r): r.renamingIdentifier ?? r.name
            }
        }

        var kind: PropertyKind {
            switch self {
            case .attribute: .attribute
            case .relationship: .relationship
            }
        }
    }

    // MARK: - Entities

    private static func compare(
        _ old: EntityDescription, in source: ManagedObjectModel, with new: EntityDescription,
        in destination: ManagedObjectModel, matches: inout [String: String]
    ) -> EntityDifference {
        var details: [String] = []
        var verdicts: [Verdict] = []
        let change: Change = old.name == new.name ? .changed : .renamed(from: old.name)
        if old.parentName != new.parentName {
            switch (old.parentName, new.parentName) {
            case (nil, let parent?): details.append("moved into the hierarchy of \(parent)")
            case (_?, nil): details.append("moved out of the hierarchy of \(old.parentName!)")
            default: details.append("parent \(old.parentName!) → \(new.parentName!)")
            }
            verdicts.append(.lightweight)
        }
        if old.isAbstract != new.isAbstract {
            if new.isAbstract {
                details.append("made abstract")
                verdicts.append(
                    .dependsOnData("\(new.name) is abstract now: the store must hold no object of \(old.name) itself"))
            } else {
                details.append("no longer abstract")
            }
        }
        if old.versionHashModifier != new.versionHashModifier { details.append("version hash modifier changed") }
        if old.uniquenessConstraints != new.uniquenessConstraints { details.append("uniqueness constraints changed") }
        var properties: [PropertyDifference] = []
        let pairs = propertyPairs(old, new)
        var keptOld: Set<String> = []
        for (newProperty, oldProperty) in pairs {
            keptOld.insert(oldProperty.name)
            if let difference = compare(oldProperty, newProperty, entity: new.name) { properties.append(difference) }
        }
        let keptNew = Set(pairs.map(\.new.name))
        for attribute in new.persistentAttributes where !keptNew.contains(attribute.name) {
            properties.append(added(.attribute(attribute), entity: new.name, in: new))
        }
        for relationship in new.persistentRelationships where !keptNew.contains(relationship.name) {
            properties.append(added(.relationship(relationship), entity: new.name, in: new))
        }
        for attribute in old.persistentAttributes where !keptOld.contains(attribute.name) {
            properties.append(
                PropertyDifference(
                    name: attribute.name, sourceName: attribute.name, kind: .attribute, change: .removed,
                    details: ["its values are dropped"], verdict: .lightweight))
        }
        for relationship in old.persistentRelationships where !keptOld.contains(relationship.name) {
            properties.append(
                PropertyDifference(
                    name: relationship.name, sourceName: relationship.name, kind: .relationship, change: .removed,
                    details: [], verdict: .lightweight))
        }
        // Each property is listed on the entity that declares it; a subentity shows only its own.
        let ownNew = Set(new.attributes.map(\.name) + new.relationships.map(\.name))
        let ownOld = Set(old.attributes.map(\.name) + old.relationships.map(\.name))
        properties.removeAll { $0.change == .removed ? !ownOld.contains($0.name) : !ownNew.contains($0.name) }
        properties.sort { ($0.change == .removed ? 1 : 0, $0.name) < ($1.change == .removed ? 1 : 0, $1.name) }
        return EntityDifference(
            name: new.name, sourceName: old.name, change: change, details: details, verdicts: verdicts,
            properties: properties, hashDiffers: true)
    }

    private static func added(_ property: PropertyRef, entity: String, in description: EntityDescription)
        -> PropertyDifference
    {
        switch property {
        case .attribute(let a):
            var details: [String] = []
            var verdict = Verdict.lightweight
            // An element of an optional composite: existing objects get the composite nil.
            if !a.isOptional && !description.mayBeNil(a, isNil: { _ in true }) {
                if let value = a.defaultValue {
                    details.append("mandatory, existing objects get the default \(AttributeConversion.describe(value))")
                } else {
                    verdict = .dependsOnData(
                        "\(entity).\(a.name) is a new mandatory attribute without a default value: the store must hold no \(entity)"
                    )
                }
            }
            return PropertyDifference(
                name: a.name, sourceName: nil, kind: .attribute, change: .added, details: details, verdict: verdict)
        case .relationship(let r):
            var verdict = Verdict.lightweight
            if !r.isOptional || r.minCount > 0 {
                verdict = .dependsOnData(
                    "\(entity).\(r.name) is a new mandatory relationship: the store must hold no \(entity) that would be left without one"
                )
            }
            return PropertyDifference(
                name: r.name, sourceName: nil, kind: .relationship, change: .added, details: [], verdict: verdict)
        }
    }

    // MARK: - Properties

    private static func compare(_ old: PropertyRef, _ new: PropertyRef, entity: String) -> PropertyDifference? {
        var details: [String] = []
        var verdicts: [Verdict] = []
        let subject = "\(entity).\(new.name)"
        switch (old, new) {
        case (.attribute(let a), .attribute(let b)):
            if a.type != b.type {
                details.append("type \(a.type.rawValue) → \(b.type.rawValue)")
                if AttributeConversion.isLossless(from: a.type, to: b.type) {
                    verdicts.append(.lightweight)
                } else {
                    verdicts.append(
                        .refused(
                            "\(subject): Core Data cannot infer a change of type from \(a.type.rawValue) to \(b.type.rawValue); "
                                + "a mapping model can convert it (FUNCTION($source.\(a.name), \"...\"))"))
                }
            }
            if a.isOptional && !b.isOptional {
                if let value = b.defaultValue {
                    details.append(
                        "made mandatory, nil values become the default \(AttributeConversion.describe(value))")
                } else {
                    details.append("made mandatory")
                    verdicts.append(
                        .dependsOnData(
                            "\(subject) is mandatory now and has no default value: every \(entity) must have a value"))
                }
            } else if !a.isOptional && b.isOptional {
                details.append("made optional")
            }
            if a.defaultValue != b.defaultValue { details.append("default value changed") }
            if a.allowsExternalBinaryDataStorage != b.allowsExternalBinaryDataStorage {
                details.append("external storage changed")
            }
            if a.preservesValueInHistoryOnDeletion != b.preservesValueInHistoryOnDeletion {
                details.append("preserve after deletion changed")
            }
            if a.versionHashModifier != b.versionHashModifier { details.append("version hash modifier changed") }
            if a.minValue != b.minValue || a.maxValue != b.maxValue {
                details.append("minimum or maximum changed")
                verdicts.append(.dependsOnData("\(subject) has a new minimum or maximum: every value must fit it"))
            }
            if a.valueTransformerName != b.valueTransformerName { details.append("value transformer changed") }
            if a.derivationExpression != b.derivationExpression { details.append("derivation changed") }
        case (.relationship(let a), .relationship(let b)):
            if a.isToMany != b.isToMany {
                if b.isToMany {
                    details.append("to-one → to-many")
                } else {
                    details.append("to-many → to-one")
                    verdicts.append(
                        .dependsOnData("\(subject) is to-one now: no \(entity) may have more than one object in it"))
                }
            }
            if a.isToMany && b.isToMany && a.isOrdered != b.isOrdered {
                details.append(b.isOrdered ? "made ordered" : "made unordered")
            }
            if a.isOptional != b.isOptional || a.minCount != b.minCount || a.maxCount != b.maxCount {
                if a.isOptional && !b.isOptional { details.append("made mandatory") }
                if !a.isOptional && b.isOptional { details.append("made optional") }
                if a.isToMany == b.isToMany && (a.minCount != b.minCount || a.maxCount != b.maxCount) {
                    details.append("counts \(a.minCount)...\(a.maxCount) → \(b.minCount)...\(b.maxCount)")
                }
                if (!b.isOptional && a.isOptional) || b.minCount > a.minCount
                    || (b.maxCount > 0 && (a.maxCount == 0 || b.maxCount < a.maxCount))
                {
                    verdicts.append(.dependsOnData("\(subject) has new count limits: every \(entity) must fit them"))
                }
            }
            if a.inverseName != b.inverseName {
                details.append("inverse \(a.inverseName ?? "none") → \(b.inverseName ?? "none")")
            }
            if a.deleteRule != b.deleteRule {
                details.append("delete rule \(a.deleteRule.rawValue) → \(b.deleteRule.rawValue)")
            }
            if a.versionHashModifier != b.versionHashModifier { details.append("version hash modifier changed") }
        case (.attribute(let a), .relationship):
            verdicts.append(
                .refused("\(subject): attribute \(a.name) became a relationship; Core Data cannot infer that"))
            details.append("attribute → relationship")
        case (.relationship(let a), .attribute):
            verdicts.append(
                .refused("\(subject): relationship \(a.name) became an attribute; Core Data cannot infer that"))
            details.append("relationship → attribute")
        }
        let change: Change = old.name == new.name ? .changed : .renamed(from: old.name)
        if details.isEmpty && change == .changed { return nil }
        let verdict =
            verdicts.first { if case .refused = $0 { true } else { false } }
            ?? verdicts.first { if case .dependsOnData = $0 { true } else { false } } ?? .lightweight
        return PropertyDifference(
            name: new.name, sourceName: old.name, kind: new.kind, change: change, details: details, verdict: verdict)
    }

    /// A relationship must still lead to the entity it led to (renamed or not), or to one of its
    /// ancestors: Core Data cannot infer where objects of another entity would come from.
    private static func destinationRefusal(
        _ old: RelationshipDescription, _ new: RelationshipDescription, entity: String, source: ManagedObjectModel,
        destination: ManagedObjectModel, matches: [String: String]
    ) -> String? {
        guard let mapped = matches[old.destinationEntityName] else {
            return "\(entity).\(new.name): its old destination \(old.destinationEntityName) is gone from the new model"
        }
        guard let oldDestination = destination.entityID(named: mapped),
            let newDestination = destination.entityID(named: new.destinationEntityName)
        else { return nil }
        if destination.entity(oldDestination, isKindOf: newDestination) { return nil }
        return
            "\(entity).\(new.name): its destination changed from \(old.destinationEntityName) to \(new.destinationEntityName); "
            + "Core Data cannot infer that (a mapping model can)"
    }
}
