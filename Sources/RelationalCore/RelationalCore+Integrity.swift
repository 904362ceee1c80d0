import CoreDataSchema
import Foundation
import ObjectGraph

/// What a save does beyond the rows the engine asks for, so that the store stays as Core Data
/// keeps it: versions of objects whose only change is a to-many relationship, one-to-one pairs
/// that agree on both sides, and no key pointing at a deleted object.
///
/// The engine keeps inverses consistent itself; these are the store's safety net under it, for
/// what the engine cannot see: a one-sided link an app left (Notes has them), a relationship
/// whose model has no inverse or the No Action rule, another writer's change. Every row changed
/// here gets `Z_OPT + 1` and a history update, and is reported back so caches read it again.
extension RelationalRules {
    /// `Z_OPT + 1` for every object whose to-many relationships change and whose row this save
    /// does not update otherwise, as Core Data does (Photos' history shows albums lists at
    /// version 7 after six changes of their albums only).
    func bumpVersionsOfToManyChanges(
        _ request: SaveRequest, on connection: some SQLConnection, _ written: inout WrittenChanges<SQLValue>
    ) throws(ObjectGraphError) {
        for (source, relationships, updatedOtherwise) in ToManyVersions(request).sources {
            if !updatedOtherwise {
                let (table, zent, _) = try location(of: source)
                let changed = try connection.execute(
                    "UPDATE \(identifier: table) SET \"Z_OPT\" = \"Z_OPT\" + 1 WHERE \"Z_PK\" = \(source.key.rawValue) AND \"Z_ENT\" = \(zent)"
                )
                if changed == 0 { throw conflict(source, deleted: true) }
            }
            written.update(source, relationships)
        }
    }

    /// After the updates: for each one-to-one relationship an update sets (`A.r = B`), no other
    /// row still names B through `r`, nor A through the inverse. The engine clears the old
    /// partners it knows of; this also clears those a one-sided link hid from it.
    func repairOneToOne(
        _ updates: [SaveRequest.Update], on connection: some SQLConnection, _ written: inout WrittenChanges<SQLValue>
    ) throws(ObjectGraphError) {
        for update in updates {
            let source = update.objectID
            for name in update.changedToOne {
                guard let destination = update.snapshot.toOne[name],
                    let relationship = model[source.entity].relationship(named: name),
                    let inverse = model.inverse(of: relationship), !inverse.isToMany
                else { continue }
                try clearToOne(
                    name, of: source.entity, naming: [destination.key.rawValue], except: source, on: connection,
                    &written)
                try clearToOne(
                    inverse.name, of: destination.entity, naming: [source.key.rawValue], except: destination,
                    on: connection, &written)
            }
        }
    }

    /// After the deletes: every to-one key that names a deleted object is cleared (with its
    /// entity and order columns), whatever the model's inverse or delete rule, so no row points
    /// at nothing.
    func clearKeys(to deleted: [ObjectID], on connection: some SQLConnection, _ written: inout WrittenChanges<SQLValue>)
        throws(ObjectGraphError)
    {
        guard !deleted.isEmpty else { return }
        var keysByRoot: [EntityID: [Int64]] = [:]
        for id in deleted { keysByRoot[layout[id.entity].rootID, default: []].append(id.key.rawValue) }
        for (root, keys) in keysByRoot.sorted(by: { $0.key < $1.key }) {
            var seen: Set<String> = []
            for entity in layout.entities {
                for toOne in entity.toOne where toOne.column != nil && model[toOne.destination].rootID == root {
                    guard let table = entity.table, let column = toOne.column,
                        seen.insert(table.uppercased() + "." + column.uppercased()).inserted
                    else { continue }
                    try clearToOne(toOne.name, of: entity.id, naming: keys, except: nil, on: connection, &written)
                }
            }
        }
    }

    /// Clears to-one `name` (declared on `entity` or inherited) in every row of its table whose
    /// key column holds one of `keys`, except the row of `keep`.
    private func clearToOne(
        _ name: String, of entity: EntityID, naming keys: [Int64], except keep: ObjectID?,
        on connection: some SQLConnection, _ written: inout WrittenChanges<SQLValue>
    ) throws(ObjectGraphError) {
        guard let table = layout[entity].table, let toOne = layout[entity].toOne.first(where: { $0.name == name }),
            let column = toOne.column, !keys.isEmpty
        else { return }
        var condition = dialect.column(SQL.identifier(column), isAnyOf: keys)
        if let keep { condition += " AND \"Z_PK\" <> \(keep.key.rawValue)" }
        var found: [(key: Int64, zent: Int64, named: Int64)] = []
        try connection.query(
            "SELECT \"Z_PK\", \"Z_ENT\", \(identifier: column) FROM \(identifier: table) WHERE \(condition)"
        ) {
            row in
            if let key = row.integer(0), key > 0, let zent = row.integer(1) {
                found.append((key, zent, row.integer(2) ?? 0))
            }
        }
        guard !found.isEmpty else { return }
        var clear = [SQL.identifier(column) + " = NULL"]
        if let entityColumn = toOne.entityColumn { clear.append(SQL.identifier(entityColumn) + " = NULL") }
        if let order = orderColumn(table: table, column: column) { clear.append(SQL.identifier(order) + " = NULL") }
        let sets = SQL(text: clear.joined(separator: ", ") + ", \"Z_OPT\" = \"Z_OPT\" + 1")
        for row in found {
            guard let rowEntity = layout.entityByZent[row.zent] else { continue }
            let id = ObjectID(entity: rowEntity, key: PrimaryKey(row.key))
            try connection.execute("UPDATE \(identifier: table) SET \(sets) WHERE \"Z_PK\" = \(row.key)")
            written.update(id, [name])
            written.repaired.insert(id)
            let why =
                keep.map {
                    "it also named \(layout[$0.entity].name) p\(row.named), now linked from p\($0.key.rawValue)"
                }
                ?? "it named p\(row.named), which this save deletes"
            logger.notice("\(place): cleared \(layout[rowEntity].name) p\(row.key).\(name): \(why)")
        }
    }

    /// The `Z_FOK_` column that orders a to-one's key column among its destination's ordered
    /// to-many, if the layout has one.
    private func orderColumn(table: String, column: String) -> String? {
        for entity in layout.entities {
            for case .foreignKey(let t, let c, let order?, true) in entity.toMany.values
            where t.uppercased() == table.uppercased() && c.uppercased() == column.uppercased() {
                return order
            }
        }
        return nil
    }
}
