import Foundation
import ObjectGraph

/// Writes mapping model files the way Xcode writes them, for the fixtures of the model migration
/// tests: an Xcode mapping model's `xcmapping.xml` (a Core Data XML store of Xcode's mapping
/// entities, value expressions as archived `NSExpression`s) and a compiled `.cdm` (a keyed archive
/// of `NSMappingModel`, with the entity version hashes Xcode's mapping compiler records).
///
/// The layouts are those of the corpus's two Xcode mapping models (Tests/Fixtures/corpus/xml) and,
/// for `.cdm`, of the keys `NSMappingModel`, `NSEntityMapping` and `NSPropertyMapping` encode; the
/// committed fixtures in Tests/Fixtures/migration are this writer's output, and a test holds them
/// to it.
enum MappingFixtures {
    /// One entity mapping as Xcode's editor holds it.
    struct Entity {
        var source: String?
        var destination: String?
        var type = "Undefined"
        var attributes: [(String, MappingExpression?)]
        var relationships: [(String, MappingExpression?)]
    }

    // MARK: - Archived expressions

    /// An NSExpression archive of `expression`, as Xcode stores a value expression.
    static func archive(_ expression: MappingExpression) -> Data {
        var archive = KeyedArchiveWriter()
        let root = encode(expression, into: &archive)
        guard case .uid(let uid) = root else { return Data() }
        return archive.finish(root: uid)
    }

    private static let expressionClasses = ["NSExpression", "NSObject"]

    private static func encode(_ expression: MappingExpression, into archive: inout KeyedArchiveWriter)
        -> PropertyListValue
    {
        switch expression {
        case .constant(let literal):
            let value: PropertyListValue?
            switch literal {
            case .string(let s): value = .string(s)
            case .integer(let i): value = .integer(i)
            case .double(let d): value = .real(d)
            case .boolean(let b): value = .boolean(b)
            case .date, .null, .object: value = nil
            }
            return archive.add(
                className: "NSConstantValueExpression", classes: ["NSConstantValueExpression"] + expressionClasses,
                fields: [("NSConstantValue", archive.add(value)), ("NSExpressionType", .integer(0))])
        case .variable(let name, let path):
            let variable = archive.add(
                className: "NSVariableExpression", classes: ["NSVariableExpression"] + expressionClasses,
                fields: [("NSVariable", archive.string(name)), ("NSExpressionType", .integer(2))])
            return path.isEmpty ? variable : keyPath(path, operand: variable, into: &archive)
        case .keyPath(let path):
            let current = archive.add(
                className: "NSSelfExpression", classes: ["NSSelfExpression"] + expressionClasses,
                fields: [("NSExpressionType", .integer(1))])
            return keyPath(path, operand: current, into: &archive)
        case .function(let target, let selector, let arguments):
            let operand = encode(target, into: &archive)
            let items = arguments.map { encode($0, into: &archive) }
            return archive.add(
                className: "NSFunctionExpression", classes: ["NSFunctionExpression"] + expressionClasses,
                fields: [
                    ("NSOperand", operand), ("NSSelectorName", archive.string(selector)),
                    ("NSArguments", archive.array(items, className: "NSMutableArray")),
                    ("NSExpressionType", .integer(4))
                ])
        case .builtin(let name, let arguments):
            let utilities = archive.add(
                className: "NSConstantValueExpression", classes: ["NSConstantValueExpression"] + expressionClasses,
                fields: [
                    ("NSConstantValue", archive.string("_NSPredicateUtilities")), ("NSExpressionType", .integer(0))
                ])
            let items = arguments.map { encode($0, into: &archive) }
            return archive.add(
                className: "NSFunctionExpression", classes: ["NSFunctionExpression"] + expressionClasses,
                fields: [
                    ("NSOperand", utilities),
                    ("NSSelectorName", archive.string(name + (name.hasSuffix(":") || name == "now" ? "" : ":"))),
                    ("NSArguments", archive.array(items, className: "NSMutableArray")),
                    ("NSExpressionType", .integer(4))
                ])
        case .aggregate(let items):
            let encoded = items.map { encode($0, into: &archive) }
            return archive.add(
                className: "NSAggregateExpression", classes: ["NSAggregateExpression"] + expressionClasses,
                fields: [("NSCollection", archive.array(encoded)), ("NSExpressionType", .integer(14))])
        }
    }

    /// `operand.path` as Xcode archives it: an NSKeyPathExpression calling valueForKeyPath:.
    private static func keyPath(_ path: [String], operand: PropertyListValue, into archive: inout KeyedArchiveWriter)
        -> PropertyListValue
    {
        let specifier = archive.add(
            className: "NSKeyPathSpecifierExpression", classes: ["NSKeyPathSpecifierExpression"] + expressionClasses,
            fields: [("NSKeyPath", archive.string(path.joined(separator: "."))), ("NSExpressionType", .integer(10))])
        return archive.add(
            className: "NSKeyPathExpression",
            classes: ["NSKeyPathExpression", "NSFunctionExpression"] + expressionClasses,
            fields: [
                ("NSOperand", operand), ("NSSelectorName", archive.string("valueForKeyPath:")),
                ("NSArguments", archive.array([specifier], className: "NSMutableArray")),
                ("NSExpressionType", .integer(4))
            ])
    }

