import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph
import RelationalCore

/// Writing history carried from another store (``HistoryWriting``), through the relational core,
/// into the history tables of this file, made as Core Data makes them when the file has none
/// (`ATRANSACTIONSTRING`, `ATRANSACTION`, `ACHANGE` with a tombstone column per attribute the most
/// preserving entity keeps, their indexes and Z_PRIMARYKEY rows 16001–16003).
extension SQLiteStore: HistoryWriting {
    /// Core Data's statements for the history tables of a store that tracks history.
    static let historySchema = [
        "CREATE TABLE ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )",
        "CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, "
            + "ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, "
            + "ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB )",
        "CREATE TABLE ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, "
            + "ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB )",
        "CREATE INDEX ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID)",
        "CREATE INDEX ATRANSACTION_ZAUTHORTS_INDEX ON ATRANSACTION (ZAUTHORTS)",
        "CREATE INDEX ATRANSACTION_ZBUNDLEIDTS_INDEX ON ATRANSACTION (ZBUNDLEIDTS)",
        "CREATE INDEX ATRANSACTION_ZCONTEXTNAMETS_INDEX ON ATRANSACTION (ZCONTEXTNAMETS)",
        "CREATE INDEX ATRANSACTION_ZPROCESSIDTS_INDEX ON ATRANSACTION (ZPROCESSIDTS)",
        "CREATE INDEX Z_TRANSACTION_TransactionAuthorIndex ON ATRANSACTION (ZAUTHOR COLLATE BINARY ASC)",
        "CREATE INDEX Z_TRANSACTION_TransactionTimestampIndex ON ATRANSACTION (ZTIMESTAMP COLLATE BINARY ASC)",
        "CREATE UNIQUE INDEX Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME COLLATE BINARY ASC)"
    ]

    public func writeHistory(_ transactions: [HistoryTransaction]) throws(ObjectGraphError) {
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(path) is open read-only") }
        guard !transactions.isEmpty else { return }
        let slots = HistorySlots(model: model)
        try write { db throws in
            let connection = connection(db)
            let tables = try historyTables(db, connection, tombstones: slots.maximumPreservedCount)
            try core.writeHistory(transactions, tables: tables, slots: slots, on: connection)
        }
    }

    /// The file's history tables, made (or given the tombstone columns they lack) first.
    private func historyTables(_ db: Database, _ connection: SQLiteConnection, tombstones needed: Int)
        throws(ObjectGraphError) -> RelationalCore.HistoryTables
    {
        var schema: FileSchema
        do { schema = try FileSchema.read(db, file: path) } catch { throw Self.mapError(error, file: path) }
        if !Self.historyTables.allSatisfy({ schema.table(named: $0) != nil }) {
            for statement in Self.historySchema { try connection.execute(SQL(text: statement)) }
            for (zent, name) in [(Int64(16001), "CHANGE"), (16002, "TRANSACTION"), (16003, "TRANSACTIONSTRING")] {
                try connection.execute(
                    "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (\(zent), \(name), 0, 0)")
            }
            do { schema = try FileSchema.read(db, file: path) } catch { throw Self.mapError(error, file: path) }
        }
        var columns = schema.tombstoneColumns
        while columns.count < needed {
            let name = "ZTOMBSTONE\(columns.count)"
            try connection.execute(SQL(text: "ALTER TABLE ACHANGE ADD COLUMN \(SQL.identifier(name)) BLOB"))
            columns.append(name)
        }
        var zents: [String: Int64] = [:]
        try connection.query(
            "SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME IN ('CHANGE', 'TRANSACTION', 'TRANSACTIONSTRING')"
        ) { row in
            if let name = row.bytes(0).flatMap({ String(data: $0, encoding: .utf8) }), let zent = row.integer(1) {
                zents[name] = zent
            }
        }
        guard let change = zents["CHANGE"], let transaction = zents["TRANSACTION"],
            let string = zents["TRANSACTIONSTRING"]
        else {
            throw ObjectGraphError(
                .unsupported,
                "\(path) has history tables but no Z_PRIMARYKEY rows CHANGE, TRANSACTION and TRANSACTIONSTRING")
        }
        return RelationalCore.HistoryTables(
            change: change, transaction: transaction, string: string, tombstoneColumns: columns)
    }
}
