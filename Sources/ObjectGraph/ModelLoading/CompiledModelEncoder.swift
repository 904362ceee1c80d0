import Foundation

/// Writes a model as the keyed archive of `NSManagedObjectModel` that Core Data caches in a SQLite
/// store (`Z_MODELCACHE`), in the layout the corpus's caches show (``CompiledModelDecoder`` reads
/// it back): the model's entities in a known-keys dictionary; each entity with its name, class,
/// parent and subentities, user info, uniqueness constraints, renaming identifier and version
/// hash modifier, and every property it has (inherited ones as copies owned by it, as Core Data
/// archives them); each attribute with its type, value class, optionality, transience, default,
/// transformer, flags (external storage, preserve after deletion) and renaming identifier; each
/// relationship with its destination, inverse, counts, order and delete rule.
///
/// Left out (docs/MIGRATION.md): fetched properties, fetch request templates, configurations and
/// validation predicates (minimum and maximum), none of which is part of an entity's version hash,
/// which the cached model must reproduce. A derivation is part of it (VersionHash), and Core Data
/// archives it as an expression tree this writer does not make: a model with a derived attribute
/// gets no cache (nil), as stores Core Data wrote before it kept caches have none.
///
/// Stateless; safe from any thread.
public enum CompiledModelEncoder {
    static let emptySlotToken = "__empty_slot_token_4c24_98dc_ac1e_b773__"