    // MARK: - xcmapping.xml

    /// The `xcmapping.xml` of a mapping model between the model folders `sourceModel` and
    /// `destinationModel` (paths as Xcode records them).
    static func xcmapping(sourceModel: String, destinationModel: String, entities: [Entity], uuid: String) -> String {
        var next = 100
        func id() -> String {
            next += 1
            return "z\(next)"
        }
        func escaped(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;")
        }
        let modelID = id()
        var objects: [String] = []
        var entityIDs: [String] = []
        for (number, entity) in entities.enumerated() {
            let entityID = id()
            entityIDs.append(entityID)
            var attributeIDs: [String] = []
            var relationshipIDs: [String] = []
            for (kind, list) in [
                ("XDDEVATTRIBUTEMAPPING", entity.attributes), ("XDDEVRELATIONSHIPMAPPING", entity.relationships)
            ] {
                for (name, expression) in list {
                    let propertyID = id()
                    if kind == "XDDEVATTRIBUTEMAPPING" {
                        attributeIDs.append(propertyID)
                    } else {
                        relationshipIDs.append(propertyID)
                    }
                    var lines = ["    <object type=\"\(kind)\" id=\"\(propertyID)\">"]
                    if let expression {
                        lines.append(
                            "        <attribute name=\"valueexpressiondata\" type=\"binary\">\(archive(expression).base64EncodedString())</attribute>"
                        )
                    } else if kind == "XDDEVRELATIONSHIPMAPPING" {
                        lines.append("        <attribute name=\"autogenerateexpression\" type=\"bool\">1</attribute>")
                    }
                    lines.append("        <attribute name=\"name\" type=\"string\">\(escaped(name))</attribute>")
                    lines.append(
                        "        <relationship name=\"entitymapping\" type=\"1/1\" destination=\"XDDEVENTITYMAPPING\" idrefs=\"\(entityID)\"></relationship>"
                    )
                    lines.append("    </object>")
                    objects.append(lines.joined(separator: "\n"))
                }
            }
            var lines = ["    <object type=\"XDDEVENTITYMAPPING\" id=\"\(entityID)\">"]
            if let source = entity.source {
                lines.append("        <attribute name=\"sourcename\" type=\"string\">\(escaped(source))</attribute>")
            }
            lines.append("        <attribute name=\"mappingtypename\" type=\"string\">\(entity.type)</attribute>")
            lines.append("        <attribute name=\"mappingnumber\" type=\"int16\">\(number + 1)</attribute>")
            if let destination = entity.destination {
                lines.append(
                    "        <attribute name=\"destinationname\" type=\"string\">\(escaped(destination))</attribute>")
            }
            lines.append("        <attribute name=\"autogenerateexpression\" type=\"bool\">1</attribute>")
            lines.append(
                "        <relationship name=\"mappingmodel\" type=\"1/1\" destination=\"XDDEVMAPPINGMODEL\" idrefs=\"\(modelID)\"></relationship>"
            )
            lines.append(
                "        <relationship name=\"attributemappings\" type=\"0/0\" destination=\"XDDEVATTRIBUTEMAPPING\" idrefs=\"\(attributeIDs.joined(separator: " "))\"></relationship>"
            )
            lines.append(
                "        <relationship name=\"relationshipmappings\" type=\"0/0\" destination=\"XDDEVRELATIONSHIPMAPPING\" idrefs=\"\(relationshipIDs.joined(separator: " "))\"></relationship>"
            )
            lines.append("    </object>")
            objects.append(lines.joined(separator: "\n"))
        }
        objects.append(
            """
                <object type="XDDEVMAPPINGMODEL" id="\(modelID)">
                    <attribute name="sourcemodelpath" type="string">\(escaped(sourceModel))</attribute>
                    <attribute name="destinationmodelpath" type="string">\(escaped(destinationModel))</attribute>
                    <relationship name="entitymappings" type="0/0" destination="XDDEVENTITYMAPPING" idrefs="\(entityIDs.joined(separator: " "))"></relationship>
                </object>
            """)
        return """
            <?xml version="1.0" standalone="yes"?>
            <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">

            <database>
                <databaseInfo>
                    <version>134481920</version>
                    <UUID>\(uuid)</UUID>
                    <nextObjectID>\(next + 1)</nextObjectID>
                    <metadata>
                        <plist version="1.0">
                            <dict>
                                <key>NSPersistenceFrameworkVersion</key>
                                <integer>754</integer>
                                <key>NSStoreModelVersionHashesVersion</key>
                                <integer>3</integer>
                            </dict>
                        </plist>
                    </metadata>
                </databaseInfo>
            \(objects.joined(separator: "\n"))
            </database>

            """
    }

