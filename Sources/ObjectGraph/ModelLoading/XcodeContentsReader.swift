import Foundation

/// Turns the element tree of one Xcode `contents` file into a ``ManagedObjectModel``.
///
/// Attributes Xcode writes that the model does not hold (`syncable`, `indexed`,
/// `usesScalarValueType`, `codeGenerationType`, …) and unknown elements are skipped, so files from
/// newer Xcode versions still load. Absent booleans are NO: Xcode writes `optional="YES"` and omits
/// the attribute for a required property. A value, used for one file on one thread.
struct XcodeContentsReader {
    /// The file's path, the prefix of every error.
    let source: String
    /// The model's `<composite>` types by name.
    var compositeTypes: [String: XMLElementTree] = [:]

    func model(from root: XMLElementTree) throws(ObjectGraphError) -> ManagedObjectModel {
        guard root.name == "model" else {
            throw failure(
                at: root, "root element is <\(root.name)>, not <model>; this is not an Xcode model contents file")
        }
        var entities: [EntityDescription] = []
        var templates: [FetchRequestTemplate] = []
        var configurations: [ModelConfiguration] = []
        // Composite types sit at model level, beside the entities that use them.
        var compositeTypes: [String: XMLElementTree] = [:]
        for child in root.children where child.name == "composite" {
            guard let name = nonEmpty(child.attributes["name"]) else {
                throw failure(at: child, "<composite> has no name")
            }
            compositeTypes[name] = child
        }
        let reader = XcodeContentsReader(source: source, compositeTypes: compositeTypes)
        for child in root.children {
            switch child.name {
            case "entity": entities.append(try reader.entity(from: child))
            case "fetchRequest": templates.append(try template(from: child))
            case "configuration": configurations.append(try configuration(from: child))
            default: continue  // <elements> is layout only.
            }
        }
        do {
            return try ManagedObjectModel(
                entities: entities, fetchRequestTemplates: templates, configurations: configurations,
                versionIdentifier: nonEmpty(root.attributes["userDefinedModelVersionIdentifier"]))
        } catch {
            throw ObjectGraphError(error.code, "\(source): \(error.message)")
        }
    }

    // MARK: - Entities

    fileprivate func entity(from element: XMLElementTree) throws(ObjectGraphError) -> EntityDescription {
        guard let name = nonEmpty(element.attributes["name"]) else {
            throw failure(at: element, "<entity> has no name")
        }
        let context = "in entity \(name)"
        var entity = EntityDescription(
            name: name, parentName: nonEmpty(element.attributes["parentEntity"]),
            isAbstract: try flag("isAbstract", of: element, context),
            representedClassName: nonEmpty(element.attributes["representedClassName"]),
            renamingIdentifier: nonEmpty(element.attributes["elementID"]),
            versionHashModifier: nonEmpty(element.attributes["versionHashModifier"]))
        for child in element.children {
            switch child.name {
            case "attribute" where child.attributes["attributeType"] == "Composite":
                entity.composites.append(try composite(from: child, context, depth: 1))
            case "attribute": entity.attributes.append(try attribute(from: child, context))
            case "fetchIndex": entity.fetchIndexes.append(try fetchIndex(from: child, context))
            case "relationship": entity.relationships.append(try relationship(from: child, context))
            case "fetchedProperty": entity.fetchedProperties.append(try fetchedProperty(from: child, context))
            case "userInfo": entity.userInfo = try userInfo(from: child, "\(element.tagDescription)")
            case "uniquenessConstraints":
                for constraint in child.children(named: "uniquenessConstraint") {
                    var names: [String] = []
                    for part in constraint.children(named: "constraint") {
                        guard let value = nonEmpty(part.attributes["value"]) else {
                            throw failure(at: part, "<constraint> \(context) has no value")
                        }
                        names.append(value)
                    }
                    entity.uniquenessConstraints.append(names)
                }
            default: continue  // compoundIndexes: a store hint the model does not hold.
            }
        }
        return entity
    }

    // MARK: - Composite attributes and fetch indexes

    /// An attribute of type Composite: its elements are those of the `<composite>` type it names
    /// (`composite="Author"`), which may name further composites, at most
    /// ``CompositeAttributeDescription/maximumDepth`` deep (which also ends a type that names itself).
    private func composite(from element: XMLElementTree, _ context: String, depth: Int) throws(ObjectGraphError)
        -> CompositeAttributeDescription
    {
        guard let name = nonEmpty(element.attributes["name"]) else {
            throw failure(at: element, "<attribute> \(context) has no name")
        }
        let here = "\(element.tagDescription) \(context)"
        guard depth <= CompositeAttributeDescription.maximumDepth else {
            throw failure(
                at: element, "\(here) nests composites more than \(CompositeAttributeDescription.maximumDepth) deep")
        }
        guard let typeName = nonEmpty(element.attributes["composite"]) else {
            throw failure(at: element, "\(here) is a Composite attribute that names no composite")
        }
        guard let type = compositeTypes[typeName] else {
            throw failure(at: element, "\(here) names composite \(typeName), which the model does not declare")
        }
        var elements: [CompositeAttributeDescription.Element] = []
        let inner = "in composite \(typeName)"
        for child in type.children(named: "attribute") {
            if child.attributes["attributeType"] == "Composite" {
                elements.append(.composite(try composite(from: child, inner, depth: depth + 1)))
            } else {
                elements.append(.attribute(try attribute(from: child, inner)))
            }
        }
        var composite = CompositeAttributeDescription(
            name: name, isOptional: try flag("optional", of: element, here),
            isTransient: try flag("transient", of: element, here), elements: elements,
            renamingIdentifier: nonEmpty(element.attributes["elementID"]),
            versionHashModifier: nonEmpty(element.attributes["versionHashModifier"]), typeName: typeName)
        if let info = element.child(named: "userInfo") {
            composite.userInfo = try userInfo(from: info, here)
        }
        return composite
    }

