import Foundation

/// Turns a keyed archive of an `NSManagedObjectModel` (a `.mom` file, or the model Core Data
/// caches in a SQLite store's Z_MODELCACHE) into a ``ManagedObjectModel``.
///
/// What the archive holds is read as Core Data wrote it: entities with their parents, abstractness,
/// class names, user info, uniqueness constraints, renaming identifiers and version hash modifiers;
/// attributes with their type, optionality, defaults, ranges (from the validation predicates Xcode
/// compiles them into), transformer and class names and flags; relationships with destination,
/// inverse, counts, delete rule and order; fetched properties and fetch request templates with
/// their predicates; configurations. Properties of a kind storefs does not model (composite
/// attributes, expression properties) are left out and listed in ``Result/notes``.
///
/// Every reference is followed one step at a time and checked; what does not fit (a class that is
/// not the one expected, a property without a name, a destination that is not an entity) gives
/// ``ObjectGraphError/Code/invalidModel`` naming the entity and property. A value, used once.
struct CompiledModelDecoder {
    struct Result {
        var model: ManagedObjectModel
        /// What was left out, one line each, for the caller's log.
        var notes: [String]
    }

    /// Proxies (an entity's view of an inherited property) chain at most this far.
    static let maximumProxyChain = 16

    let archive: KeyedArchive
    private var notes: [String] = []
    private var entityNames: [Int: String] = [:]
    /// Each entity's properties by name, inherited ones included, keyed by the entity's UID.
    private var propertyNames: [Int: Set<String>] = [:]

    init(archive: KeyedArchive) { self.archive = archive }

    mutating func decode() throws(ObjectGraphError) -> Result {
        let root = try archive.topObject("root")
        guard root.isKind(of: "NSManagedObjectModel") else {
            throw failure("the archive's root is \(root.className ?? "a plain value"), not an NSManagedObjectModel")
        }
        let entityEntries = try root.object("NSEntities")?.entries() ?? []
        for (key, entity) in entityEntries {
            guard entity.isKind(of: "NSEntityDescription") else {
                throw failure(
                    "entity \(key) is archived as \(entity.className ?? "a plain value"), not an NSEntityDescription")
            }
            entityNames[entity.uid] = try entity.string("NSEntityName") ?? key
            propertyNames[entity.uid] = Set(try entity.object("NSProperties")?.entries().map(\.key) ?? [])
        }
        var entities: [EntityDescription] = []
        for (_, entity) in entityEntries {
            entities.append(try decodeEntity(entity))
        }
        var templates: [FetchRequestTemplate] = []
        for (name, request) in try root.object("NSFetchRequestTemplates")?.entries() ?? [] {
            let (entity, predicate, options) = try decodeRequest(request, owner: "fetch request template \(name)")
            guard let entity else { throw failure("fetch request template \(name) names no entity") }
            templates.append(
                FetchRequestTemplate(name: name, entityName: entity, predicateString: predicate, options: options))
        }
        var configurations: [ModelConfiguration] = []
        for (name, members) in try root.object("NSConfigurations")?.entries() ?? [] {
            var names: [String] = []
            for member in try members.elements() {
                if let name = entityNames[member.uid] {
                    names.append(name)
                } else if let name = try member.stringValue() {
                    names.append(name)
                } else {
                    throw failure("configuration \(name) lists something that is not an entity")
                }
            }
            configurations.append(ModelConfiguration(name: name, entityNames: names.sorted()))
        }
        var identifiers: [String] = []
        for item in try root.object("NSVersionIdentifiers")?.elements() ?? [] {
            if let identifier = try item.stringValue() { identifiers.append(identifier) }
        }
        do {
            let model = try ManagedObjectModel(
                entities: entities.sorted { $0.name < $1.name },
                fetchRequestTemplates: templates.sorted { $0.name < $1.name },
                configurations: configurations.sorted { $0.name < $1.name },
                versionIdentifier: identifiers.sorted().first { !$0.isEmpty })
            return Result(model: model, notes: notes)
        } catch {
            throw failure(error.message)
        }
    }