    // MARK: - .cdm

    /// A compiled mapping model between `source` and `destination`: each entity mapping with its
    /// mapping type, the entities' version hashes, the source expression Xcode compiles (a fetch
    /// of every object of the source entity) and its property mappings, automatic expressions
    /// spelled out as Xcode's compiler does.
    static func cdm(entities: [Entity], source: ManagedObjectModel, destination: ManagedObjectModel) -> Data {
        var archive = KeyedArchiveWriter()
        let root = archive.reserve()
        let sourceHashes = VersionHash.entityHashes(of: source)
        let destinationHashes = VersionHash.entityHashes(of: destination)
        var mappings: [PropertyListValue] = []
        var byName: [(PropertyListValue, PropertyListValue)] = []
        for entity in entities {
            let name = "\(entity.source ?? "")To\(entity.destination ?? "")"
            let code: Int64 =
                switch (entity.source, entity.destination) {
                case (_?, _?): 5
                case (nil, _?): 2
                default: 3
                }
            let sourceEntity = entity.source.flatMap { source.entity(named: $0) }
            func properties(_ list: [(String, MappingExpression?)], relationship: Bool) -> PropertyListValue {
                var items: [PropertyListValue] = []
                for (propertyName, given) in list {
                    var expression = given
                    if expression == nil, let sourceEntity {
                        if !relationship, sourceEntity.attribute(named: propertyName) != nil {
                            expression = .variable("source", keyPath: [propertyName])
                        } else if relationship, let old = sourceEntity.relationship(named: propertyName) {
                            expression = .function(
                                .variable("manager", keyPath: []),
                                selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                                arguments: [
                                    .constant(.string("\(old.destinationEntityName)To\(old.destinationEntityName)")),
                                    .variable("source", keyPath: [propertyName])
                                ])
                        }
                    }
                    var fields: [(String, PropertyListValue)] = [
                        ("NSDestinationPropertyName", archive.string(propertyName))
                    ]
                    fields.append(("NSValueExpression", expression.map { encode($0, into: &archive) } ?? .uid(0)))
                    items.append(
                        archive.add(
                            className: "NSPropertyMapping", classes: ["NSPropertyMapping", "NSObject"], fields: fields))
                }
                return archive.array(items, className: "NSMutableArray")
            }
            var fields: [(String, PropertyListValue)] = [
                ("NSMappingName", archive.string(name)), ("NSMappingType", .integer(code)),
                ("NSSourceEntityName", archive.string(entity.source)),
                (
                    "NSSourceEntityVersionHash",
                    archive.add(entity.source.flatMap { sourceHashes[$0] }.map(PropertyListValue.data))
                ),
                ("NSDestinationEntityName", archive.string(entity.destination)),
                (
                    "NSDestinationEntityVersionHash",
                    archive.add(entity.destination.flatMap { destinationHashes[$0] }.map(PropertyListValue.data))
                ),
                ("NSAttributeMappings", properties(entity.attributes, relationship: false)),
                ("NSRelationshipMappings", properties(entity.relationships, relationship: true))
            ]
            if let sourceName = entity.source {
                let fetch = encode(
                    .function(
                        .variable("manager", keyPath: []),
                        selector: "fetchRequestForSourceEntityNamed:predicateString:",
                        arguments: [.constant(.string(sourceName)), .constant(.string("TRUEPREDICATE"))]),
                    into: &archive)
                let context = encode(
                    .function(.variable("manager", keyPath: []), selector: "sourceContext", arguments: []),
                    into: &archive)
                fields.append(
                    (
                        "NSSourceExpression",
                        archive.add(
                            className: "NSFetchRequestExpression",
                            classes: ["NSFetchRequestExpression"] + expressionClasses,
                            fields: [
                                ("NSRequestExpression", fetch), ("NSContextExpression", context),
                                ("NSIsCountOnly", .boolean(false)),
                                ("NSExpressionType", .integer(50))
                            ])
                    ))
            }
            let mapping = archive.add(
                className: "NSEntityMapping", classes: ["NSEntityMapping", "NSObject"], fields: fields)
            mappings.append(mapping)
            byName.append((archive.string(name), mapping))
        }
        archive.set(
            root, className: "NSMappingModel", classes: ["NSMappingModel", "NSObject"],
            fields: [
                ("NSEntityMappings", archive.array(mappings, className: "NSMutableArray")),
                ("NSEntityMappingsByName", archive.dictionary(byName, className: "NSMutableDictionary"))
            ])
        return archive.finish(root: root)
    }
}
