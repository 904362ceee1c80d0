import Foundation

/// Reads a compiled mapping model: the `.cdm` file Xcode's mapping compiler puts in an app, a
/// keyed archive of `NSMappingModel`.
///
/// The archive keys are those `NSMappingModel`, `NSEntityMapping` and `NSPropertyMapping` encode
/// (`NSEntityMappings`; `NSMappingName`, `NSMappingType`, `NSSourceEntityName`,
/// `NSSourceEntityVersionHash`, `NSDestinationEntityName`, `NSDestinationEntityVersionHash`,
/// `NSSourceExpression`, `NSEntityMigrationPolicyClassName`, `NSAttributeMappings`,
/// `NSRelationshipMappings`; `NSDestinationPropertyName`, `NSValueExpression`). The test corpus
/// has no `.cdm` written by Xcode, so the layout is not checked against one (docs/MIGRATION.md).
/// Every reference is checked as ``KeyedArchive`` checks it; a damaged archive gives an error
/// naming the file.
///
/// Stateless; safe from any thread.
public enum CompiledMappingModelDecoder {
    public static func decode(_ data: Data, source: String) throws(ObjectGraphError) -> MappingModel {
        guard data.count <= CompiledModelLoader.maximumArchiveSize else {
            throw ObjectGraphError(.invalidModel, "\(source): \(data.count) bytes, more than a mapping model may have")
        }
        let archive = try KeyedArchive(data: data, source: source)
        let root = try archive.topObject("root")
        func failure(_ message: String) -> ObjectGraphError { ObjectGraphError(.invalidModel, "\(source): \(message)") }
        guard root.isKind(of: "NSMappingModel") else {
            throw failure("the archive's root is \(root.className ?? "a plain value"), not an NSMappingModel")
        }
        var mappings: [EntityMapping] = []
        for object in try root.object("NSEntityMappings")?.elements() ?? [] {
            guard object.isKind(of: "NSEntityMapping") else {
                throw failure("an entity mapping is archived as \(object.className ?? "a plain value")")
            }
            let sourceName = try object.string("NSSourceEntityName")
            let destinationName = try object.string("NSDestinationEntityName")
            let name = try object.string("NSMappingName") ?? "\(sourceName ?? "")->\(destinationName ?? "")"
            let code = object.integer("NSMappingType") ?? 0
            guard let kind = EntityMappingKind(code: code) else {
                throw failure("entity mapping \(name) has mapping type \(code); Core Data knows 0 to 5")
            }
            var mapping = EntityMapping(
                name: name, kind: kind, sourceEntityName: sourceName, destinationEntityName: destinationName,
                sourceEntityVersionHash: try hash(object, "NSSourceEntityVersionHash"),
                destinationEntityVersionHash: try hash(object, "NSDestinationEntityVersionHash"),
                migrationPolicyClassName: try object.string("NSEntityMigrationPolicyClassName"))
            if let expression = try object.object("NSSourceExpression") {
                mapping.filterPredicate = try filter(of: expression)
            }
            mapping.attributeMappings = try properties(object, "NSAttributeMappings", mapping: name, source: source)
            mapping.relationshipMappings = try properties(
                object, "NSRelationshipMappings", mapping: name, source: source)
            mappings.append(mapping)
        }
        return MappingModel(source: source, entityMappings: mappings)
    }

    private static func hash(_ object: ArchivedObject, _ key: String) throws(ObjectGraphError) -> Data? {
        guard let value = try object.object(key) else { return nil }
        if case .data(let bytes) = value.value { return bytes }
        if case .data(let bytes)? = value["NS.data"] { return bytes }
        return nil
    }

    private static func properties(_ object: ArchivedObject, _ key: String, mapping: String, source: String)
        throws(ObjectGraphError) -> [PropertyMapping]
    {
        var result: [PropertyMapping] = []
        for property in try object.object(key)?.elements() ?? [] {
            guard let name = try property.string("NSDestinationPropertyName"), !name.isEmpty else {
                throw ObjectGraphError(
                    .invalidModel, "\(source): entity mapping \(mapping) has a property mapping without a name")
            }
            var expression: MappingExpression?
            if let archived = try property.object("NSValueExpression") {
                let text = try ArchivedPredicateFormat.expression(archived)
                do {
                    expression = try MappingExpression.parse(text)
                } catch {
                    throw ObjectGraphError(.invalidModel, "\(source): \(mapping).\(name): \(error.message)")
                }
            }
            result.append(PropertyMapping(name: name, valueExpression: expression))
        }
        return result
    }

    /// The predicate of the source expression Xcode compiles for an entity mapping,
    /// `FETCH(FUNCTION($manager, "fetchRequestForSourceEntityNamed:predicateString:", ENTITY, PREDICATE), ...)`:
    /// the first such function call found below it. Anything else is kept as a description, for
    /// the migration to refuse.
    private static func filter(of expression: ArchivedObject) throws(ObjectGraphError) -> String? {
        var pending = [expression]
        var visited: Set<Int> = []
        while let next = pending.popLast(), visited.count < 256 {
            guard next.uid < 0 || visited.insert(next.uid).inserted else { continue }
            if next.isKind(of: "NSFunctionExpression"),
                try next.string("NSSelectorName") == "fetchRequestForSourceEntityNamed:predicateString:"
            {
                let arguments = try next.object("NSArguments")?.elements() ?? []
                guard arguments.count == 2, let constant = try arguments[1].object("NSConstantValue"),
                    let predicate = try constant.stringValue()
                else { return "(a source expression storefs cannot read)" }
                return predicate
            }
            guard case .dictionary(let entries) = next.value else { continue }
            for entry in entries {
                guard case .string(let key) = entry.key, key != "$class" else { continue }
                if let child = try next.object(key), child.className != nil { pending.append(child) }
                if case .array(let items) = entry.value {
                    for case .uid(let uid) in items {
                        if let child = try next.archive.object(uid) { pending.append(child) }
                    }
                }
            }
        }
        return "(a source expression storefs cannot read)"
    }
}
