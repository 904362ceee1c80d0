import CoreDataSchema
import Foundation
import ObjectGraph

extension PostgresStore {
    public func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] {
        let entityLayout = try entityLayout(entity)
        guard let table = entityLayout.table, let zent = entityLayout.zent else { return [] }
        let rows = try read(
            "SELECT \"Z_PK\" FROM \(SQLText.identifier(table)) WHERE \"Z_ENT\" = \(zent) AND \"Z_PK\" > 0 ORDER BY \"Z_PK\""
        )
        var ids: [ObjectID] = []
        ids.reserveCapacity(rows.rowCount)
        for row in 0..<rows.rowCount {
            if let key = rows.integer(row, 0) { ids.append(ObjectID(entity: entity, key: PrimaryKey(key))) }
        }
        return ids
    }

    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        let entityLayout = try entityLayout(entity)
        guard let table = entityLayout.table, let zent = entityLayout.zent else { return 0 }
        let rows = try read(
            "SELECT COUNT(*) FROM \(SQLText.identifier(table)) WHERE \"Z_ENT\" = \(zent) AND \"Z_PK\" > 0")
        return Int(clamping: rows.integer(0, 0) ?? 0)
    }

    /// One `SELECT ... WHERE Z_PK = ANY(keys)` per root table involved.
    public func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] {
        try readSnapshots(for: ids) { (sql, parameters) throws(ObjectGraphError) in try read(sql, parameters) }
    }

    /// ``snapshots(for:)`` through `run`: a save reads (and locks, `forUpdate`) the rows it
    /// updates inside its own transaction.
    func readSnapshots(
        for ids: [ObjectID], forUpdate: Bool = false,
        _ run: (String, [String?]) throws(ObjectGraphError) -> PostgresResult
    ) throws(ObjectGraphError) -> [Snapshot] {
        var byTable: [String: (root: EntityID, ids: [PrimaryKey: [ObjectID]])] = [:]
        for id in ids {
            guard id.entity.rawValue >= 1, id.entity.rawValue <= layout.entities.count else { continue }
            let entityLayout = layout[id.entity]
            guard let table = entityLayout.table, entityLayout.zent != nil else { continue }
            byTable[table, default: (entityLayout.rootID, [:])].ids[id.key, default: []].append(id)
        }
        var found: [ObjectID: Snapshot] = [:]
        for (table, group) in byTable.sorted(by: { $0.key < $1.key }) {
            let plan = RowPlan(layout: layout, model: model, root: group.root)
            let keys = SQLText.array(group.ids.keys.map(\.rawValue).sorted())
            // Rows locked in key order, so two writers locking the same rows cannot deadlock.
            let lock = forUpdate ? " ORDER BY \"Z_PK\" FOR UPDATE" : ""
            let rows = try run(
                "SELECT \(plan.selected) FROM \(SQLText.identifier(table)) WHERE \"Z_PK\" = ANY($1::bigint[])\(lock)",
                [keys])
            for row in 0..<rows.rowCount {
                guard let pk = rows.integer(row, 0), let zent = rows.integer(row, 1),
                    let entity = layout.entityByZent[zent],
                    let id = group.ids[PrimaryKey(pk)]?.first(where: { $0.entity == entity }),
                    let entityPlan = plan.entities[entity]
                else { continue }
                found[id] = try snapshot(rows, row, id: id, plan: entityPlan)
            }
        }
        return ids.compactMap { found[$0] }
    }

    /// Which selected column holds each attribute and to-one key of each entity of a tree.
    struct RowPlan {
        struct Entity {
            var attributes: [(name: String, type: AttributeType, column: Int)] = []
            var toOne: [(name: String, destination: EntityID, column: Int, entityColumn: Int?)] = []
            var names = StoreLayout.SnapshotNames()
        }

        var selected: String
        var entities: [EntityID: Entity] = [:]

        init(layout: StoreLayout, model: ManagedObjectModel, root: EntityID) {
            var index: [String: Int] = [:]
            var columns = ["\"Z_PK\"", "\"Z_ENT\"", "\"Z_OPT\""]
            func add(_ column: String?) -> Int? {
                guard let column else { return nil }
                if let known = index[column] { return known }
                index[column] = columns.count
                columns.append(SQLText.identifier(column))
                return columns.count - 1
            }
            for id in model.entityAndSubentities(of: root) {
                var plan = Entity()
                for attribute in layout[id].attributes {
                    guard let column = add(attribute.column) else { continue }
                    plan.attributes.append((attribute.attribute.name, attribute.attribute.type, column))
                }
                for toOne in layout[id].toOne {
                    guard let column = add(toOne.column) else { continue }
                    plan.toOne.append((toOne.name, toOne.destination, column, add(toOne.entityColumn)))
                }
                plan.names = layout[id].snapshotNames
                entities[id] = plan
            }
            selected = columns.joined(separator: ", ")
        }
    }

    private func snapshot(_ rows: PostgresResult, _ row: Int, id: ObjectID, plan: RowPlan.Entity)
        throws(ObjectGraphError) -> Snapshot
    {
        let entityName = layout[id.entity].name
        var snapshot = Snapshot(
            objectID: id, version: rows.integer(row, 2) ?? 0, attributes: PropertyValues(layout: plan.names.attributes),
            toOne: PropertyValues(layout: plan.names.toOne))
        for (attribute, slot) in zip(plan.attributes, plan.names.attributeSlots) {
            guard let bytes = rows.bytes(row, attribute.column) else { continue }
            let value = try PostgresValueCoding.decode(
                bytes, as: attribute.type,
                place: "\(self.location): \(entityName).\(attribute.name) of p\(id.key.rawValue)")
            snapshot.attributes.setValue(value, slot: slot)
        }
        for (toOne, slot) in zip(plan.toOne, plan.names.toOneSlots) {
            guard let key = rows.integer(row, toOne.column), key > 0 else { continue }
            var destination = toOne.destination
            if let j = toOne.entityColumn, let actual = rows.integer(row, j) {
                guard let mapped = layout.entityByZent[actual] else { continue }
                destination = mapped
            }
            snapshot.toOne.setValue(ObjectID(entity: destination, key: PrimaryKey(key)), slot: slot)
        }
        return snapshot
    }

    public func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]
    {
        let entityLayout = try entityLayout(entity)
        guard let mapping = entityLayout.toMany[relationship] else {
            throw ObjectGraphError(.notFound, "entity \(entityLayout.name) has no to-many relationship \(relationship)")
        }
        var result: [ObjectID: [ObjectID]] = [:]
        var sourcesByKey: [Int64: [ObjectID]] = [:]
        for source in sources {
            result[source] = []
            sourcesByKey[source.key.rawValue, default: []].append(source)
        }
        guard !sources.isEmpty else { return result }
        let q = SQLText.identifier
        let sql: String
        switch mapping {
        case .missing:
            return result
        case .foreignKey(let table, let column, let orderColumn, _):
            let order = orderColumn.map { "\(q($0)) NULLS FIRST, " } ?? ""
            sql =
                "SELECT \(q(column)), \"Z_PK\", \"Z_ENT\" FROM \(q(table)) WHERE \(q(column)) = ANY($1::bigint[]) "
                + "ORDER BY \(q(column)), \(order)\"Z_PK\""
        case .joinTable(let table, let sourceColumn, let destinationColumn, let orderColumn, let destinationTable, _):
            let s = "j." + q(sourceColumn)
            let d = "j." + q(destinationColumn)
            let order = orderColumn.map { "j.\(q($0)) NULLS FIRST, " } ?? ""
            sql =
                "SELECT \(s), \(d), t.\"Z_ENT\" FROM \(q(table)) j JOIN \(q(destinationTable)) t ON t.\"Z_PK\" = \(d) "
                + "WHERE \(s) = ANY($1::bigint[]) ORDER BY \(s), \(order)\(d)"
        }
        let rows = try read(sql, [SQLText.array(sourcesByKey.keys.sorted())])
        for row in 0..<rows.rowCount {
            guard let sourceKey = rows.integer(row, 0), let key = rows.integer(row, 1), key > 0,
                let zent = rows.integer(row, 2),
                let destination = layout.entityByZent[zent]
            else { continue }
            for source in sourcesByKey[sourceKey] ?? [] {
                result[source, default: []].append(ObjectID(entity: destination, key: PrimaryKey(key)))
            }
        }
        return result
    }
}
