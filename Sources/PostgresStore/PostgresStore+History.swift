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
    func appendHistory(_ changes: WrittenChanges<String?>, run: Run) throws(ObjectGraphError) -> Int64? {
        guard !changes.isEmpty else { return nil }
        func nextKeys(_ zent: Int64, table: String, count: Int) throws(ObjectGraphError) -> Int64 {
            let found = try run(
                "UPDATE \"Z_PRIMARYKEY\" SET \"Z_MAX\" = GREATEST(COALESCE(\"Z_MAX\", 0), (SELECT COALESCE(MAX(\"Z_PK\"), 0) FROM "
                    + "\(SQLText.identifier(table)))) + $2 WHERE \"Z_ENT\" = $1 RETURNING \"Z_MAX\"", [String(zent), String(count)])
            guard let last = found.integer(0, 0) else { throw ObjectGraphError(.corruptStore, "\(location): Z_PRIMARYKEY has no row \(zent)") }
            return last - Int64(count) + 1
        }
        let number = try nextKeys(PostgresSchema.transactionZent, table: "ATRANSACTION", count: 1)
        _ = try run(
            "INSERT INTO \"ATRANSACTION\" (\"Z_PK\", \"Z_ENT\", \"Z_OPT\", \"ZAUTHORTS\", \"ZBUNDLEIDTS\", \"ZCONTEXTNAMETS\", "
                + "\"ZPROCESSIDTS\", \"ZTIMESTAMP\") VALUES ($1, $2, NULL, $3, $3, NULL, $3, $4)",
            [String(number), String(PostgresSchema.transactionZent), String(authorKey), String(Date().timeIntervalSinceReferenceDate)])
        var rows: [String] = []
        func zent(_ id: ObjectID) -> Int64 { layout[id.entity].zent ?? 0 }
        func add(_ type: Int, _ id: ObjectID, columns: Data?, tombstone: [String?] = []) {
            var values = [
                String(type), String(zent(id)), String(id.key.rawValue), String(number),
                columns.map { "'\(PostgresValueCoding.hex($0))'" } ?? "NULL",
            ]
            for i in tombstoneColumns.indices {
                values.append((i < tombstone.count ? tombstone[i] : nil).flatMap(SQLText.literal) ?? "NULL")
            }
            rows.append(values.joined(separator: ", "))
        }
        for id in changes.inserted { add(0, id, columns: nil) }
        for (id, names) in changes.updated.sorted(by: { $0.key < $1.key }) { add(1, id, columns: slots.columnMask(for: names, of: id.entity)) }
        for (id, tombstone) in changes.deleted { add(2, id, columns: nil, tombstone: tombstone) }
        let first = try nextKeys(PostgresSchema.changeZent, table: "ACHANGE", count: rows.count)
        let columns = (["Z_PK", "Z_ENT", "Z_OPT", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"] + tombstoneColumns)
            .map(SQLText.identifier).joined(separator: ", ")
        var start = 0
        while start < rows.count {
            let end = min(start + Self.rowsPerStatement, rows.count)
            let values = (start..<end).map { "(\(first + Int64($0)), \(PostgresSchema.changeZent), NULL, \(rows[$0]))" }
            _ = try run("INSERT INTO \"ACHANGE\" (\(columns)) VALUES \(values.joined(separator: ", "))", [])
            start = end
        }
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
        let payload = "\(number) \(instance)" + (length < Self.payloadLimit ? " " + objects.joined(separator: ",") : "")
        _ = try run("SELECT pg_notify($1, $2)", [location.channel, payload])
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
                    number: number, timestamp: Date(timeIntervalSinceReferenceDate: seconds), author: author, bundleID: author,
                    contextName: nil, processID: author, changes: []))
        }
        guard !result.isEmpty else { return [] }
        let changes = try read(
            "SELECT \"Z_PK\", \"ZCHANGETYPE\", \"ZENTITY\", \"ZENTITYPK\", \"ZCOLUMNS\", \"ZTRANSACTIONID\" FROM \"ACHANGE\" "
                + "WHERE \"ZTRANSACTIONID\" > $1 ORDER BY \"Z_PK\"", [String(after)])
        for row in 0..<changes.rowCount {
            guard let changeID = changes.integer(row, 0), let kind = changes.integer(row, 1).flatMap(HistoryChange.Kind.init(rawValue:)),
                let entity = changes.integer(row, 2).flatMap({ layout.entityByZent[$0] }), let key = changes.integer(row, 3),
                let number = changes.integer(row, 5), let i = index[number]
            else { continue }
            var change = HistoryChange(
                changeID: changeID, kind: kind, objectID: ObjectID(entity: entity, key: PrimaryKey(key)), updatedProperties: [],
                tombstone: [:])
            if kind == .update, let bytes = changes.bytes(row, 4), let mask = PostgresValueCoding.unhex(bytes) {
                change.updatedProperties = slots.decode(mask: mask, of: entity) ?? []
            }
            result[i].changes.append(change)
        }
        return result
    }
}
