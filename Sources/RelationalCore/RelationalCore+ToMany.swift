import CoreDataSchema
import Foundation
import ObjectGraph

/// To-many changes, written as differences: pairs and keys this save removes or adds, so what
/// another writer changed in the same relationship stays. Ordered relationships get Z_FOK_
/// values 1024, 2048, ... in their new order.
extension RelationalRules {
    /// A join row's two keys, in the order of its key columns' names.
    private struct JoinPair: Hashable, Comparable {
        var first: Int64
        var second: Int64
        static func < (a: JoinPair, b: JoinPair) -> Bool { (a.first, a.second) < (b.first, b.second) }
        var values: [SQLValue] { [.integer(first), .integer(second)] }
    }

    private struct JoinWork {
        var keyColumns: [String] = []
        var orderColumns: [String] = []
        var removed: [JoinPair] = []
        var pairs: [JoinPair: [String: Int64]] = [:]
    }

    func applyToManyChanges(
        _ changes: [SaveRequest.ToManyChange], on connection: some SQLConnection, insertedOrders: InsertedOrders
    ) throws(ObjectGraphError) {
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
                    .unsupported,
                    "\(place) has no place to store \(entityLayout.name).\(change.relationship); it cannot be changed",
                    objects: [change.source])
            case .foreignKey(let table, let column, let orderColumn, let isInverseToOne):
                if !isInverseToOne {
                    // No inverse: the hidden key column is this relationship's only record.
                    let removed = change.removed.map(\.key.rawValue)
                    if !removed.isEmpty {
                        let order = orderColumn.map { ", " + SQL.identifier($0) + " = NULL" } ?? ""
                        try connection.execute(
                            "UPDATE \(identifier: table) SET \(identifier: column) = NULL\(SQL(text: order)) WHERE \(identifier: column) = \(source) AND \(dialect.column("\"Z_PK\"", isAnyOf: removed))"
                        )
                    }
                    let added = change.added.map(\.key.rawValue)
                    if !added.isEmpty {
                        try connection.execute(
                            "UPDATE \(identifier: table) SET \(identifier: column) = \(source) WHERE \(dialect.column("\"Z_PK\"", isAnyOf: added))"
                        )
                    }
                }
                // The inverse to-one is in the destinations' updates; only the order is written here.
                if let orderColumn, !change.destinations.isEmpty {
                    var places: [(key: Int64, place: Int64)] = []
                    for (i, destination) in change.destinations.enumerated() {
                        let place = Int64(i + 1) * 1024
                        // Rows this save inserted got their place from the INSERT.
                        if isInverseToOne, insertedOrders.place(of: destination, in: orderColumn) == place { continue }
                        places.append((destination.key.rawValue, place))
                    }
                    try writeOrder(
                        places, table: table, column: column, orderColumn: orderColumn, source: source, on: connection)
                }
            case .joinTable(let table, let sourceColumn, let destinationColumn, let orderColumn, _, _):
                // Taken out of the dictionary while it changes: a copy left there would make every
                // change copy all pairs so far (a migration of 100,000 objects took minutes).
                var work = joins.removeValue(forKey: table) ?? JoinWork()
                if work.keyColumns.isEmpty { work.keyColumns = [sourceColumn, destinationColumn].sorted() }
                if let orderColumn, !work.orderColumns.contains(orderColumn) { work.orderColumns.append(orderColumn) }
                let sourceFirst = work.keyColumns[0] == sourceColumn
                func pair(_ destination: ObjectID) -> JoinPair {
                    let key = destination.key.rawValue
                    return sourceFirst ? JoinPair(first: source, second: key) : JoinPair(first: key, second: source)
                }
                for destination in change.removed { work.removed.append(pair(destination)) }
                // What was added is among the destinations: as many means all of them (an insert).
                let addedIDs = change.added
                let allAdded = addedIDs.count == change.destinations.count
                let added = allAdded ? [] : Set(addedIDs)
                for (i, destination) in change.destinations.enumerated()
                where allAdded || added.contains(destination) || orderColumn != nil {
                    var orders = work.pairs[pair(destination)] ?? [:]
                    if let orderColumn { orders[orderColumn] = Int64(i + 1) * 1024 }
                    work.pairs[pair(destination)] = orders
                }
                joins[table] = work
            }
        }
        for (table, work) in joins.sorted(by: { $0.key < $1.key }) {
            let perStatement = rowsPerStatement(columns: 2)
            var start = 0
            while start < work.removed.count {
                let end = min(start + perStatement, work.removed.count)
                try connection.execute(
                    "DELETE FROM \(identifier: table) WHERE \(rows(work.keyColumns, Array(work.removed[start..<end].map(\.values))))"
                )
                start = end
            }
            let rows = work.pairs.sorted { $0.key < $1.key }.map { entry in
                entry.key.values + work.orderColumns.map { entry.value[$0].map(SQLValue.integer) ?? .null }
            }
            let perInsert = dialect.joinRowsPerStatement
            start = 0
            while start < rows.count {
                let end = min(start + perInsert, rows.count)
                for statement in dialect.joinRows(
                    into: table, keys: work.keyColumns, orders: work.orderColumns, rows: rows[start..<end])
                {
                    try connection.execute(statement)
                }
                start = end
            }
        }
    }

    /// Writes the places of destinations of an ordered to-many kept in their rows: one UPDATE per
    /// row where the dialect runs one statement per row, else many rows per statement.
    private func writeOrder(
        _ places: [(key: Int64, place: Int64)], table: String, column: String, orderColumn: String, source: Int64,
        on connection: some SQLConnection
    ) throws(ObjectGraphError) {
        let perStatement = rowsPerStatement(columns: 2)
        var start = 0
        while start < places.count {
            let end = min(start + perStatement, places.count)
            let chunk = places[start..<end]
            if chunk.count == 1, let only = chunk.first {
                try connection.execute(
                    "UPDATE \(identifier: table) SET \(identifier: orderColumn) = \(only.place) WHERE \"Z_PK\" = \(only.key) AND \(identifier: column) = \(source)"
                )
            } else {
                let values = SQL.joined(
                    chunk.map { "SELECT CAST(\($0.key) AS BIGINT) AS k, CAST(\($0.place) AS BIGINT) AS p" as SQL },
                    separator: " UNION ALL ")
                let t = SQL.identifier(table)
                try connection.execute(
                    "UPDATE \(identifier: table) SET \(identifier: orderColumn) = v.p FROM (\(values)) AS v WHERE \(SQL(text: t)).\"Z_PK\" = v.k AND \(SQL(text: t)).\(identifier: column) = \(source)"
                )
            }
            start = end
        }
    }

    /// The condition that a row's `columns` hold one of `rows` (each the columns' values).
    func rows(_ columns: [String], _ rows: [[SQLValue]]) -> SQL {
        if rows.count == 1, let only = rows.first {
            return SQL.joined(zip(columns, only).map { "\(identifier: $0.0) = \($0.1)" as SQL }, separator: " AND ")
        }
        let tuple = "(" + columns.map(SQL.identifier).joined(separator: ", ") + ")"
        let values = SQL.joined(
            rows.map { row in
                "(" + SQL.joined(row.map { "CAST(\($0) AS BIGINT)" as SQL }, separator: ", ") + ")"
            }, separator: ", ")
        return SQL(text: tuple + " IN (VALUES ") + values + ")"
    }
}