    // MARK: - Entities

    private mutating func decodeEntity(_ object: ArchivedObject) throws(ObjectGraphError) -> EntityDescription {
        let name = entityNames[object.uid] ?? ""
        var parentName: String?
        var inherited: Set<String> = []
        if let parent = try object.object("NSSuperentity") {
            guard let known = entityNames[parent.uid] else {
                throw failure("entity \(name) has a superentity that is not one of the model's entities")
            }
            parentName = known
            inherited = propertyNames[parent.uid] ?? []
        }
        var entity = EntityDescription(
            name: name, parentName: parentName, isAbstract: object.bool("NSIsAbstract"),
            representedClassName: try object.string("NSClassNameForEntity"),
            userInfo: try userInfo(object, "entity \(name)"),
            renamingIdentifier: renaming(try object.string("NSRenamingIdentifier"), name),
            versionHashModifier: try object.string("NSVersionHashModifier"))
        if let tuples = try object.object("NSUniqueTuples") {
            for tuple in try tuples.elements() {
                var names: [String] = []
                for element in try tuple.elements() {
                    // Names, or (in models built in code) the properties themselves.
                    var propertyName = try element.stringValue()
                    if propertyName == nil { propertyName = try element.string("NSPropertyName") }
                    guard let propertyName else {
                        throw failure("entity \(name) has a uniqueness constraint on something that is not a property")
                    }
                    names.append(propertyName)
                }
                entity.uniquenessConstraints.append(names)
            }
        }
        for (key, property) in try object.object("NSProperties")?.entries() ?? [] {
            // An entity's archive lists inherited properties too, as proxies or as copies; Core
            // Data forbids redeclaring a parent's property, so a name the parent has is inherited.
            if property.isKind(of: "_NSPropertyDescriptionProxy") {
                try checkProxy(property, "\(name).\(key)")
                continue
            }
            if inherited.contains(key) { continue }
            let propertyName = try property.string("NSPropertyName") ?? key
            let here = "\(name).\(propertyName)"
            if property.isKind(of: "NSCompositeAttributeDescription") {
                if let composite = try decodeComposite(property, name: propertyName, here, depth: 1) {
                    entity.composites.append(composite)
                }
            } else if property.isKind(of: "NSAttributeDescription") {
                if let attribute = try decodeAttribute(property, name: propertyName, here) {
                    entity.attributes.append(attribute)
                }
            } else if property.isKind(of: "NSRelationshipDescription") {
                entity.relationships.append(try decodeRelationship(property, name: propertyName, here))
            } else if property.isKind(of: "NSFetchedPropertyDescription") {
                entity.fetchedProperties.append(try decodeFetchedProperty(property, name: propertyName, here))
            } else {
                notes.append(
                    "\(archive.source): \(here) is a \(property.className ?? "plain value"), which storefs does not model; left out"
                )
            }
        }
        if let indexes = try object.object("NSFetchIndexDescriptions") {
            for index in try indexes.elements() {
                entity.fetchIndexes.append(try decodeFetchIndex(index, "entity \(name)"))
            }
        }
        entity.attributes.sort { $0.name < $1.name }
        entity.composites.sort { $0.name < $1.name }
        entity.relationships.sort { $0.name < $1.name }
        entity.fetchedProperties.sort { $0.name < $1.name }
        return entity
    }

    /// A proxy must lead, through at most a few proxies, to a real property.
    private func checkProxy(_ proxy: ArchivedObject, _ here: String) throws(ObjectGraphError) {
        var current = proxy
        for _ in 0..<Self.maximumProxyChain {
            guard let next = try current.object("NSUnderlyingProperty") else {
                throw failure("\(here) is a proxy for nothing")
            }
            if !next.isKind(of: "_NSPropertyDescriptionProxy") { return }
            current = next
        }
        throw failure("\(here) is a chain of more than \(Self.maximumProxyChain) proxies")
    }

    // MARK: - Composite attributes and fetch indexes

