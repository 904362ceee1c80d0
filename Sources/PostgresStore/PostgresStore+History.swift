import CoreDataSchema
import Foundation
import ObjectGraph

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

    /// Appends the history of `changes`; returns the transaction's number (nil when the save
    /// changed no object, a metadata-only save).
    ///
    /// The keys come from Z_PRIMARYKEY's TRANSACTION and CHANGE rows, whose locks every commit of
    /// every machine takes until it ends: so the whole history of a save of up to
    /// ``rowsPerStatement`` objects is one statement (numbers, rows, NOTIFY) followed by COMMIT,
    /// two round trips under those locks instead of six.
    /// `timestamp` is the transaction's ZTIMESTAMP: with the number, it names this save's row when
    /// a lost COMMIT is looked for (PostgresStore+Saving.swift).
    func appendHistory(_ changes: WrittenChanges<String?>, at timestamp: Date = Date(), run: Run)
        throws(ObjectGraphError)
        -> Int64?
    {
        guard !changes.isEmpty else { return nil }
        func zent(_ id: ObjectID) -> Int64 { layout[id.entity].zent ?? 0 }
        // Each change: kind, Z_ENT, Z_PK, ZCOLUMNS and tombstones as SQL, typed.
        var rows: [String] = []
        func add(_ type: Int, _ id: ObjectID, columns: Data?, tombstone: [String?] = []) {
            var values = [
                String(type), String(zent(id)), String(id.key.rawValue),
                columns.map { "'\(PostgresValueCoding.hex($0))'::bytea" } ?? "NULL::bytea"
            ]
            for i in tombstoneColumns.indices {
                values.append(
                    ((i < tombstone.count ? tombstone[i] : nil).flatMap(SQLText.literal) ?? "NULL") + "::text")
            }
            rows.append(values.joined(separator: ", "))
        }
        for id in changes.inserted { add(0, id, columns: nil) }
        for (id, names) in changes.updated.sorted(by: { $0.key < $1.key }) {
            add(1, id, columns: slots.columnMask(for: names, of: id.entity))
        }
        for (id, tombstone) in changes.deleted { add(2, id, columns: nil, tombstone: tombstone) }
        // The objects ride in the announcement when they fit (NOTIFY payloads stop at 8000
        // bytes): listeners then need no query to learn them.
        var objects: [String] = []
        var length = 0
        func note(_ id: ObjectID, _ kind: Int) {
            let entry = "\(zent(id)).\(id.key.rawValue).\(kind)"
            length += entry.utf8.count + 1
            objects.append(entry)
        }
        for id in changes.inserted { note(id, 0) }
        for id in changes.updated.keys { note(id, 1) }
        for (id, _) in changes.deleted { note(id, 2) }
        // `N UUID@SECONDS [objects]`: the writer, and when it committed (listeners measure the
        // announcement's lag; older listeners read the writer as a whole word, never their own).
        let committed = timestamp.timeIntervalSinceReferenceDate
        let announced =
            instance + "@" + String(format: "%.3f", committed)
            + (length < Self.payloadLimit ? " " + objects.joined(separator: ",") : "")
        let tombstones = tombstoneColumns.map { ", v.\(SQLText.identifier($0))" }.joined()
        let changeColumns =
            (["Z_PK", "Z_ENT", "Z_OPT", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"]
            + tombstoneColumns)
            .map(SQLText.identifier).joined(separator: ", ")
        let valueNames = (["i", "kind", "zent", "pk", "columns"] + tombstoneColumns).map(SQLText.identifier).joined(
            separator: ", ")
        // Both key rows in one UPDATE, so every commit locks them in the same order.
        let keysSQL =
            "k AS (UPDATE \"Z_PRIMARYKEY\" SET \"Z_MAX\" = COALESCE(\"Z_MAX\", 0) + CASE WHEN \"Z_ENT\" = \(PostgresSchema.transactionZent) "
            + "THEN 1 ELSE \(rows.count) END WHERE \"Z_ENT\" IN (\(PostgresSchema.changeZent), \(PostgresSchema.transactionZent)) "
            + "RETURNING \"Z_ENT\" AS e, \"Z_MAX\" AS m), t AS (SELECT m AS n FROM k WHERE e = \(PostgresSchema.transactionZent)), "
            + "c AS (SELECT m - \(rows.count) AS base FROM k WHERE e = \(PostgresSchema.changeZent)), "
            + "a AS (INSERT INTO \"ATRANSACTION\" (\"Z_PK\", \"Z_ENT\", \"Z_OPT\", \"ZAUTHORTS\", \"ZBUNDLEIDTS\", "
            + "\"ZCONTEXTNAMETS\", \"ZPROCESSIDTS\", \"ZTIMESTAMP\") SELECT t.n, \(PostgresSchema.transactionZent), NULL, $3::bigint, "
            + "$3::bigint, NULL, $3::bigint, $4::double precision FROM t), x AS (SELECT pg_notify($1::text, t.n::text || ' ' || $2::text) FROM t)"
        let parameters = [
            location.channel, announced, String(authorKey), String(timestamp.timeIntervalSinceReferenceDate)
        ]
        func insertChanges(_ slice: ArraySlice<String>, base: String, from: String) -> String {
            let values = slice.enumerated().map { "(\($0.offset + 1), \($0.element))" }.joined(separator: ", ")
            return
                "INSERT INTO \"ACHANGE\" (\(changeColumns)) SELECT \(base) + v.\"i\", \(PostgresSchema.changeZent), NULL, v.\"kind\", "
                + "v.\"zent\", v.\"pk\", t.n, v.\"columns\"\(tombstones) FROM \(from) (VALUES \(values)) AS v(\(valueNames))"
        }
        let single = rows.count <= Self.rowsPerStatement
        let found = try run(
            "WITH \(keysSQL)" + (single ? ", h AS (\(insertChanges(rows[...], base: "c.base", from: "t, c,")))" : "")
                + " SELECT t.n, c.base FROM t, c, x", parameters)
        guard let number = found.integer(0, 0), let base = found.integer(0, 1) else {
            throw ObjectGraphError(.corruptStore, "\(location): Z_PRIMARYKEY lacks its history rows")
        }
        // A large save (a migration): its changes in statements of ``rowsPerStatement`` rows.
        var start = single ? rows.count : 0
        while start < rows.count {
            let end = min(start + Self.rowsPerStatement, rows.count)
            _ = try run(
                "WITH t AS (SELECT \(number)::bigint AS n) "
                    + insertChanges(rows[start..<end], base: String(base + Int64(start)), from: "t,"), [])
            start = end
        }
        return number
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
