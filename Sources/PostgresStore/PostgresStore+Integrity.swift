import CoreDataSchema
import Foundation
import ObjectGraph

/// What a save does beyond the rows the engine asks for, as the SQLite store does it (see
/// SQLiteStore+Integrity.swift for why each): versions of objects whose only change is a to-many
/// relationship, one-to-one pairs that agree on both sides, no key pointing at a deleted object.
extension PostgresStore {
    typealias Run = (String, [String?]) throws(ObjectGraphError) -> PostgresResult

    /// `Z_OPT + 1` for every object whose to-many relationships change and whose row this save
    /// does not update otherwise (``ToManyVersions``).
    func bumpVersionsOfToManyChanges(_ request: SaveRequest, run: Run, _ written: inout WrittenChanges<String?>)
        throws(ObjectGraphError)
    {
        for (source, relationships, updatedOtherwise) in ToManyVersions(request).sources {
            if !updatedOtherwise {
                let (table, zent, _) = try place(of: source)
                let changed = try run(
                    "UPDATE \(SQLText.identifier(table)) SET \"Z_OPT\" = \"Z_OPT\" + 1 WHERE \"Z_PK\" = $1 AND \"Z_ENT\" = $2",
                    [String(source.key.rawValue), String(zent)])
                if changed.changedCount == 0 { throw conflict(source, deleted: true) }
            }
            written.update(source, relationships)
        }
    }

    /// For each one-to-one relationship an update sets, no other row still names its new partner.
    func repairOneToOne(_ updates: [SaveRequest.Update], run: Run, _ written: inout WrittenChanges<String?>)
        throws(ObjectGraphError)
    {
        for update in updates {
            let source = update.objectID
            for name in update.changedToOne {
                guard let destination = update.snapshot.toOne[name],
                    let relationship = model[source.entity].relationship(named: name),
                    let inverse = model.inverse(of: relationship), !inverse.isToMany
                else { continue }
                try clearToOne(
                    name, of: source.entity, naming: [destination.key.rawValue], except: source, run: run, &written)
                try clearToOne(
                    inverse.name, of: destination.entity, naming: [source.key.rawValue], except: destination, run: run,
                    &written)
            }
        }
    }

    /// Every to-one key that names a deleted object is cleared.
    func clearKeys(to deleted: [ObjectID], run: Run, _ written: inout WrittenChanges<String?>) throws(ObjectGraphError)
    {
        guard !deleted.isEmpty else { return }
        var keysByRoot: [EntityID: [Int64]] = [:]
        for id in deleted { keysByRoot[layout[id.entity].rootID, default: []].append(id.key.rawValue) }
        for (root, keys) in keysByRoot.sorted(by: { $0.key < $1.key }) {
            var seen: Set<String> = []
            for entity in layout.entities {
                for toOne in entity.toOne where toOne.column != nil && model[toOne.destination].rootID == root {
                    guard let table = entity.table, let column = toOne.column,
                        seen.insert(table + "." + column).inserted
                    else { continue }
                    try clearToOne(toOne.name, of: entity.id, naming: keys, except: nil, run: run, &written)
                }
            }
        }
    }

    private func clearToOne(
        _ name: String, of entity: EntityID, naming keys: [Int64], except keep: ObjectID?, run: Run,
        _ written: inout WrittenChanges<String?>
    ) throws(ObjectGraphError) {
        guard let table = layout[entity].table, let toOne = layout[entity].toOne.first(where: { $0.name == name }),
            let column = toOne.column, !keys.isEmpty
        else { return }
        let t = SQLText.identifier(table)
        let c = SQLText.identifier(column)
        let skip = keep.map { " AND \"Z_PK\" <> \($0.key.rawValue)" } ?? ""
        let found = try run(
            "SELECT \"Z_PK\", \"Z_ENT\", \(c) FROM \(t) WHERE \(c) = ANY($1::bigint[])\(skip)", [SQLText.array(keys)])
        guard found.rowCount > 0 else { return }
        var clear = ["\(c) = NULL"]
        if let entityColumn = toOne.entityColumn { clear.append("\(SQLText.identifier(entityColumn)) = NULL") }
        if let order = orderColumn(table: table, column: column) { clear.append("\(SQLText.identifier(order)) = NULL") }
        for row in 0..<found.rowCount {
            guard let key = found.integer(row, 0), key > 0, let zent = found.integer(row, 1),
                let rowEntity = layout.entityByZent[zent]
            else { continue }
            let id = ObjectID(entity: rowEntity, key: PrimaryKey(key))
            _ = try run(
                "UPDATE \(t) SET \(clear.joined(separator: ", ")), \"Z_OPT\" = \"Z_OPT\" + 1 WHERE \"Z_PK\" = $1",
                [String(key)])
            written.update(id, [name])
            written.repaired.insert(id)
            logger.notice(
                "\(location): cleared \(layout[rowEntity].name) p\(key).\(name): it named an object this save relinks or deletes"
            )
        }
    }

    /// The `Z_FOK_` column that orders a to-one's key column among its destination's ordered
    /// to-many, if the layout has one.
    private func orderColumn(table: String, column: String) -> String? {
        for entity in layout.entities {
            for case .foreignKey(let t, let c, let order?, true) in entity.toMany.values where t == table && c == column
            {
                return order
            }
        }
        return nil
    }

    /// The values a delete of `id` records in history (its entity's preserved attributes, as text).
    func tombstoneValues(of id: ObjectID, run: Run) throws(ObjectGraphError) -> [String?] {
        guard let table = layout[id.entity].table else { return [] }
        let names = slots.preservedAttributes(of: id.entity)
        guard !names.isEmpty else { return [] }
        let columns = names.map { name in
            layout[id.entity].attributes.first { $0.attribute.name == name }?.column.map {
                SQLText.identifier($0) + "::text"
            } ?? "NULL"
        }
        let found = try run(
            "SELECT \(columns.joined(separator: ", ")) FROM \(SQLText.identifier(table)) WHERE \"Z_PK\" = $1",
            [String(id.key.rawValue)])
        guard found.rowCount > 0 else { return [] }
        return (0..<columns.count).map { found.text(0, $0) }
    }
}