    /// The model's cache, or nil when the model has what the cache could not reproduce.
    public static func encode(_ model: ManagedObjectModel) -> Data? {
        guard !model.entities.contains(where: { $0.attributes.contains { $0.derivationExpression != nil } }) else {
            return nil
        }
        var archive = KeyedArchiveWriter()
        let root = archive.reserve()
        let entities = model.entities.sorted { $0.name < $1.name }
        var entityUIDs: [String: Int] = [:]
        for entity in entities { entityUIDs[entity.name] = archive.reserve() }
        // Every (entity, property) an entity has, inherited ones included, gets an object of its
        // own: relationships refer to their inverses' objects before those are written.
        var propertyUIDs: [String: [String: Int]] = [:]
        for entity in entities {
            var names: [String: Int] = [:]
            for attribute in entity.allAttributes where attribute.composite == nil {
                names[attribute.name] = archive.reserve()
            }
            for composite in entity.allComposites { names[composite.name] = archive.reserve() }
            for relationship in entity.allRelationships { names[relationship.name] = archive.reserve() }
            propertyUIDs[entity.name] = names
        }
        for entity in entities {
            let uid = entityUIDs[entity.name]!
            var properties: [(PropertyListValue, PropertyListValue)] = []
            for attribute in entity.allAttributes.sorted(by: { $0.name < $1.name }) where attribute.composite == nil {
                let property = propertyUIDs[entity.name]![attribute.name]!
                write(attribute, as: property, entity: uid, into: &archive)
                properties.append((archive.string(attribute.name), .uid(property)))
            }
            for composite in entity.allComposites.sorted(by: { $0.name < $1.name }) {
                let property = propertyUIDs[entity.name]![composite.name]!
                write(composite, as: property, entity: uid, into: &archive)
                properties.append((archive.string(composite.name), .uid(property)))
            }
            for relationship in entity.allRelationships.sorted(by: { $0.name < $1.name }) {
                let property = propertyUIDs[entity.name]![relationship.name]!
                let inverse = relationship.inverseName.flatMap { propertyUIDs[relationship.destinationEntityName]?[$0] }
                write(
                    relationship, as: property, entity: uid,
                    destination: entityUIDs[relationship.destinationEntityName],
                    inverse: inverse, into: &archive)
                properties.append((archive.string(relationship.name), .uid(property)))
            }
            var subentities: [(PropertyListValue, PropertyListValue)] = []
            for child in entity.subentityIDs.map({ model[$0].name }).sorted() {
                subentities.append((archive.string(child), .uid(entityUIDs[child]!)))
            }
            var fields: [(String, PropertyListValue)] = [
                ("NSEntityName", archive.string(entity.name)),
                ("NSClassNameForEntity", archive.string(entity.representedClassName)),
                ("NSUserInfo", userInfo(entity.userInfo, into: &archive)),
                ("NSSubentities", archive.dictionary(subentities, className: "NSMutableDictionary")),
                ("NSVersionHashModifier", archive.string(entity.versionHashModifier)),
                ("NSProperties", archive.dictionary(properties, className: "NSMutableDictionary")),
                ("NSRenamingIdentifier", archive.string(entity.renamingIdentifier ?? entity.name)),
                ("NSManagedObjectModel", .uid(root)),
                ("NSSuperentity", entity.parentName.flatMap { entityUIDs[$0] }.map(PropertyListValue.uid) ?? .uid(0))
            ]
            if entity.isAbstract { fields.append(("NSIsAbstract", .boolean(true))) }
            if !entity.fetchIndexes.isEmpty {
                var indexes: [PropertyListValue] = []
                for index in entity.fetchIndexes {
                    let indexUID = archive.reserve()
                    var elements: [PropertyListValue] = []
                    for element in index.elements {
                        elements.append(
                            archive.add(
                                className: "NSFetchIndexElementDescription",
                                classes: ["NSFetchIndexElementDescription", "NSObject"],
                                fields: [
                                    ("NSPropertyName", archive.string(element.property)),
                                    ("NSFetchIndexElementType", .integer(element.isRTree ? 1 : 0)),
                                    ("NSFetchIndexDescription", .uid(indexUID)),
                                    ("NSAscending", .boolean(element.isAscending))
                                ]))
                    }
                    archive.set(
                        indexUID, className: "NSFetchIndexDescription",
                        classes: ["NSFetchIndexDescription", "NSObject"],
                        fields: [
                            ("NSIndexName", archive.string(index.name)), ("NSPartialIndexPredicate", .uid(0)),
                            ("NSIndexElements", archive.array(elements)), ("NSEntity", .uid(uid))
                        ])
                    indexes.append(.uid(indexUID))
                }
                fields.append(("NSFetchIndexDescriptions", archive.array(indexes, className: "NSMutableArray")))
            }
            if !entity.uniquenessConstraints.isEmpty {
                var tuples: [PropertyListValue] = []
                for constraint in entity.uniquenessConstraints {
                    tuples.append(archive.array(constraint.map { archive.string($0) }, className: "NSMutableArray"))
                }
                fields.append(("NSUniqueTuples", archive.array(tuples, className: "NSMutableArray")))
            }
            archive.set(
                uid, className: "NSEntityDescription", classes: ["NSEntityDescription", "NSObject"], fields: fields)
        }
        // The entities by name: Core Data's known-keys dictionary, keys and values in name order.
        let keys = archive.array(entities.map { archive.string($0.name) })
        let mapping = archive.add(
            className: "NSKnownKeysMappingStrategy1",
            classes: ["NSKnownKeysMappingStrategy1", "NSKnownKeysMappingStrategy", "NSObject"],
            fields: [("length", .integer(Int64(entities.count))), ("keys", keys), ("version", .integer(1))])
        let values = archive.array(entities.map { .uid(entityUIDs[$0.name]!) })
        let byName = archive.add(
            className: "NSKnownKeysDictionary1",
            classes: [
                "NSKnownKeysDictionary1", "NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"
            ],
            fields: [
                ("values", values), ("searchMapping", mapping), ("emptyToken", archive.string(emptySlotToken)),
                ("version", .integer(1))
            ])
        let identifiers = archive.add(
            className: "NSSet", classes: ["NSSet", "NSObject"],
            fields: [("NS.objects", .array([archive.string(model.versionIdentifier ?? "")]))])
        archive.set(
            root, className: "NSManagedObjectModel", classes: ["NSManagedObjectModel", "NSObject"],
            fields: [
                ("NSEntities", byName), ("NSFetchRequestTemplates", .uid(0)), ("NSVersionIdentifiers", identifiers)
            ])
        return archive.finish(root: root)
    }

    // MARK: - Properties

    /// Core Data's `_P` flags as the corpus shows them: 0xF1, plus 2 when optional, 8 when transient.
    private static func flags(optional: Bool, transient: Bool) -> Int64 {
        0xF1 | (optional ? 2 : 0) | (transient ? 8 : 0)
    }

