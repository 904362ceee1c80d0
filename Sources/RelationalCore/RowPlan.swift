import CoreDataSchema
import ObjectGraph

/// How the rows of one entity tree's table are read: the columns selected after `Z_PK, Z_ENT,
/// Z_OPT` (each once, whichever entities share it), and which of them holds each attribute and
/// to-one key of each entity, worked out once per query rather than once per row.
///
/// Threading: a value; share it freely.
package struct RowPlan: Sendable {
    package struct Entity: Sendable {
        /// `external`: the attribute allows Core Data's external storage (its column may hold a
        /// reference to a file).
        package var attributes: [(name: String, type: AttributeType, column: Int, external: Bool)] = []
        package var toOne: [(name: String, destination: EntityID, column: Int, entityColumn: Int?)] = []
        /// The names of both, shared by every snapshot read of the entity, and each one's slot.
        package var names = StoreLayout.SnapshotNames()
        package var entityName = ""
    }

    /// `Z_PK, Z_ENT, Z_OPT` and the columns, qualified by the alias when there is one.
    package let selected: String
    package let entities: [EntityID: Entity]

    /// The plan of the tree of `root`; columns qualified by `alias` when given.
    package init(_ core: RelationalRules, root: EntityID, alias: String? = nil) {
        let prefix = alias.map { $0 + "." } ?? ""
        var index: [String: Int] = [:]
        var columns = ["\"Z_PK\"", "\"Z_ENT\"", "\"Z_OPT\""].map { prefix + $0 }
        func add(_ column: String?, type: AttributeType? = nil) -> Int? {
            guard let column else { return nil }
            if let known = index[column] { return known }
            index[column] = columns.count
            let name = prefix + SQL.identifier(column)
            columns.append(type.map { core.dialect.selected(name, as: $0) } ?? name)
            return columns.count - 1
        }
        var entities: [EntityID: Entity] = [:]
        for id in core.model.entityAndSubentities(of: root) {
            var plan = Entity()
            for attribute in core.layout[id].attributes {
                let type = attribute.attribute.type
                guard let column = add(attribute.column, type: type) else { continue }
                plan.attributes.append(
                    (attribute.attribute.name, type, column, attribute.attribute.allowsExternalBinaryDataStorage))
            }
            for toOne in core.layout[id].toOne {
                guard let column = add(toOne.column) else { continue }
                plan.toOne.append((toOne.name, toOne.destination, column, add(toOne.entityColumn)))
            }
            // Made once per entity with the layout, so rows of every query share them.
            plan.names = core.layout[id].snapshotNames
            plan.entityName = core.layout[id].name
            entities[id] = plan
        }
        selected = columns.joined(separator: ", ")
        self.entities = entities
    }
}

extension RelationalRules {
    /// The snapshot of `id` in `row`, read as `plan` says. A to-one column that holds what is
    /// not a key is a damaged row (``ObjectGraphError/Code/corruptStore``); a key below 1 is a
    /// reference to nothing (left out, as listings leave such rows out).
    package func snapshot(from row: any SQLRow, id: ObjectID, plan: RowPlan.Entity) throws(ObjectGraphError)
        -> Snapshot
    {
        var snapshot = Snapshot(
            objectID: id, version: row.integer(2) ?? 0, attributes: PropertyValues(layout: plan.names.attributes),
            toOne: PropertyValues(layout: plan.names.toOne))
        for (attribute, slot) in zip(plan.attributes, plan.names.attributeSlots) {
            let place = ValuePlace(entity: plan.entityName, attribute: attribute.name, key: id.key.rawValue)
            if let value = try row.attributeValue(
                attribute.column, as: attribute.type, external: attribute.external, place: place)
            {
                snapshot.attributes.setValue(value, slot: slot)
            }
        }
        for (toOne, slot) in zip(plan.toOne, plan.names.toOneSlots) {
            guard let key = row.integer(toOne.column) else {
                if !row.isNull(toOne.column) {
                    throw ObjectGraphError(
                        .corruptStore,
                        "\(place): \(plan.entityName).\(toOne.name) of object p\(id.key.rawValue) holds "
                            + "\(row.value(toOne.column)), not the key of a \(model[toOne.destination].name)")
                }
                continue
            }
            guard key > 0 else { continue }
            var destination = toOne.destination
            if let j = toOne.entityColumn, let actual = row.integer(j) {
                guard let mapped = layout.entityByZent[actual] else {
                    logger.warning(
                        "\(place): \(plan.entityName).\(toOne.name) of p\(id.key.rawValue) names unknown Z_ENT \(actual)"
                    )
                    continue
                }
                destination = mapped
            }
            snapshot.toOne.setValue(ObjectID(entity: destination, key: PrimaryKey(key)), slot: slot)
        }
        return snapshot
    }
}
