import CoreDataSchema
import Foundation
import ObjectGraph

extension PostgresStore {
    /// Writes to-many changes as differences, as the SQLite store does: pairs and keys this save
    /// removes or adds, so what another writer changed in the same relationship stays. Ordered
    /// relationships get Z_FOK_ values 1024, 2048, ... in their new order. Join-table pairs go in
    /// multi-row statements (a migration writes hundreds of thousands).
    func applyToManyChanges(_ changes: [SaveRequest.ToManyChange], run: Run, insertedOrders: InsertedOrders)
        throws(ObjectGraphError)
    {
        let q = SQLText.identifier
        struct JoinWork {
            var keyColumns: [String] = []
            var orderColumns: [String] = []
            var removed: [(Int64, Int64)] = []
            var pairs: [Pair: [String: Int64]] = [:]
        }
        struct Pair: Hashable, Comparable {
            var first: Int64
            var second: Int64
            static func < (a: Pair, b: Pair) -> Bool { (a.first, a.second) < (b.first, b.second) }
        }
        var joins: [String: JoinWork] = [:]
        for change in changes {
            let entityLayout = try entityLayout(change.source.entity)
            guard let mapping = entityLayout.toMany[change.relationship] else {
                throw ObjectGraphError(
                    .notFound, "entity \(entityLayout.name) has no to-many relationship \(change.relationship)",
                    objects: [change.source])
            }
            let source = change.source.key.rawValue
            switch mapping {
            case .missing:
                throw ObjectGraphError(
                    .unsupported, "\(location) has no place to store \(entityLayout.name).\(change.relationship)",
                    objects: [change.source])
            case .foreignKey(let table, let column, let orderColumn, let isInverseToOne):
                let t = q(table)
                let c = q(column)
                if !isInverseToOne {
                    let clearOrder = orderColumn.map { ", \(q($0)) = NULL" } ?? ""
                    let removed = change.removed.map(\.key.rawValue)
                    if !removed.isEmpty {
                        _ = try run(
                            "UPDATE \(t) SET \(c) = NULL\(clearOrder) WHERE \"Z_PK\" = ANY($1::bigint[]) AND \(c) = $2",
                            [SQLText.array(removed), String(source)])
                    }
                    let added = change.added.map(\.key.rawValue)
                    if !added.isEmpty {
                        _ = try run(
                            "UPDATE \(t) SET \(c) = $1 WHERE \"Z_PK\" = ANY($2::bigint[])",
                            [String(source), SQLText.array(added)])
                    }
                }
                if let orderColumn, !change.destinations.isEmpty {
                    var places: [String] = []
                    for (i, destination) in change.destinations.enumerated() {
                        let place = Int64(i + 1) * 1024
                        if isInverseToOne, insertedOrders.place(of: destination, in: orderColumn) == place { continue }
                        places.append("(\(destination.key.rawValue), \(place))")
                    }
                    var start = 0
                    while start < places.count {
                        let end = min(start + Self.rowsPerStatement, places.count)
                        _ = try run(
                            "UPDATE \(t) SET \(q(orderColumn)) = v.place FROM (VALUES \(places[start..<end].joined(separator: ", "))) "
                                + "AS v(key, place) WHERE \(t).\"Z_PK\" = v.key AND \(t).\(c) = $1", [String(source)])
                        start = end
                    }
                }
            case .joinTable(let table, let sourceColumn, let destinationColumn, let orderColumn, _, _):
                var work = joins.removeValue(forKey: table) ?? JoinWork()
                if work.keyColumns.isEmpty { work.keyColumns = [sourceColumn, destinationColumn].sorted() }
                if let orderColumn, !work.orderColumns.contains(orderColumn) { work.orderColumns.append(orderColumn) }
                let sourceFirst = work.keyColumns[0] == sourceColumn
                func pair(_ destination: ObjectID) -> Pair {
                    let key = destination.key.rawValue
                    return sourceFirst ? Pair(first: source, second: key) : Pair(first: key, second: source)
                }
                for destination in change.removed {
                    let p = pair(destination)
                    work.removed.append((p.first, p.second))
                }
                let added = Set(change.added)
                for (i, destination) in change.destinations.enumerated()
                where added.contains(destination) || orderColumn != nil {
                    var orders = work.pairs[pair(destination)] ?? [:]
                    if let orderColumn { orders[orderColumn] = Int64(i + 1) * 1024 }
                    work.pairs[pair(destination)] = orders
                }
                joins[table] = work
            }
        }
        for (table, work) in joins.sorted(by: { $0.key < $1.key }) {
            let t = q(table)
            let keys = work.keyColumns.map(q).joined(separator: ", ")
            var start = 0
            while start < work.removed.count {
                let end = min(start + Self.rowsPerStatement, work.removed.count)
                let list = work.removed[start..<end].map { "(\($0.0), \($0.1))" }.joined(separator: ", ")
                _ = try run("DELETE FROM \(t) WHERE (\(keys)) IN (VALUES \(list))", [])
                start = end
            }
            let pairs = work.pairs.sorted { $0.key < $1.key }
            let columns = (work.keyColumns + work.orderColumns).map(q).joined(separator: ", ")
            let onConflict =
                work.orderColumns.isEmpty
                ? "DO NOTHING"
                : "DO UPDATE SET "
                    + work.orderColumns.map { "\(q($0)) = COALESCE(EXCLUDED.\(q($0)), \(t).\(q($0)))" }.joined(
                        separator: ", ")
            start = 0
            while start < pairs.count {
                let end = min(start + Self.rowsPerStatement, pairs.count)
                let rows = pairs[start..<end].map { entry in
                    "("
                        + ([String(entry.key.first), String(entry.key.second)]
                        + work.orderColumns.map { entry.value[$0].map(String.init) ?? "NULL" })
                        .joined(separator: ", ") + ")"
                }
                _ = try run(
                    "INSERT INTO \(t) (\(columns)) VALUES \(rows.joined(separator: ", ")) ON CONFLICT (\(keys)) \(onConflict)",
                    [])
                start = end
            }
        }
    }
}
