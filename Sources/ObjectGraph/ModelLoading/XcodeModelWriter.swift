import Foundation

/// Writes a model as the `contents` XML of an Xcode `.xcdatamodel` folder.
///
/// The output follows what Xcode itself writes (attribute names and order, `optional="YES"` only
/// for optional properties, `maxCount="1"` on to-ones, dates as `…DateTimeInterval` plus a display
/// string) so that Xcode opens it, and every value is spelled so that ``XcodeModelLoader`` reads
/// back an equal model. Entities are written in name order, as Xcode does; properties, fetch
/// requests and configurations keep the model's order because the model compares them in order.
/// Stateless; safe from any thread.
public enum XcodeModelWriter {
    /// The model as Xcode `contents` XML that XcodeModelLoader (and Xcode) reads back to an equal
    /// model.
    public static func contents(of model: ManagedObjectModel) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
        out += tag(
            "model",
            [
                ("type", "com.apple.IDECoreDataModeler.DataModel"), ("documentVersion", "1.0"),
                ("minimumToolsVersion", "Automatic"), ("sourceLanguage", "Swift"),
                ("userDefinedModelVersionIdentifier", model.versionIdentifier ?? "")
            ], closed: false, depth: 0)
        let types = CompositeTypeNames(model)
        for entity in model.entities.sorted(by: { $0.name < $1.name }) {
            write(entity, types: types, into: &out)
        }
        for (name, composite) in types.declarations {
            out += tag("composite", [("name", name)], closed: composite.elements.isEmpty, depth: 1)
            if composite.elements.isEmpty { continue }
            for element in composite.elements {
                switch element {
                case .attribute(let attribute): write(attribute, into: &out)
                case .composite(let inner): write(inner, typeName: types.name(of: inner), into: &out)
                }
            }
            out += end("composite", depth: 1)
        }
        for template in model.fetchRequestTemplates {
            var attributes = [("name", template.name), ("entity", template.entityName)]
            if let predicate = template.predicateString { attributes.append(("predicateString", predicate)) }
            attributes += template.options.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            out += tag("fetchRequest", attributes, closed: true, depth: 1)
        }
        for configuration in model.configurations {
            if configuration.entityNames.isEmpty {
                out += tag("configuration", [("name", configuration.name)], closed: true, depth: 1)
                continue
            }
            out += tag("configuration", [("name", configuration.name)], closed: false, depth: 1)
            for member in configuration.entityNames {
                out += tag("memberEntity", [("name", member)], closed: true, depth: 2)
            }
            out += end("configuration", depth: 1)
        }
        out += "</model>\n"
        return out
    }

    // MARK: - Elements

    /// Names for the model's composite types: Xcode declares each once at model level and an
    /// attribute names its type. A composite read from a compiled model has no type name; it is
    /// named after the attribute (`author` → `Author`), with a number when two differ.
    private struct CompositeTypeNames {
        private(set) var declarations: [(name: String, composite: CompositeAttributeDescription)] = []

        init(_ model: ManagedObjectModel) {
            for entity in model.entities.sorted(by: { $0.name < $1.name }) {
                for composite in entity.composites { declare(composite) }
            }
        }

        /// The type's shape without the attribute's own name and flags.
        private static func shape(_ composite: CompositeAttributeDescription) -> [CompositeAttributeDescription.Element]
        {
            composite.elements
        }

        func name(of composite: CompositeAttributeDescription) -> String {
            let base = Self.baseName(composite)
            return declarations.first { $0.name.hasPrefix(base) && Self.shape($0.composite) == Self.shape(composite) }?
                .name ?? base
        }

        private static func baseName(_ composite: CompositeAttributeDescription) -> String {
            if let name = composite.typeName, !name.isEmpty { return name }
            return composite.name.prefix(1).uppercased() + composite.name.dropFirst()
        }

        private mutating func declare(_ composite: CompositeAttributeDescription) {
            for case .composite(let inner) in composite.elements { declare(inner) }
            let base = Self.baseName(composite)
            if declarations.contains(where: {
                $0.name.hasPrefix(base) && Self.shape($0.composite) == Self.shape(composite)
            }) {
                return
            }
            var name = base
            var n = 1
            while declarations.contains(where: { $0.name == name }) {
                name = base + String(n)
                n += 1
            }
            declarations.append((name, composite))
        }
    }

    /// An attribute of type Composite naming its type.
    private static func write(_ composite: CompositeAttributeDescription, typeName: String, into out: inout String) {
        var attributes = [("name", composite.name)]
        if composite.isOptional { attributes.append(("optional", "YES")) }
        if composite.isTransient { attributes.append(("transient", "YES")) }
        attributes.append(("attributeType", "Composite"))
        attributes.append(("composite", typeName))
        append("elementID", composite.renamingIdentifier, to: &attributes)
        append("versionHashModifier", composite.versionHashModifier, to: &attributes)
        element("attribute", attributes, userInfo: composite.userInfo, into: &out)
    }

    private static func write(_ entity: EntityDescription, types: CompositeTypeNames, into out: inout String) {
        var attributes = [("name", entity.name)]
        append("representedClassName", entity.representedClassName, to: &attributes)
        append("parentEntity", entity.parentName, to: &attributes)
        if entity.isAbstract { attributes.append(("isAbstract", "YES")) }
        append("elementID", entity.renamingIdentifier, to: &attributes)
        append("versionHashModifier", entity.versionHashModifier, to: &attributes)
        attributes.append(("syncable", "YES"))
        let isEmpty =
            entity.attributes.isEmpty && entity.relationships.isEmpty && entity.fetchedProperties.isEmpty
            && entity.userInfo.isEmpty && entity.uniquenessConstraints.isEmpty && entity.composites.isEmpty
            && entity.fetchIndexes.isEmpty
        out += tag("entity", attributes, closed: isEmpty, depth: 1)
        if isEmpty { return }
        for attribute in entity.attributes where attribute.composite == nil { write(attribute, into: &out) }
        for composite in entity.composites { write(composite, typeName: types.name(of: composite), into: &out) }
        for relationship in entity.relationships { write(relationship, into: &out) }
        for property in entity.fetchedProperties {
            var attributes = [("name", property.name)]
            if property.isOptional { attributes.append(("optional", "YES")) }
            attributes.append(("syncable", "YES"))
            out += tag("fetchedProperty", attributes, closed: false, depth: 2)
            var request = [("name", "fetchedPropertyFetchRequest"), ("entity", property.destinationEntityName)]
            if !property.predicateString.isEmpty {
                request.append(("predicateString", property.predicateString))
            }
            out += tag("fetchRequest", request, closed: true, depth: 3)
            write(property.userInfo, depth: 3, into: &out)
            out += end("fetchedProperty", depth: 2)
        }
        for index in entity.fetchIndexes {
            out += tag("fetchIndex", [("name", index.name)], closed: index.elements.isEmpty, depth: 2)
            if index.elements.isEmpty { continue }
            for element in index.elements {
                out += tag(
                    "fetchIndexElement",
                    [
                        ("property", element.property), ("type", element.isRTree ? "RTree" : "Binary"),
                        ("order", element.isAscending ? "ascending" : "descending")
                    ], closed: true, depth: 3)
            }
            out += end("fetchIndex", depth: 2)
        }
        if !entity.uniquenessConstraints.isEmpty {
            out += indent(2) + "<uniquenessConstraints>\n"
            for constraint in entity.uniquenessConstraints {
                out += indent(3) + "<uniquenessConstraint>\n"
                for name in constraint {
                    out += tag("constraint", [("value", name)], closed: true, depth: 4)
                }
                out += end("uniquenessConstraint", depth: 3)
            }
            out += end("uniquenessConstraints", depth: 2)
        }
        write(entity.userInfo, depth: 2, into: &out)
        out += end("entity", depth: 1)
    }

    private static func write(_ attribute: AttributeDescription, into out: inout String) {
        var attributes = [("name", attribute.name)]
        if attribute.isOptional { attributes.append(("optional", "YES")) }
        if attribute.isTransient { attributes.append(("transient", "YES")) }
        attributes.append(("attributeType", attribute.type.rawValue))
        if let expression = attribute.derivationExpression {
            attributes.append(("derived", "YES"))
            attributes.append(("derivationExpression", expression))
        }
        for (prefix, value) in [
            ("min", attribute.minValue), ("max", attribute.maxValue), ("default", attribute.defaultValue)
        ] {
            guard let value else { continue }
            if case .date(let date) = value {
                attributes.append(("\(prefix)DateTimeInterval", XcodeValueFormat.intervalString(for: date)))
            }
            if let string = XcodeValueFormat.string(for: value) {
                attributes.append(("\(prefix)ValueString", string))
            }
        }
        if attribute.allowsExternalBinaryDataStorage {
            attributes.append(("allowsExternalBinaryDataStorage", "YES"))
        }
        append("valueTransformerName", attribute.valueTransformerName, to: &attributes)
        append("customClassName", attribute.valueClassName, to: &attributes)
        if attribute.preservesValueInHistoryOnDeletion { attributes.append(("preserveAfterDeletion", "YES")) }
        append("elementID", attribute.renamingIdentifier, to: &attributes)
        append("versionHashModifier", attribute.versionHashModifier, to: &attributes)
        attributes.append(("syncable", "YES"))
        element("attribute", attributes, userInfo: attribute.userInfo, into: &out)
    }

    private static func write(_ relationship: RelationshipDescription, into out: inout String) {
        var attributes = [("name", relationship.name)]
        if relationship.isOptional { attributes.append(("optional", "YES")) }
        if relationship.isTransient { attributes.append(("transient", "YES")) }
        if relationship.isToMany { attributes.append(("toMany", "YES")) }
        if relationship.minCount != 0 { attributes.append(("minCount", String(relationship.minCount))) }
        // A to-one always carries maxCount (Xcode writes "1"); a to-many only when bounded, because
        // the loader's default for an absent maxCount is 1 for a to-one and 0 for a to-many. A
        // model built in code may say -1 for unbounded, which Xcode cannot spell.
        if !relationship.isToMany || relationship.maxCount > 0 {
            attributes.append(("maxCount", String(relationship.maxCount)))
        }
        attributes.append(("deletionRule", relationship.deleteRule.rawValue))
        if relationship.isOrdered { attributes.append(("ordered", "YES")) }
        attributes.append(("destinationEntity", relationship.destinationEntityName))
        if let inverse = relationship.inverseName {
            attributes.append(("inverseName", inverse))
            attributes.append(("inverseEntity", relationship.destinationEntityName))
        }
        append("elementID", relationship.renamingIdentifier, to: &attributes)
        append("versionHashModifier", relationship.versionHashModifier, to: &attributes)
        attributes.append(("syncable", "YES"))
        element("relationship", attributes, userInfo: relationship.userInfo, into: &out)
    }

    /// A property element: self-closing, or holding its userInfo.
    private static func element(
        _ name: String, _ attributes: [(String, String)], userInfo: [String: String], into out: inout String
    ) {
        out += tag(name, attributes, closed: userInfo.isEmpty, depth: 2)
        if userInfo.isEmpty { return }
        write(userInfo, depth: 3, into: &out)
        out += end(name, depth: 2)
    }

    private static func write(_ userInfo: [String: String], depth: Int, into out: inout String) {
        guard !userInfo.isEmpty else { return }
        out += indent(depth) + "<userInfo>\n"
        for (key, value) in userInfo.sorted(by: { $0.key < $1.key }) {
            out += tag("entry", [("key", key), ("value", value)], closed: true, depth: depth + 1)
        }
        out += end("userInfo", depth: depth)
    }

    // MARK: - XML text

    private static func append(_ name: String, _ value: String?, to attributes: inout [(String, String)]) {
        if let value, !value.isEmpty { attributes.append((name, value)) }
    }

    private static func tag(_ name: String, _ attributes: [(String, String)], closed: Bool, depth: Int) -> String {
        var text = indent(depth) + "<" + name
        for (key, value) in attributes {
            text += " \(key)=\"\(escaped(value))\""
        }
        return text + (closed ? "/>\n" : ">\n")
    }

    private static func end(_ name: String, depth: Int) -> String {
        indent(depth) + "</\(name)>\n"
    }

    private static func indent(_ depth: Int) -> String {
        String(repeating: "    ", count: depth)
    }

    /// Escapes an attribute value; tabs and line breaks become character references because a
    /// parser turns literal ones into spaces (XML attribute-value normalization).
    static func escaped(_ value: String) -> String {
        var result = ""
        result.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            case "\n": result += "&#10;"
            case "\r": result += "&#13;"
            case "\t": result += "&#9;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