    private static func write(
        _ attribute: AttributeDescription, as uid: Int, entity: Int, into archive: inout KeyedArchiveWriter
    ) {
        var bits: Int64 = 0
        if attribute.allowsExternalBinaryDataStorage { bits |= 4 }
        if attribute.preservesValueInHistoryOnDeletion { bits |= 16 }
        var fields: [(String, PropertyListValue)] = [
            ("NSPropertyName", archive.string(attribute.name)), ("NSEntity", .uid(entity)),
            ("NSAttributeType", .integer(Int64(attribute.type.coreDataCode))),
            ("NSAttributeValueClassName", archive.string(valueClassName(attribute))),
            ("NSDefaultValue", attribute.defaultValue.map { defaultValue($0, into: &archive) } ?? .uid(0)),
            ("NSValueTransformerName", archive.string(attribute.valueTransformerName)),
            ("NSFlagsKey", .integer(bits)),
            ("NSRenamingIdentifier", archive.string(attribute.renamingIdentifier ?? attribute.name)),
            ("_P", .integer(flags(optional: attribute.isOptional, transient: attribute.isTransient)))
        ]
        if attribute.isOptional { fields.append(("NSIsOptional", .boolean(true))) }
        if attribute.isTransient { fields.append(("NSIsTransient", .boolean(true))) }
        if let modifier = attribute.versionHashModifier {
            fields.append(("NSVersionHashModifier", archive.string(modifier)))
        }
        if !attribute.userInfo.isEmpty { fields.append(("NSUserInfo", userInfo(attribute.userInfo, into: &archive))) }
        archive.set(
            uid, className: "NSAttributeDescription",
            classes: ["NSAttributeDescription", "NSPropertyDescription", "NSObject"], fields: fields)
    }

    /// A composite attribute as SwiftData's caches show it: type 2100, value class NSDictionary,
    /// its elements (attribute descriptions owned by the entity, nested composites alike) in
    /// declaration order under NSCompositeElements.
    private static func write(
        _ composite: CompositeAttributeDescription, as uid: Int, entity: Int, into archive: inout KeyedArchiveWriter
    ) {
        var elements: [PropertyListValue] = []
        for element in composite.elements {
            let elementUID = archive.reserve()
            switch element {
            case .attribute(let attribute): write(attribute, as: elementUID, entity: entity, into: &archive)
            case .composite(let inner): write(inner, as: elementUID, entity: entity, into: &archive)
            }
            elements.append(.uid(elementUID))
        }
        var fields: [(String, PropertyListValue)] = [
            ("NSPropertyName", archive.string(composite.name)), ("NSEntity", .uid(entity)),
            ("NSAttributeType", .integer(2100)), ("NSAttributeValueClassName", archive.string("NSDictionary")),
            ("NSDefaultValue", .uid(0)), ("NSValueTransformerName", .uid(0)), ("NSFlagsKey", .integer(0)),
            ("NSCompositeElements", archive.array(elements)),
            ("NSRenamingIdentifier", archive.string(composite.renamingIdentifier ?? composite.name)),
            ("_P", .integer(flags(optional: composite.isOptional, transient: composite.isTransient)))
        ]
        if composite.isOptional { fields.append(("NSIsOptional", .boolean(true))) }
        if composite.isTransient { fields.append(("NSIsTransient", .boolean(true))) }
        if let modifier = composite.versionHashModifier {
            fields.append(("NSVersionHashModifier", archive.string(modifier)))
        }
        if !composite.userInfo.isEmpty { fields.append(("NSUserInfo", userInfo(composite.userInfo, into: &archive))) }
        archive.set(
            uid, className: "NSCompositeAttributeDescription",
            classes: ["NSCompositeAttributeDescription", "NSAttributeDescription", "NSPropertyDescription", "NSObject"],
            fields: fields)
    }

    private static func write(
        _ relationship: RelationshipDescription, as uid: Int, entity: Int, destination: Int?, inverse: Int?,
        into archive: inout KeyedArchiveWriter
    ) {
        let rule: Int64 =
            switch relationship.deleteRule {
            case .noAction: 0
            case .nullify: 1
            case .cascade: 2
            case .deny: 3
            }
        var fields: [(String, PropertyListValue)] = [
            ("NSPropertyName", archive.string(relationship.name)), ("NSEntity", .uid(entity)),
            ("NSDestinationEntity", destination.map(PropertyListValue.uid) ?? .uid(0)),
            ("_NSDestinationEntityName", archive.string(relationship.destinationEntityName)),
            ("NSInverseRelationship", inverse.map(PropertyListValue.uid) ?? .uid(0)),
            ("_NSInverseRelationshipName", archive.string(relationship.inverseName)),
            ("NSMaxCount", .integer(Int64(relationship.maxCount))),
            ("NSMinCount", .integer(Int64(relationship.minCount))),
            ("NSDeleteRule", .integer(rule)),
            ("NSRenamingIdentifier", archive.string(relationship.renamingIdentifier ?? relationship.name)),
            ("_P", .integer(flags(optional: relationship.isOptional, transient: relationship.isTransient)))
        ]
        if relationship.isOptional { fields.append(("NSIsOptional", .boolean(true))) }
        if relationship.isTransient { fields.append(("NSIsTransient", .boolean(true))) }
        if relationship.isOrdered { fields.append(("NSIsOrdered", .boolean(true))) }
        if let modifier = relationship.versionHashModifier {
            fields.append(("NSVersionHashModifier", archive.string(modifier)))
        }
        if !relationship.userInfo.isEmpty {
            fields.append(("NSUserInfo", userInfo(relationship.userInfo, into: &archive)))
        }
        archive.set(
            uid, className: "NSRelationshipDescription",
            classes: ["NSRelationshipDescription", "NSPropertyDescription", "NSObject"],
            fields: fields)
    }