    /// A composite attribute and its elements, in the order archived (Core Data's column order);
    /// nested composites at most ``CompositeAttributeDescription/maximumDepth`` deep. Elements of
    /// a kind storefs does not model are noted, and the composite kept without them.
    private mutating func decodeComposite(_ object: ArchivedObject, name: String, _ here: String, depth: Int)
        throws(ObjectGraphError) -> CompositeAttributeDescription?
    {
        guard depth <= CompositeAttributeDescription.maximumDepth else {
            throw failure("\(here) nests composites more than \(CompositeAttributeDescription.maximumDepth) deep")
        }
        var elements: [CompositeAttributeDescription.Element] = []
        for element in try object.object("NSCompositeElements")?.elements() ?? [] {
            guard let elementName = try element.string("NSPropertyName"), !elementName.isEmpty else {
                throw failure("\(here) has an element without a name")
            }
            let inner = "\(here).\(elementName)"
            if element.isKind(of: "NSCompositeAttributeDescription") {
                if let nested = try decodeComposite(element, name: elementName, inner, depth: depth + 1) {
                    elements.append(.composite(nested))
                }
            } else if element.isKind(of: "NSAttributeDescription") {
                if let attribute = try decodeAttribute(element, name: elementName, inner) {
                    elements.append(.attribute(attribute))
                }
            } else {
                notes.append(
                    "\(archive.source): \(inner) is a \(element.className ?? "plain value"), which storefs does not model; left out"
                )
            }
        }
        if let value = try object.object("NSDefaultValue"), let entries = try? value.entries(), !entries.isEmpty {
            notes.append("\(archive.source): the default value of composite \(here) is not kept (its elements' are)")
        }
        return CompositeAttributeDescription(
            name: name, isOptional: object.bool("NSIsOptional"), isTransient: object.bool("NSIsTransient"),
            elements: elements, userInfo: try userInfo(object, here),
            renamingIdentifier: renaming(try object.string("NSRenamingIdentifier"), name),
            versionHashModifier: try object.string("NSVersionHashModifier"))
    }

    private func decodeFetchIndex(_ object: ArchivedObject, _ owner: String) throws(ObjectGraphError)
        -> FetchIndexDescription
    {
        guard let name = try object.string("NSIndexName") else {
            throw failure("\(owner) has a fetch index without a name")
        }
        var elements: [FetchIndexDescription.Element] = []
        for element in try object.object("NSIndexElements")?.elements() ?? [] {
            var property = try element.string("NSPropertyName")
            if property == nil, let described = try element.object("NSProperty") {
                property = try described.string("NSPropertyName")
            }
            guard let property else { throw failure("\(owner): fetch index \(name) has an element without a property") }
            elements.append(
                FetchIndexDescription.Element(
                    property: property, isAscending: element["NSAscending"] == nil || element.bool("NSAscending"),
                    isRTree: element.integer("NSFetchIndexElementType") == 1))
        }
        let predicate = try object.object("NSPartialIndexPredicate").map { (p) throws(ObjectGraphError) in
            try ArchivedPredicateFormat.predicate(p)
        }
        return FetchIndexDescription(name: name, elements: elements, partialIndexPredicate: predicate)
    }

    // MARK: - Attributes

    /// Core Data's NSAttributeType codes.
    static let attributeTypes: [Int64: AttributeType] = [
        0: .undefined, 100: .integer16, 200: .integer32, 300: .integer64, 400: .decimal, 500: .double, 600: .float,
        700: .string, 800: .boolean, 900: .date, 1000: .binaryData, 1100: .uuid, 1200: .uri, 1800: .transformable,
        2000: .objectID
    ]

    /// Bits of NSFlagsKey, as the corpus shows them next to the Xcode models they came from.
    static let externalStorageFlag: Int64 = 4
    static let preserveAfterDeletionFlag: Int64 = 16

