import CoreDataSchema
import Foundation
import ObjectGraph
import RelationalCore

/// Core Data's persistent history in PostgreSQL: every save appends one ATRANSACTION row and one
/// ACHANGE row per inserted, updated and deleted object (ZCOLUMNS and tombstones as Core Data
/// writes them, from ``HistorySlots``), in the save's own transaction, and announces the
/// transaction's number with NOTIFY, which PostgreSQL delivers to every listener when the
/// transaction commits and never when it rolls back.
///
/// Transaction numbers come from Z_PRIMARYKEY's TRANSACTION row, moved in the transaction: its
/// row lock is held until the commit, so numbers follow the order in which saves commit.
extension PostgresStore {
    /// Bytes of object list an announcement carries at most (PostgreSQL refuses payloads of 8000
    /// bytes or more); a longer list is read from ACHANGE by the listeners.
    static let payloadLimit = 7000

    /// Appends the history rows of a save (``HistoryRow``); returns the transaction's number (nil
    /// when the save changed no object, a metadata-only save).
    ///
    /// The keys come from Z_PRIMARYKEY's TRANSACTION and CHANGE rows, whose locks every commit of
    /// every machine takes until it ends: so the whole history of a save of up to
    /// ``PostgresDialect/rowsPerStatement`` objects is one statement (numbers, rows, NOTIFY)
    /// followed by COMMIT, two round trips under those locks instead of six. Every value is bound.
    /// `timestamp` is the transaction's ZTIMESTAMP: with the number, it names this save's row when
    /// a lost COMMIT is looked for (PostgresStore+Saving.swift).
    func appendHistory(_ rows: [HistoryRow], at timestamp: Date = Date(), on connection: PostgresConnection)
        throws(ObjectGraphError) -> Int64?
    {
        guard !rows.isEmpty else { return nil }
        // The objects ride in the announcement when they fit (NOTIFY payloads stop at 8000
        // bytes): listeners then need no query to learn them.
        var objects: [String] = []
        var length = 0
        for row in rows {
            let entry = "\(row.zent).\(row.key).\(row.kind)"
            length += entry.utf8.count + 1
            objects.append(entry)
        }
        // `N UUID@SECONDS [objects]`: the writer, and when it committed (listeners measure the
        // announcement's lag; older listeners read the writer as a whole word, never their own).
        let committed = timestamp.timeIntervalSinceReferenceDate
        let announced =
            instance + "@" + String(format: "%.3f", committed)
            + (length < Self.payloadLimit ? " " + objects.joined(separator: ",") : "")
        let transactionZent = PostgresSchema.transactionZent
        let changeZent = PostgresSchema.changeZent
        let count = Int64(rows.count)
        // Both key rows in one UPDATE, so every commit locks them in the same order.
        let keys: SQL =
            "k AS (UPDATE \"Z_PRIMARYKEY\" SET \"Z_MAX\" = COALESCE(\"Z_MAX\", 0) + CASE WHEN \"Z_ENT\" = \(transactionZent) "
            + "THEN 1 ELSE \(count) END WHERE \"Z_ENT\" IN (\(changeZent), \(transactionZent)) "
            + "RETURNING \"Z_ENT\" AS e, \"Z_MAX\" AS m), t AS (SELECT m AS n FROM k WHERE e = \(transactionZent)), "
            + "c AS (SELECT m - \(count) AS base FROM k WHERE e = \(changeZent)), "
            + "a AS (INSERT INTO \"ATRANSACTION\" (\"Z_PK\", \"Z_ENT\", \"Z_OPT\", \"ZAUTHORTS\", \"ZBUNDLEIDTS\", "
            + "\"ZCONTEXTNAMETS\", \"ZPROCESSIDTS\", \"ZTIMESTAMP\") SELECT t.n, \(transactionZent), NULL, CAST(\(authorKey) AS bigint), "
            + "CAST(\(authorKey) AS bigint), NULL, CAST(\(authorKey) AS bigint), CAST(\(SQLValue.real(timestamp.timeIntervalSinceReferenceDate)) AS double precision) FROM t), "
            + "x AS (SELECT pg_notify(CAST(\(location.channel) AS text), t.n::text || ' ' || CAST(\(announced) AS text)) FROM t)"
        let perStatement = PostgresDialect().rowsPerStatement
        let single = rows.count <= perStatement
        let transaction = PostgresSQLConnection(store: self, connection: connection)
        var number: Int64?
        var base: Int64?
        try transaction.query(
            "WITH \(keys)\(single ? ", h AS (" + insertChanges(rows[...], first: 0, from: "t, c,") + ")" : "") SELECT t.n, c.base FROM t, c, x"
        ) { row in
            number = row.integer(0)
            base = row.integer(1)
        }
        guard let number, let base else {
            throw ObjectGraphError(.corruptStore, "\(location): Z_PRIMARYKEY lacks its history rows")
        }
        // A large save (a migration): its changes in one COPY, numbered here as the statement
        // above numbers them (c.base + 1, + 2, ...).
        if !single {
            let columns = [
                "Z_PK", "Z_ENT", "Z_OPT", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"
            ]
            let values = rows.enumerated().map { (i, row) -> [SQLValue] in
                [
                    .integer(base + Int64(i) + 1), .integer(changeZent), .null, .integer(row.kind), .integer(row.zent),
                    .integer(row.key), .integer(number), row.columns.map(SQLValue.blob) ?? .null
                ] + tombstoneColumns.indices.map { $0 < row.tombstone.count ? Self.text(row.tombstone[$0]) : .null }
            }
            if try transaction.appendRows(values[...], into: "ACHANGE", columns: columns + tombstoneColumns) {
                return number
            }
        }
        // Else its changes in statements of many rows each.
        var start = single ? rows.count : 0
        while start < rows.count {
            let end = min(start + perStatement, rows.count)
            try transaction.execute(
                "WITH t AS (SELECT CAST(\(number) AS bigint) AS n), c AS (SELECT CAST(\(base) AS bigint) AS base) "
                    + insertChanges(rows[start..<end], first: Int64(start), from: "t, c,"))
            start = end
        }
        return number
    }