    /// The class Core Data names for an attribute's values.
    private static func valueClassName(_ attribute: AttributeDescription) -> String? {
        switch attribute.type {
        case .integer16, .integer32, .integer64, .double, .float, .boolean: "NSNumber"
        case .decimal: "NSDecimalNumber"
        case .string: "NSString"
        case .date: "NSDate"
        case .binaryData: "NSData"
        case .uuid: "NSUUID"
        case .uri: "NSURL"
        case .transformable: attribute.valueClassName
        case .objectID, .undefined: nil
        }
    }

    private static func defaultValue(_ value: AttributeValue, into archive: inout KeyedArchiveWriter)
        -> PropertyListValue
    {
        switch value {
        case .integer(let i): return archive.add(.integer(i))
        case .boolean(let b): return archive.add(.boolean(b))
        case .double(let d): return archive.add(.real(d))
        case .float(let f): return archive.add(.real(Double(f)))
        case .string(let s): return archive.string(s)
        case .date(let d):
            return archive.add(
                className: "NSDate", classes: ["NSDate", "NSObject"],
                fields: [("NS.time", .real(d.timeIntervalSinceReferenceDate))])
        case .uuid(let u):
            let bytes = withUnsafeBytes(of: u.uuid) { Data($0) }
            return archive.add(
                className: "NSUUID", classes: ["NSUUID", "NSObject"], fields: [("NS.uuidbytes", .data(bytes))])
        case .decimal(let d):
            return decimal(d, into: &archive) ?? .uid(0)
        case .data: return .uid(0)
        }
    }

    /// An NSDecimalNumber: a 128-bit mantissa in little-endian 16-bit words, an exponent, a sign.
    private static func decimal(_ value: Decimal, into archive: inout KeyedArchiveWriter) -> PropertyListValue? {
        guard value.isFinite else { return nil }
        let magnitude = value.magnitude
        var significand = magnitude.significand
        var exponent = magnitude.exponent
        // Whole significands only: scale up until the significand has no fraction (a few steps).
        var steps = 0
        while significand != significand.rounded(0, .plain) && steps < 40 {
            significand *= 10
            exponent -= 1
            steps += 1
        }
        guard let whole = UInt64(exactly: NSDecimalNumber(decimal: significand).doubleValue),
            (-128...127).contains(exponent)
        else { return nil }
        var mantissa = Data()
        for i in 0..<8 { mantissa.append(UInt8(truncatingIfNeeded: whole >> UInt64(8 * i))) }
        return archive.add(
            className: "NSDecimalNumber", classes: ["NSDecimalNumber", "NSNumber", "NSValue", "NSObject"],
            fields: [
                ("NS.mantissa", .data(mantissa)), ("NS.mantissa.bo", .integer(1)),
                ("NS.exponent", .integer(Int64(exponent))),
                ("NS.length", .integer(whole == 0 ? 0 : whole <= 0xFFFF ? 1 : whole <= 0xFFFF_FFFF ? 2 : 4)),
                ("NS.negative", .boolean(value < 0)), ("NS.compact", .boolean(true))
            ])
    }

    private static func userInfo(_ info: [String: String], into archive: inout KeyedArchiveWriter) -> PropertyListValue
    {
        let entries = info.sorted { $0.key < $1.key }.map { (archive.string($0.key), archive.string($0.value)) }
        return archive.dictionary(entries)
    }
}

private extension Decimal {
    func rounded(_ scale: Int, _ mode: NSDecimalNumber.RoundingMode) -> Decimal {
        var input = self
        var result = Decimal()
        NSDecimalRound(&result, &input, scale, mode)
        return result
    }
}