    private mutating func decodeAttribute(_ object: ArchivedObject, name: String, _ here: String)
        throws(ObjectGraphError)
        -> AttributeDescription?
    {
        let code = object.integer("NSAttributeType") ?? 0
        guard let type = Self.attributeTypes[code] else {
            notes.append(
                "\(archive.source): \(here) has attribute type \(code) (a composite attribute?), which storefs does not model; left out"
            )
            return nil
        }
        let flags = object.integer("NSFlagsKey") ?? 0
        var attribute = AttributeDescription(
            name: name, type: type, isOptional: object.bool("NSIsOptional"), isTransient: object.bool("NSIsTransient"),
            allowsExternalBinaryDataStorage: flags & Self.externalStorageFlag != 0,
            valueTransformerName: try object.string("NSValueTransformerName"),
            userInfo: try userInfo(object, here),
            renamingIdentifier: renaming(try object.string("NSRenamingIdentifier"), name),
            versionHashModifier: try object.string("NSVersionHashModifier"),
            preservesValueInHistoryOnDeletion: flags & Self.preserveAfterDeletionFlag != 0)
        if type == .transformable { attribute.valueClassName = try object.string("NSAttributeValueClassName") }
        if object.isKind(of: "NSDerivedAttributeDescription") {
            if let derivation = try object.object("NSDerivationExpression") {
                attribute.derivationExpression = try ArchivedPredicateFormat.expression(derivation)
            }
            // Core Data hashes a derived attribute's filtering predicate (VersionHash).
            if try object.object("NSFilteringPredicate") != nil {
                notes.append(unhashed(here, "has a filtering predicate"))
            }
        } else if object.bool("NSIsReadOnly") {
            notes.append(unhashed(here, "is read-only"))
        }
        if let value = try object.object("NSDefaultValue") {
            attribute.defaultValue = try defaultValue(value, type: type)
            if attribute.defaultValue == nil {
                notes.append(
                    "\(archive.source): the default value of \(here) (\(value.className ?? "a plain value")) cannot be kept"
                )
            }
        }
        if let rules = try object.object("NSValidationPredicates") {
            try readRange(from: rules.elements(), into: &attribute)
        }
        return attribute
    }

    /// A default value, in the representation the engine keeps for `type`; nil when it has none
    /// (a transformable's custom object, binary data).
    private func defaultValue(_ value: ArchivedObject, type: AttributeType) throws(ObjectGraphError) -> AttributeValue?
    {
        switch (type, value.value) {
        case (.integer16, .integer(let i)), (.integer32, .integer(let i)), (.integer64, .integer(let i)):
            guard let range = type.integerRange, range.contains(i) else { return nil }
            return .integer(i)
        case (.integer16, .boolean(let b)), (.integer32, .boolean(let b)), (.integer64, .boolean(let b)):
            return .integer(b ? 1 : 0)
        case (.boolean, .integer(let i)): return .boolean(i != 0)
        case (.boolean, .boolean(let b)): return .boolean(b)
        case (.double, .real(let d)): return .double(d)
        case (.double, .integer(let i)): return .double(Double(i))
        case (.float, .real(let d)): return .float(Float(d))
        case (.float, .integer(let i)): return .float(Float(i))
        case (.decimal, .integer(let i)): return .decimal(Decimal(i))
        case (.decimal, .real(let d)): return .decimal(Decimal(d))
        default: break
        }
        switch type {
        case .string, .uri:
            return try value.stringValue().map(AttributeValue.string)
        case .date:
            if value.isKind(of: "NSDate"), case .real(let t)? = value["NS.time"], t.isFinite {
                return .date(Date(timeIntervalSinceReferenceDate: t))
            }
        case .uuid:
            if value.isKind(of: "NSUUID"), case .data(let bytes)? = value["NS.uuidbytes"], bytes.count == 16 {
                let b = [UInt8](bytes)
                return .uuid(
                    UUID(
                        uuid: (
                            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                            b[14], b[15]
                        )))
            }
        case .decimal:
            return decimal(value).map(AttributeValue.decimal)
        default: break
        }
        return nil
    }

