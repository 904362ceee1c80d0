import Foundation

extension MappingModel {
    /// The mapping Core Data infers for a lightweight migration (`inferredMappingModel`): one
    /// entity mapping per entity of the new model that keeps an old one (matched by renaming
    /// identifier), taking that entity's own objects; each kept property carries its values
    /// across (`$source.old`), converted where the type widened; relationships lead to the new
    /// objects of what they held. Added entities get Add mappings, removed ones Remove mappings.
    ///
    /// - Throws: ``ObjectGraphError/Code/unsupported`` listing every change Core Data cannot
    ///   infer, each naming its entity and property.
    public static func inferred(from source: ManagedObjectModel, to destination: ManagedObjectModel)
        throws(ObjectGraphError) -> MappingModel
    {
        let difference = ModelDifference(from: source, to: destination)
        let refusals = difference.refusals
        guard refusals.isEmpty else {
            throw ObjectGraphError(
                .unsupported,
                "Core Data cannot infer a lightweight migration between these models: "
                    + refusals.joined(separator: "; ") + ". Give a mapping model (--mapping) for this step")
        }
        var mappings: [EntityMapping] = []
        for entity in destination.entities.sorted(by: { $0.name < $1.name }) {
            let sourceName = difference.entityMatches.first { $0.value == entity.name }?.key
            guard let sourceName, let old = source.entity(named: sourceName) else {
                mappings.append(
                    EntityMapping(
                        name: "\(entity.name)", kind: .add, sourceEntityName: nil, destinationEntityName: entity.name))
                continue
            }
            let names = difference.propertyMatches[entity.name] ?? [:]
            var attributes: [PropertyMapping] = []
            for attribute in entity.persistentAttributes {
                guard let oldName = names[attribute.name], old.attribute(named: oldName) != nil else {
                    attributes.append(PropertyMapping(name: attribute.name, valueExpression: nil))
                    continue
                }
                attributes.append(
                    PropertyMapping(name: attribute.name, valueExpression: .variable("source", keyPath: [oldName])))
            }
            var relationships: [PropertyMapping] = []
            for relationship in entity.persistentRelationships {
                guard let oldName = names[relationship.name], old.relationship(named: oldName) != nil else {
                    relationships.append(PropertyMapping(name: relationship.name, valueExpression: nil))
                    continue
                }
                relationships.append(
                    PropertyMapping(name: relationship.name, valueExpression: .followingSourceRelationship(oldName)))
            }
            mappings.append(
                EntityMapping(
                    name: "\(sourceName)To\(entity.name)", kind: old.name == entity.name ? .copy : .transform,
                    sourceEntityName: sourceName, destinationEntityName: entity.name,
                    sourceEntityVersionHash: VersionHash.hash(of: old.id, in: source),
                    destinationEntityVersionHash: VersionHash.hash(of: entity.id, in: destination),
                    attributeMappings: attributes,
                    relationshipMappings: relationships))
        }
        for entity in source.entities.sorted(by: { $0.name < $1.name })
        where difference.entityMatches[entity.name] == nil {
            mappings.append(
                EntityMapping(
                    name: "\(entity.name)", kind: .remove, sourceEntityName: entity.name, destinationEntityName: nil))
        }
        return MappingModel(source: "lightweight (inferred)", entityMappings: mappings, isInferred: true)
    }
}
