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

    func model(from root: XMLElementTree) throws(ObjectGraphError) -> ManagedObjectModel {
        guard root.name == "model" else {
            throw failure(
                at: root, "root element is <\(root.name)>, not <model>; this is not an Xcode model contents file")
        }
        var entities: [EntityDescription] = []
        var templates: [FetchRequestTemplate] = []
        var configurations: [ModelConfiguration] = []
        for child in root.children {
            switch child.name {
            case "entity": entities.append(try entity(from: child))
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

    private func entity(from element: XMLElementTree) throws(ObjectGraphError) -> EntityDescription {
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
            case "attribute": entity.attributes.append(try attribute(from: child, context))
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
            default: continue  // compoundIndexes, fetchIndex: store hints the model does not hold.
            }
        }
        return entity
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