    /// An archived NSDecimalNumber whose mantissa fits in 64 bits.
    private func decimal(_ value: ArchivedObject) -> Decimal? {
        guard value.isKind(of: "NSDecimalNumber"), let exponent = value.integer("NS.exponent"),
            case .data(let mantissa)? = value["NS.mantissa"], (-128...127).contains(exponent)
        else { return nil }
        let bytes = [UInt8](mantissa)
        // Little-endian 16-bit words; beyond the first four the value does not fit a UInt64.
        guard bytes.count.isMultiple(of: 2), bytes.dropFirst(8).allSatisfy({ $0 == 0 }) else { return nil }
        var significand: UInt64 = 0
        for (i, byte) in bytes.prefix(8).enumerated() { significand |= UInt64(byte) << UInt64(8 * i) }
        let negative = value.bool("NS.negative")
        return Decimal(sign: negative ? .minus : .plus, exponent: Int(exponent), significand: Decimal(significand))
    }

    /// Xcode compiles an attribute's minimum and maximum into validation predicates
    /// (`length >= 3`, `SELF <= 10`); those come back as the range. Other rules are not modelled.
    private func readRange(from rules: [ArchivedObject], into attribute: inout AttributeDescription)
        throws(ObjectGraphError)
    {
        var pending = rules
        var visited = 0
        while let rule = pending.popLast() {
            visited += 1
            guard visited <= 256 else { return }
            if rule.isKind(of: "NSCompoundPredicate"), rule.integer("NSCompoundPredicateType") == 1 {
                pending += try rule.object("NSSubpredicates")?.elements() ?? []
                continue
            }
            guard rule.isKind(of: "NSComparisonPredicate"), let left = try rule.object("NSLeftExpression"),
                let right = try rule.object("NSRightExpression"), let op = try rule.object("NSPredicateOperator"),
                right.isKind(of: "NSConstantValueExpression"), let constant = try right.object("NSConstantValue")
            else { continue }
            let lhs = (try? ArchivedPredicateFormat.expression(left)) ?? ""
            let isLength = [AttributeType.string, .uri, .binaryData, .transformable].contains(attribute.type)
            guard lhs == (isLength ? "length" : "SELF") else { continue }
            let bound: AttributeValue?
            if isLength {
                bound = constant.value.integer.map(AttributeValue.integer)
            } else {
                bound = try defaultValue(constant, type: attribute.type)
            }
            switch op.integer("NSOperatorType") {
            case 3: attribute.minValue = bound ?? attribute.minValue
            case 1: attribute.maxValue = bound ?? attribute.maxValue
            default: continue
            }
        }
    }

    // MARK: - Relationships and fetched properties

    private mutating func decodeRelationship(_ object: ArchivedObject, name: String, _ here: String)
        throws(ObjectGraphError)
        -> RelationshipDescription
    {
        let destination: String
        if let entity = try object.object("NSDestinationEntity") {
            guard let known = entityNames[entity.uid] else {
                throw failure("\(here) has a destination that is not one of the model's entities")
            }
            destination = known
        } else if let known = try object.string("_NSDestinationEntityName") {
            destination = known
        } else {
            throw failure("\(here) has no destination entity")
        }
        var inverse: String?
        if let other = try object.object("NSInverseRelationship") {
            inverse = try other.string("NSPropertyName")
        }
        if inverse == nil { inverse = try object.string("_NSInverseRelationshipName") }
        // Counts are kept as archived (a model built in code may say -1 for "unbounded"): they are
        // part of the version hash.
        let maxCount = Int(clamping: object.integer("NSMaxCount") ?? 0)
        let minCount = Int(clamping: object.integer("NSMinCount") ?? 0)
        let rule: DeleteRule
        switch object.integer("NSDeleteRule") ?? 1 {
        case 0: rule = .noAction
        case 1: rule = .nullify
        case 2: rule = .cascade
        case 3: rule = .deny
        case let other: throw failure("\(here) has delete rule \(other); Core Data knows 0 to 3")
        }
        if object.bool("NSIsReadOnly") {
            notes.append(unhashed(here, "is read-only"))
        }
        return RelationshipDescription(
            name: name, destinationEntityName: destination, inverseName: inverse, isToMany: maxCount != 1,
            isOrdered: object.bool("NSIsOrdered"), isOptional: object.bool("NSIsOptional"),
            isTransient: object.bool("NSIsTransient"), minCount: max(0, minCount), maxCount: maxCount, deleteRule: rule,
            userInfo: try userInfo(object, here),
            renamingIdentifier: renaming(try object.string("NSRenamingIdentifier"), name),
            versionHashModifier: try object.string("NSVersionHashModifier"))
    }

