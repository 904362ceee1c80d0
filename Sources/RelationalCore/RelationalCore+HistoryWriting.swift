import CoreDataSchema
import Foundation
import ObjectGraph

/// Where a store keeps Core Data's persistent history: the Z_ENT numbers of its three tables'
/// rows in Z_PRIMARYKEY (`CHANGE`, `TRANSACTION`, `TRANSACTIONSTRING`) and the tombstone columns
/// of `ACHANGE`, in order.
package struct HistoryTables: Sendable {
    package var change: Int64
    package var transaction: Int64
    package var string: Int64
    package var tombstoneColumns: [String]

    package init(change: Int64, transaction: Int64, string: Int64, tombstoneColumns: [String]) {
        self.change = change
        self.transaction = transaction
        self.string = string
        self.tombstoneColumns = tombstoneColumns
    }
}

/// Writing history read from another store (``HistoryWriting``): transactions and changes keep
/// their numbers, names are interned in `ATRANSACTIONSTRING` as Core Data interns them, updated
/// properties become `ZCOLUMNS` over this model's slots again, tombstones hold the values the
/// entity preserves, and the key counters move past what was written.
extension RelationalRules {
    package func writeHistory(
        _ transactions: [HistoryTransaction], tables: HistoryTables, slots: HistorySlots,
        on connection: some SQLConnection
    ) throws(ObjectGraphError) {
        guard !transactions.isEmpty else { return }
        var interned: [String: Int64] = [:]
        var nextString: Int64?
        func intern(_ name: String?) throws(ObjectGraphError) -> SQLValue {
            guard let name else { return .null }
            if let key = interned[name] { return .integer(key) }
            if let key = try connection.integer("SELECT \"Z_PK\" FROM \"ATRANSACTIONSTRING\" WHERE \"ZNAME\" = \(name)")
            {
                interned[name] = key
                return .integer(key)
            }
            if nextString == nil {
                let counter = try connection.integer(
                    "SELECT \"Z_MAX\" FROM \"Z_PRIMARYKEY\" WHERE \"Z_ENT\" = \(tables.string)")
                let top = try connection.integer("SELECT MAX(\"Z_PK\") FROM \"ATRANSACTIONSTRING\"")
                nextString = max(counter ?? 0, top ?? 0) + 1
            }
            let key = nextString ?? 1
            nextString = key + 1
            try connection.execute(
                "INSERT INTO \"ATRANSACTIONSTRING\" (\"Z_PK\", \"Z_ENT\", \"Z_OPT\", \"ZNAME\") VALUES (\(key), \(tables.string), NULL, \(name))"
            )
            interned[name] = key
            return .integer(key)
        }
        var lastTransaction: Int64 = 0
        var lastChange: Int64 = 0
        var changeRows: [[SQLValue]] = []
        for transaction in transactions {
            try connection.execute(
                "INSERT INTO \"ATRANSACTION\" (\"Z_PK\", \"Z_ENT\", \"Z_OPT\", \"ZAUTHORTS\", \"ZBUNDLEIDTS\", \"ZCONTEXTNAMETS\", \"ZPROCESSIDTS\", \"ZTIMESTAMP\") "
                    + "VALUES (\(transaction.number), \(tables.transaction), NULL, \(try intern(transaction.author)), \(try intern(transaction.bundleID)), "
                    + "\(try intern(transaction.contextName)), \(try intern(transaction.processID)), \(SQLValue.real(transaction.timestamp.timeIntervalSinceReferenceDate)))"
            )
            lastTransaction = max(lastTransaction, transaction.number)
            for change in transaction.changes {
                guard change.objectID.entity.rawValue >= 1, change.objectID.entity.rawValue <= layout.entities.count,
                    let zent = layout[change.objectID.entity].zent
                else { continue }
                var row: [SQLValue] = [
                    .integer(change.changeID), .integer(tables.change), .integer(change.kind.rawValue), .integer(zent),
                    .integer(change.objectID.key.rawValue), .integer(transaction.number)
                ]
                // A mask that did not fit the model it was read with has no slots to mark.
                let fits = !change.updatedProperties.contains { $0.hasPrefix("<") }
                row.append(
                    change.kind == .update && fits
                        ? .blob(slots.columnMask(for: Set(change.updatedProperties), of: change.objectID.entity))
                        : .null)
                let preserved = change.kind == .delete ? slots.preservedAttributes(of: change.objectID.entity) : []
                for (i, _) in tables.tombstoneColumns.enumerated() {
                    guard i < preserved.count, case .some(.some(let value)) = change.tombstone[preserved[i]],
                        let attribute = model[change.objectID.entity].attribute(named: preserved[i])
                    else {
                        row.append(.null)
                        continue
                    }
                    row.append(
                        (try? dialect.encode(value, as: attribute, entity: model[change.objectID.entity].name)) ?? .null
                    )
                }
                changeRows.append(row)
                lastChange = max(lastChange, change.changeID)
            }
        }
        let columns =
            ["Z_PK", "Z_ENT", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"]
            + tables.tombstoneColumns
        let head = "INSERT INTO \"ACHANGE\" (\(columns.map(SQL.identifier).joined(separator: ", "))) VALUES "
        let marks = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let perStatement = rowsPerStatement(columns: columns.count)
        var start = 0
        while start < changeRows.count {
            let end = min(start + perStatement, changeRows.count)
            try connection.execute(
                SQL(
                    text: head + Array(repeating: marks, count: end - start).joined(separator: ", "),
                    arguments: changeRows[start..<end].flatMap { $0 }))
            start = end
        }
        for (zent, last) in [(tables.transaction, lastTransaction), (tables.change, lastChange)] where last > 0 {
            try connection.execute(
                "UPDATE \"Z_PRIMARYKEY\" SET \"Z_MAX\" = \(last) WHERE \"Z_ENT\" = \(zent) AND \(dialect.counter("\"Z_MAX\"", isBelow: last))"
            )
        }
        if let nextString {
            try connection.execute(
                "UPDATE \"Z_PRIMARYKEY\" SET \"Z_MAX\" = \(nextString - 1) WHERE \"Z_ENT\" = \(tables.string) AND \(dialect.counter("\"Z_MAX\"", isBelow: nextString - 1))"
            )
        }
    }
}
