import Foundation

/// Reads an Xcode mapping model: the `xcmapping.xml` of a `.xcmappingmodel` folder, which is
/// itself a Core Data XML store of Xcode's mapping entities (`XDDevMappingModel`,
/// `XDDevEntityMapping`, `XDDevAttributeMapping`, `XDDevRelationshipMapping`).
///
/// The caller opens the file as an XML store (with the model the XML store infers from it) and
/// gives the open store; this reads its objects by entity and property name, whatever their case.
/// What Xcode's file keeps, and how it is read:
/// - the source and destination model paths (`CoreData/Model.xcdatamodeld/Model 2.xcdatamodel`),
///   which name the versions of a staged migration's step;
/// - per entity mapping: source and destination entity names, the mapping type, its order
///   (`mappingnumber`), a migration policy class name;
/// - per property mapping: the destination property's name and its value expression, an archived
///   `NSExpression` (`valueexpressiondata`). A property mapping without one has Xcode's
///   automatic expression (`$source.NAME`, or for a relationship the new objects of
///   `$source.NAME`), applied when the source entity has a property of that name
///   (``PropertyMapping/isAutomatic``).
///
/// Stateless; safe from any thread.
public enum XcodeMappingModelReader {
    /// The mapping model in `store` (an open `xcmapping.xml`); `source` names it in messages.
    public static func read(_ store: any PersistentStore, source: String) throws(ObjectGraphError) -> MappingModel {
        let model = store.model
        func entity(_ name: String) -> EntityDescription? {
            model.entities.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        }
        func failure(_ message: String) -> ObjectGraphError { ObjectGraphError(.invalidModel, "\(source): \(message)") }
        guard let modelEntity = entity("XDDevMappingModel"), let entityMappingEntity = entity("XDDevEntityMapping")
        else {
            throw failure("not an Xcode mapping model: it has no XDDevMappingModel and XDDevEntityMapping objects")
        }
        let models = try objects(of: modelEntity, in: store)
        guard models.count == 1, let root = models.first else {
            throw failure("holds \(models.count) XDDevMappingModel objects; a mapping model has one")
        }
        var propertyEntities: [String: EntityDescription] = [:]
        for name in ["XDDevAttributeMapping", "XDDevRelationshipMapping"] { propertyEntities[name] = entity(name) }
        var entityMappings: [(order: Int64, mapping: EntityMapping)] = []
        for object in try objects(of: entityMappingEntity, in: store) {
            let sourceName = nonEmpty(string(object, "sourcename"))
            let destinationName = nonEmpty(string(object, "destinationname"))
            let name = nonEmpty(string(object, "name")) ?? "\(sourceName ?? "")To\(destinationName ?? "")"
            let typeName = string(object, "mappingtypename") ?? "Undefined"
            guard let kind = EntityMappingKind(rawValue: typeName) else {
                throw failure("entity mapping \(name) has the mapping type \(typeName), which Core Data does not have")
            }
            var mapping = EntityMapping(
                name: name, kind: kind, sourceEntityName: sourceName, destinationEntityName: destinationName,
                migrationPolicyClassName: nonEmpty(string(object, "migrationpolicyclassname")))
            // Xcode's "Filter Predicate" and custom source expressions: kept as text to be refused
            // (storefs migrates whole entities).
            for (key, value) in object.attributes
            where key.lowercased().contains("predicate") || key.lowercased().hasPrefix("sourceexpression") {
                switch value {
                case .string(let text) where !text.trimmingCharacters(in: .whitespaces).isEmpty:
                    mapping.filterPredicate = text
                case .data(let data) where !data.isEmpty: mapping.filterPredicate = "(an archived source expression)"
                default: break
                }
            }
            for (relationship, kindName) in [
                ("attributemappings", "XDDevAttributeMapping"), ("relationshipmappings", "XDDevRelationshipMapping")
            ] {
                guard let propertyEntity = propertyEntities[kindName],
                    let relationshipName = entityMappingEntity.allRelationships.first(where: {
                        $0.name.lowercased() == relationship
                    })?.name
                else { continue }
                let ids =
                    try store.toManyDestinations(
                        of: relationshipName, in: object.objectID.entity, for: [object.objectID])[object.objectID] ?? []
                var properties: [PropertyMapping] = []
                for property in try store.snapshots(for: ids)
                where store.model.entity(property.objectID.entity, isKindOf: propertyEntity.id) {
                    guard let propertyName = nonEmpty(string(property, "name")) else {
                        throw failure("entity mapping \(name) has a property mapping without a name")
                    }
                    if let data = self.data(property, "valueexpressiondata"), !data.isEmpty {
                        let expression = try decodeExpression(data, source: "\(source): \(name).\(propertyName)")
                        properties.append(PropertyMapping(name: propertyName, valueExpression: expression))
                    } else if let text = nonEmpty(string(property, "valueexpression")) {
                        properties.append(
                            PropertyMapping(name: propertyName, valueExpression: try MappingExpression.parse(text)))
                    } else {
                        properties.append(PropertyMapping(name: propertyName, valueExpression: nil, isAutomatic: true))
                    }
                }
                properties.sort { $0.name < $1.name }
                if relationship == "attributemappings" {
                    mapping.attributeMappings = properties
                } else {
                    mapping.relationshipMappings = properties
                }
            }
            entityMappings.append((integer(object, "mappingnumber") ?? Int64(entityMappings.count), mapping))
        }
        let ordered = entityMappings.sorted { ($0.order, $0.mapping.name) < ($1.order, $1.mapping.name) }.map(\.mapping)
        return MappingModel(
            source: source, entityMappings: ordered, sourceModelName: nonEmpty(string(root, "sourcemodelpath")),
            destinationModelName: nonEmpty(string(root, "destinationmodelpath")))
    }

    /// An archived NSExpression, as format text parsed back.
    static func decodeExpression(_ data: Data, source: String) throws(ObjectGraphError) -> MappingExpression {
        let archive = try KeyedArchive(data: data, source: source)
        let text = try ArchivedPredicateFormat.expression(try archive.topObject("root"))
        do {
            return try MappingExpression.parse(text)
        } catch {
            throw ObjectGraphError(.invalidModel, "\(source): \(error.message)")
        }
    }

    // MARK: - Reading objects

    private static func objects(of entity: EntityDescription, in store: any PersistentStore) throws(ObjectGraphError)
        -> [Snapshot]
    {
        var ids: [ObjectID] = []
        for id in store.model.entityAndSubentities(of: entity.id) { ids += try store.objectIDs(of: id) }
        return try store.snapshots(for: ids)
    }

    private static func value(_ snapshot: Snapshot, _ name: String) -> AttributeValue? {
        for (key, value) in snapshot.attributes where key.lowercased() == name { return value }
        return nil
    }

    private static func string(_ snapshot: Snapshot, _ name: String) -> String? {
        if case .string(let s)? = value(snapshot, name) { return s }
        return nil
    }

    private static func data(_ snapshot: Snapshot, _ name: String) -> Data? {
        if case .data(let d)? = value(snapshot, name) { return d }
        return nil
    }

    private static func integer(_ snapshot: Snapshot, _ name: String) -> Int64? {
        if case .integer(let i)? = value(snapshot, name) { return i }
        return nil
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        return text
    }
}