    private func fetchIndex(from element: XMLElementTree, _ context: String) throws(ObjectGraphError)
        -> FetchIndexDescription
    {
        guard let name = nonEmpty(element.attributes["name"]) else {
            throw failure(at: element, "<fetchIndex> \(context) has no name")
        }
        var elements: [FetchIndexDescription.Element] = []
        for part in element.children(named: "fetchIndexElement") {
            guard let property = nonEmpty(part.attributes["property"]) else {
                throw failure(at: part, "<fetchIndexElement> of fetch index \(name) \(context) has no property")
            }
            elements.append(
                FetchIndexDescription.Element(
                    property: property, isAscending: part.attributes["order"] != "descending",
                    isRTree: part.attributes["type"] == "RTree"))
        }
        return FetchIndexDescription(name: name, elements: elements)
    }

    // MARK: - Attributes

    private func attribute(
        from element: XMLElementTree, _ context: String
    ) throws(ObjectGraphError) -> AttributeDescription {
        guard let name = nonEmpty(element.attributes["name"]) else {
            throw failure(at: element, "<attribute> \(context) has no name")
        }
        let here = "\(element.tagDescription) \(context)"
        guard let typeName = element.attributes["attributeType"] else {
            throw failure(at: element, "\(here) has no attributeType")
        }
        guard let type = AttributeType(rawValue: typeName) else {
            throw failure(at: element, "\(here) has unknown attributeType \"\(typeName)\"")
        }
        var attribute = AttributeDescription(
            name: name, type: type, isOptional: try flag("optional", of: element, here),
            isTransient: try flag("transient", of: element, here),
            allowsExternalBinaryDataStorage: try flag("allowsExternalBinaryDataStorage", of: element, here),
            valueTransformerName: nonEmpty(element.attributes["valueTransformerName"]),
            renamingIdentifier: nonEmpty(element.attributes["elementID"]),
            versionHashModifier: nonEmpty(element.attributes["versionHashModifier"]),
            preservesValueInHistoryOnDeletion: try flag("preserveAfterDeletion", of: element, here),
            valueClassName: nonEmpty(element.attributes["customClassName"]))
        if try flag("derived", of: element, here) {
            attribute.derivationExpression = element.attributes["derivationExpression"] ?? ""
        }
        attribute.defaultValue = try value(
            "default", of: element, type: type, here, parse: XcodeValueFormat.defaultValue)
        attribute.minValue = try value("min", of: element, type: type, here, parse: XcodeValueFormat.bound)
        attribute.maxValue = try value("max", of: element, type: type, here, parse: XcodeValueFormat.bound)
        if let info = element.child(named: "userInfo") {
            attribute.userInfo = try userInfo(from: info, here)
        }
        return attribute
    }

    /// Reads `<prefix>ValueString`, or for dates `<prefix>DateTimeInterval` first (Xcode writes
    /// both; the string is a display form that may drop seconds).
    private func value(
        _ prefix: String, of element: XMLElementTree, type: AttributeType, _ here: String,
        parse: (String, AttributeType) -> AttributeValue?
    ) throws(ObjectGraphError) -> AttributeValue? {
        if type == .date, let interval = element.attributes["\(prefix)DateTimeInterval"] {
            guard let date = XcodeValueFormat.date(fromInterval: interval) else {
                throw failure(
                    at: element, "\(here) has \(prefix)DateTimeInterval \"\(interval)\", which is not a number")
            }
            return .date(date)
        }
        guard let string = element.attributes["\(prefix)ValueString"] else { return nil }
        guard let value = parse(string, type) else {
            throw failure(
                at: element,
                "\(here) has \(prefix)ValueString \"\(string)\", which is not a valid \(prefix == "default" ? "value" : "bound") "
                    + "for attributeType \(type.rawValue)")
        }
        return value
    }

    // MARK: - Relationships and fetched properties

