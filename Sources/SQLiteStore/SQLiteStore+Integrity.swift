import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

/// What a save does beyond the rows the engine asks for, so that the file stays as Core Data
/// keeps it: versions of objects whose only change is a to-many relationship, one-to-one pairs
/// that agree on both sides, and no key pointing at a deleted object.
///
/// The engine keeps inverses consistent itself; these are the store's safety net under it, for
/// what the engine cannot see: a one-sided link an app left (Notes has them), a relationship
/// whose model has no inverse or the No Action rule. Every row changed here gets `Z_OPT + 1` and
/// a history update, and is reported back so caches read it again.
extension SQLiteStore {
    /// `Z_OPT + 1` for every object whose to-many relationships change and whose row this save
    /// does not update otherwise, as Core Data does (Photos' history shows albums lists at
    /// version 7 after six changes of their albums only).
    func bumpVersionsOfToManyChanges(
        _ request: SaveRequest, run: (String, StatementArguments, Bool) throws(ObjectGraphError) -> Int,
        _ written: inout WrittenChanges
    ) throws(ObjectGraphError) {
        for (source, relationships, updatedOtherwise) in ToManyVersions(request).sources {
            if !updatedOtherwise {
                let (table, zent, _) = try place(of: source)
                let changed = try run(
                    "UPDATE \(table.quotedDatabaseIdentifier) SET Z_OPT = Z_OPT + 1 WHERE Z_PK = ? AND Z_ENT = ?",
                    [source.key.rawValue, zent], true)
                if changed == 0 { throw conflict(source, deleted: true) }
            }
            written.update(source, relationships)
        }
    }

    /// After the updates: for each one-to-one relationship an update sets (`A.r = B`), no other
    /// row still names B through `r`, nor A through the inverse. The engine clears the old
    /// partners it knows of; this also clears those a one-sided link hid from it.
    func repairOneToOne(_ updates: [SaveRequest.Update], _ db: Database, _ written: inout WrittenChanges)
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
                    name, of: source.entity, naming: [destination.key.rawValue], except: source, db, &written)
                try clearToOne(
                    inverse.name, of: destination.entity, naming: [source.key.rawValue], except: destination, db,
                    &written)
            }
        }
    }

    /// After the deletes: every to-one key that names a deleted object is cleared (with its
    /// entity and order columns), whatever the model's inverse or delete rule, so no row points
    /// at nothing.
    func clearKeys(to deleted: [ObjectID], _ db: Database, _ written: inout WrittenChanges) throws(ObjectGraphError) {
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
                    var start = 0
                    while start < keys.count {
                        let chunk = Array(keys[start..<min(start + 500, keys.count)])
                        try clearToOne(toOne.name, of: entity.id, naming: chunk, except: nil, db, &written)
                        start += chunk.count
                    }
                }
            }
        }
    }

    /// Clears to-one `name` (declared on `entity` or inherited) in every row of its table whose
    /// key column holds one of `keys`, except the row of `keep`.
    private func clearToOne(
        _ name: String, of entity: EntityID, naming keys: [Int64], except keep: ObjectID?, _ db: Database,
        _ written: inout WrittenChanges
    ) throws(ObjectGraphError) {
        guard let table = layout[entity].table, let toOne = layout[entity].toOne.first(where: { $0.name == name }),
            let column = toOne.column, !keys.isEmpty
        else { return }
        let t = table.quotedDatabaseIdentifier
        let c = column.quotedDatabaseIdentifier
        let list = keys.map(String.init).joined(separator: ",")
        let skip = keep.map { " AND Z_PK != \($0.key.rawValue)" } ?? ""
        let found: [Row]
        do {
            found = try rows(db, "SELECT Z_PK, Z_ENT, \(c) FROM \(t) WHERE \(c) IN (\(list))\(skip)", cached: false)
        } catch {
            throw Self.mapError(error, file: path)
        }
        guard !found.isEmpty else { return }
        var clear = ["\(c) = NULL"]
        if let entityColumn = toOne.entityColumn { clear.append("\(entityColumn.quotedDatabaseIdentifier) = NULL") }
        if let order = orderColumn(table: table, column: column) {
            clear.append("\(order.quotedDatabaseIdentifier) = NULL")
        }
        let sql = "UPDATE \(t) SET \(clear.joined(separator: ", ")), Z_OPT = Z_OPT + 1 WHERE Z_PK = ?"
        for row in found {
            let key = Self.integer(row, 0)
            guard key > 0, let rowEntity = layout.entityByZent[Self.integer(row, 1)] else { continue }
            let id = ObjectID(entity: rowEntity, key: PrimaryKey(key))
            do {
                _ = try execute(db, sql, [key])
            } catch {
                throw Self.mapError(error, file: path)
            }
            written.update(id, [name])
            written.repaired.insert(id)
            let why =
                keep.map {
                    "it also named \(layout[$0.entity].name) p\(Self.integer(row, 2)), now linked from p\($0.key.rawValue)"
                }
                ?? "it named p\(Self.integer(row, 2)), which this save deletes"
            logger.notice("\(path): cleared \(layout[rowEntity].name) p\(key).\(name): \(why)")
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