    /// The INSERT of ACHANGE rows `slice` (the `first`-th change of the save first), numbered from
    /// `c.base` and attached to transaction `t.n`.
    private func insertChanges(_ slice: ArraySlice<HistoryRow>, first: Int64, from: String) -> SQL {
        let columns =
            (["Z_PK", "Z_ENT", "Z_OPT", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"]
            + tombstoneColumns).map(SQL.identifier).joined(separator: ", ")
        let names = (["i", "kind", "zent", "pk", "columns"] + tombstoneColumns).map(SQL.identifier).joined(
            separator: ", ")
        let tombstones = tombstoneColumns.map { ", v." + SQL.identifier($0) }.joined()
        var values: [SQL] = []
        for (offset, row) in slice.enumerated() {
            var parts: [SQL] = [
                "CAST(\(first + Int64(offset) + 1) AS bigint)", "CAST(\(row.kind) AS integer)",
                "CAST(\(row.zent) AS integer)", "CAST(\(row.key) AS bigint)",
                "CAST(\(row.columns.map(SQLValue.blob) ?? .null) AS bytea)"
            ]
            for i in tombstoneColumns.indices {
                parts.append("CAST(\(i < row.tombstone.count ? Self.text(row.tombstone[i]) : .null) AS text)")
            }
            values.append("(" + SQL.joined(parts, separator: ", ") + ")")
        }
        return SQL(
            text:
                "INSERT INTO \"ACHANGE\" (\(columns)) SELECT c.base + v.\"i\", \(PostgresSchema.changeZent), NULL, v.\"kind\", "
                + "v.\"zent\", v.\"pk\", t.n, v.\"columns\"\(tombstones) FROM \(from) (VALUES ")
            + SQL.joined(values, separator: ", ") + SQL(text: ") AS v(\(names))")
    }

    /// A tombstone value as the text ACHANGE's tombstone columns hold.
    private static func text(_ value: SQLValue) -> SQLValue {
        PostgresSQLConnection.text(value).map(SQLValue.text) ?? .null
    }

    /// The transactions after number `after`, with their changes, as an app reads them.
    public func persistentHistory(after: Int64 = 0) throws(ObjectGraphError) -> [HistoryTransaction] {
        let transactions = try read(
            "SELECT t.\"Z_PK\", t.\"ZTIMESTAMP\", s.\"ZNAME\" FROM \"ATRANSACTION\" t LEFT JOIN \"ATRANSACTIONSTRING\" s "
                + "ON s.\"Z_PK\" = t.\"ZAUTHORTS\" WHERE t.\"Z_PK\" > $1 ORDER BY t.\"Z_PK\"", [String(after)])
        var result: [HistoryTransaction] = []
        var index: [Int64: Int] = [:]
        for row in 0..<transactions.rowCount {
            guard let number = transactions.integer(row, 0) else { continue }
            let seconds = transactions.text(row, 1).flatMap(PostgresValueCoding.double) ?? 0
            let author = transactions.text(row, 2)
            index[number] = result.count
            result.append(
                HistoryTransaction(
                    number: number, timestamp: HistoryTransaction.timestamp(secondsSinceReferenceDate: seconds),
                    author: author,
                    bundleID: author,
                    contextName: nil, processID: author, changes: []))
        }
        guard !result.isEmpty else { return [] }
        let changes = try read(
            "SELECT \"Z_PK\", \"ZCHANGETYPE\", \"ZENTITY\", \"ZENTITYPK\", \"ZCOLUMNS\", \"ZTRANSACTIONID\" FROM \"ACHANGE\" "
                + "WHERE \"ZTRANSACTIONID\" > $1 ORDER BY \"Z_PK\"", [String(after)])
        for row in 0..<changes.rowCount {
            guard let changeID = changes.integer(row, 0),
                let kind = changes.integer(row, 1).flatMap(HistoryChange.Kind.init(rawValue:)),
                let entity = changes.integer(row, 2).flatMap({ layout.entityByZent[$0] }),
                let key = changes.integer(row, 3),
                let number = changes.integer(row, 5), let i = index[number]
            else { continue }
            var change = HistoryChange(
                changeID: changeID, kind: kind, objectID: ObjectID(entity: entity, key: PrimaryKey(key)),
                updatedProperties: [],
                tombstone: [:])
            if kind == .update, let bytes = changes.bytes(row, 4), let mask = PostgresValueCoding.unhex(bytes) {
                change.updatedProperties = slots.decode(mask: mask, of: entity) ?? []
            }
            result[i].changes.append(change)
        }
        return result
    }
}

/// Writing history carried from another store (``HistoryWriting``), through the relational core,
/// in one transaction on the writer's connection.
extension PostgresStore: HistoryWriting {
    public func writeHistory(_ transactions: [HistoryTransaction]) throws(ObjectGraphError) {
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(location) is open read-only") }
        guard !transactions.isEmpty else { return }
        let tables = HistoryTables(
            change: PostgresSchema.changeZent, transaction: PostgresSchema.transactionZent,
            string: PostgresSchema.stringZent, tombstoneColumns: tombstoneColumns)
        try inTransaction { (connection) throws(ObjectGraphError) in
            try core.writeHistory(
                transactions, tables: tables, slots: slots,
                on: PostgresSQLConnection(store: self, connection: connection))
        }
    }
}