    private func decodeFetchedProperty(_ object: ArchivedObject, name: String, _ here: String) throws(ObjectGraphError)
        -> FetchedPropertyDescription
    {
        guard let request = try object.object("NSFetchRequest") else { throw failure("\(here) has no fetch request") }
        let (entity, predicate, _) = try decodeRequest(request, owner: here)
        var destination = entity
        if destination == nil { destination = try object.string("_NSFetchRequestEntityName") }
        guard let destination else {
            throw failure("\(here) fetches no entity")
        }
        return FetchedPropertyDescription(
            name: name, destinationEntityName: destination, predicateString: predicate ?? "",
            isOptional: object.bool("NSIsOptional"), userInfo: try userInfo(object, here))
    }

    /// A fetch request's entity, predicate text and the options Xcode spells as attributes.
    private func decodeRequest(_ request: ArchivedObject, owner: String) throws(ObjectGraphError)
        -> (entity: String?, predicate: String?, options: [String: String])
    {
        guard request.isKind(of: "NSFetchRequest") else {
            throw failure("\(owner) is archived as \(request.className ?? "a plain value"), not an NSFetchRequest")
        }
        var entity: String?
        if let target = try request.object("NSEntity") {
            entity = entityNames[target.uid]
            guard entity != nil else {
                throw failure("\(owner) fetches something that is not one of the model's entities")
            }
        } else {
            entity = try request.string("NSEntityName")
        }
        let predicate = try request.object("NSPredicate").map { (p) throws(ObjectGraphError) in
            try ArchivedPredicateFormat.predicate(p)
        }
        var options: [String: String] = [:]
        if let limit = request.integer("NSFetchLimit"), limit > 0 { options["fetchLimit"] = String(limit) }
        if let batch = request.integer("NSBatchSize"), batch > 0 { options["fetchBatchSize"] = String(batch) }
        return (entity, predicate, options)
    }

    // MARK: - Shared pieces

    /// User info with every value as text (Xcode's userInfo entries are strings).
    private func userInfo(_ object: ArchivedObject, _ owner: String) throws(ObjectGraphError) -> [String: String] {
        guard let info = try object.object("NSUserInfo") else { return [:] }
        var result: [String: String] = [:]
        for (key, value) in try info.entries() {
            switch value.value {
            case .string(let s): result[key] = s
            case .integer(let i): result[key] = String(i)
            case .real(let d): result[key] = "\(d)"
            case .boolean(let b): result[key] = b ? "YES" : "NO"
            default: result[key] = try value.stringValue() ?? ""
            }
        }
        return result
    }

    /// Core Data archives the name itself when no renaming identifier was set; Xcode's
    /// `elementID` is only written when it differs.
    private func renaming(_ identifier: String?, _ name: String) -> String? {
        guard let identifier, !identifier.isEmpty, identifier != name else { return nil }
        return identifier
    }

    /// The note for a property whose `what` storefs does not model although Core Data hashes it.
    private func unhashed(_ here: String, _ what: String) -> String {
        let entity = here.prefix { $0 != "." }
        return
            "\(archive.source): \(here) \(what), which storefs does not model; the version hash of \(entity) will not be Core Data's"
    }

    private func failure(_ message: String) -> ObjectGraphError {
        ObjectGraphError(.invalidModel, "\(archive.source): \(message)")
    }
}