    private func relationship(
        from element: XMLElementTree, _ context: String
    ) throws(ObjectGraphError) -> RelationshipDescription {
        guard let name = nonEmpty(element.attributes["name"]) else {
            throw failure(at: element, "<relationship> \(context) has no name")
        }
        let here = "\(element.tagDescription) \(context)"
        guard let destination = nonEmpty(element.attributes["destinationEntity"]) else {
            throw failure(at: element, "\(here) has no destinationEntity")
        }
        var rule = DeleteRule.nullify
        if let ruleName = element.attributes["deletionRule"] {
            guard let named = DeleteRule(rawValue: ruleName) else {
                throw failure(
                    at: element,
                    "\(here) has unknown deletionRule \"\(ruleName)\" (expected Nullify, Cascade, Deny or No Action)")
            }
            rule = named
        }
        var relationship = RelationshipDescription(
            name: name, destinationEntityName: destination,
            inverseName: nonEmpty(element.attributes["inverseName"]),
            isToMany: try flag("toMany", of: element, here), isOrdered: try flag("ordered", of: element, here),
            isOptional: try flag("optional", of: element, here),
            isTransient: try flag("transient", of: element, here),
            minCount: try count("minCount", of: element, here) ?? 0,
            maxCount: try count("maxCount", of: element, here), deleteRule: rule,
            renamingIdentifier: nonEmpty(element.attributes["elementID"]),
            versionHashModifier: nonEmpty(element.attributes["versionHashModifier"]))
        if let info = element.child(named: "userInfo") {
            relationship.userInfo = try userInfo(from: info, here)
        }
        return relationship
    }

    private func fetchedProperty(
        from element: XMLElementTree, _ context: String
    ) throws(ObjectGraphError) -> FetchedPropertyDescription {
        guard let name = nonEmpty(element.attributes["name"]) else {
            throw failure(at: element, "<fetchedProperty> \(context) has no name")
        }
        let here = "\(element.tagDescription) \(context)"
        guard let request = element.child(named: "fetchRequest") else {
            throw failure(at: element, "\(here) has no <fetchRequest>")
        }
        guard let destination = nonEmpty(request.attributes["entity"]) else {
            throw failure(at: request, "<fetchRequest> of \(here) has no entity")
        }
        var property = FetchedPropertyDescription(
            name: name, destinationEntityName: destination,
            predicateString: request.attributes["predicateString"] ?? "",
            isOptional: try flag("optional", of: element, here))
        if let info = element.child(named: "userInfo") {
            property.userInfo = try userInfo(from: info, here)
        }
        return property
    }

    // MARK: - Model-level elements

    private func template(from element: XMLElementTree) throws(ObjectGraphError) -> FetchRequestTemplate {
        guard let name = nonEmpty(element.attributes["name"]) else {
            throw failure(at: element, "<fetchRequest> has no name")
        }
        guard let entity = nonEmpty(element.attributes["entity"]) else {
            throw failure(at: element, "\(element.tagDescription) has no entity")
        }
        var options = element.attributes
        for key in ["name", "entity", "predicateString"] { options[key] = nil }
        return FetchRequestTemplate(
            name: name, entityName: entity, predicateString: element.attributes["predicateString"],
            options: options)
    }

    private func configuration(from element: XMLElementTree) throws(ObjectGraphError) -> ModelConfiguration {
        guard let name = nonEmpty(element.attributes["name"]) else {
            throw failure(at: element, "<configuration> has no name")
        }
        var members: [String] = []
        for member in element.children(named: "memberEntity") {
            guard let entity = nonEmpty(member.attributes["name"]) else {
                throw failure(at: member, "<memberEntity> in configuration \(name) has no name")
            }
            members.append(entity)
        }
        return ModelConfiguration(name: name, entityNames: members)
    }

    // MARK: - Shared pieces

    private func userInfo(from element: XMLElementTree, _ owner: String) throws(ObjectGraphError) -> [String: String] {
        var info: [String: String] = [:]
        for entry in element.children(named: "entry") {
            guard let key = entry.attributes["key"] else {
                throw failure(at: entry, "<entry> in the userInfo of \(owner) has no key")
            }
            info[key] = entry.attributes["value"] ?? ""
        }
        return info
    }

    /// A YES/NO attribute; absent means NO.
    private func flag(_ name: String, of element: XMLElementTree, _ here: String) throws(ObjectGraphError) -> Bool {
        switch element.attributes[name] {
        case nil, "NO": return false
        case "YES": return true
        case let other?:
            throw failure(at: element, "\(here) has \(name)=\"\(other)\"; expected YES or NO")
        }
    }

    private func count(_ name: String, of element: XMLElementTree, _ here: String) throws(ObjectGraphError) -> Int? {
        guard let string = element.attributes[name] else { return nil }
        guard let value = Int(string), value >= 0 else {
            throw failure(at: element, "\(here) has \(name)=\"\(string)\"; expected a whole number of 0 or more")
        }
        return value
    }

    private func nonEmpty(_ string: String?) -> String? {
        guard let string, !string.isEmpty else { return nil }
        return string
    }

    private func failure(at element: XMLElementTree, _ message: String) -> ObjectGraphError {
        let line = element.line > 0 ? "line \(element.line): " : ""
        return ObjectGraphError(.invalidModel, "\(source): \(line)\(message)")
    }
}
