import GRDB
import ObjectGraph

/// What an SQLite file holds: its tables with their columns, its indexes and the rows of
/// Z_PRIMARYKEY, read once when a store opens.
struct FileSchema: Sendable {
    struct Column: Sendable, Hashable {
        var name: String
        /// The declared type, upper-cased ("INTEGER", "VARCHAR", "TIMESTAMP", ...).
        var type: String
    }

    struct EntityRow: Sendable, Hashable {
        var zent: Int64
        var name: String
        var superZent: Int64
    }

    /// Tables by upper-cased name (SQLite table names are case-insensitive).
    var tables: [String: (name: String, columns: [Column])] = [:]
    /// Single-column and multi-column indexes: index name (upper-cased) → (table, columns).
    var indexes: [String: (table: String, columns: [String])] = [:]
    /// Z_PRIMARYKEY rows below 16000 (entities, not Core Data's system tables), by Z_ENT.
    var entityRows: [EntityRow] = []

    static func read(_ db: Database, file: String) throws -> FileSchema {
        var schema = FileSchema()
        let masterRows = try Row.fetchAll(
            db, sql: "SELECT type, name, tbl_name FROM main.sqlite_master WHERE type IN ('table', 'index')")
        // Every value is read by storage class (StoredValue.swift): a damaged file can hold
        // anything anywhere, and GRDB's typed subscripts trap on what does not convert.
        for row in masterRows {
            let values = row.storedValues
            guard let type = values[0].storedText, let name = values[1].storedText, let table = values[2].storedText
            else { continue }
            if type == "table" {
                // main.: a view in the temp schema may shadow the table (see textKeyViews).
                // table_info: cid, name, type, notnull, dflt_value, pk.
                let columns = try Row.fetchAll(db, sql: "PRAGMA main.table_info(\(name.quotedDatabaseIdentifier))").compactMap {
                    (info: Row) -> Column? in
                    let values = info.storedValues
                    guard values.count > 2, let column = values[1].storedText else { return nil }
                    return Column(name: column, type: (values[2].storedText ?? "").uppercased())
                }
                schema.tables[name.uppercased()] = (name, columns)
            } else {
                // index_info: seqno, cid, name (NULL for an expression).
                let columns = try Row.fetchAll(db, sql: "PRAGMA main.index_info(\(name.quotedDatabaseIdentifier))")
                    .compactMap { (info: Row) -> String? in
                        let values = info.storedValues
                        return values.count > 2 ? values[2].storedText : nil
                    }
                schema.indexes[name.uppercased()] = (table, columns)
            }
        }
        if let bookkeeping = schema.tables["Z_PRIMARYKEY"] {
            let names = Set(bookkeeping.columns.map { $0.name.uppercased() })
            for column in ["Z_ENT", "Z_NAME", "Z_SUPER", "Z_MAX"] where !names.contains(column) {
                throw ObjectGraphError(
                    .corruptStore,
                    "\(file): table Z_PRIMARYKEY has no column \(column): this is not a Core Data store, or its bookkeeping was damaged")
            }
            // Rows whose Z_ENT is not a positive integer (or its digits as text) name no entity a
            // row could point at; Z_NAME that is not text reads as empty (the entity is then named
            // Entity<Z_ENT>), Z_SUPER that is not an integer as a root.
            schema.entityRows = try Row.fetchAll(
                // CAST: a table rebuilt by another tool may hold these numbers as text.
                db,
                sql: "SELECT CAST(Z_ENT AS INTEGER) AS e, Z_NAME, CAST(Z_SUPER AS INTEGER) "
                    + "FROM main.Z_PRIMARYKEY WHERE CAST(Z_ENT AS INTEGER) < 16000 ORDER BY e"
            ).compactMap { (row: Row) -> EntityRow? in
                let values = row.storedValues
                guard let zent = values[0].storedInteger, zent > 0 else { return nil }
                return EntityRow(
                    zent: zent, name: values[1].storedText ?? "", superZent: values[2].storedInteger ?? 0)
            }
        }
        return schema
    }

    func table(named name: String) -> (name: String, columns: [Column])? { tables[name.uppercased()] }

    /// Entity tables whose Z_PK, Z_ENT or Z_OPT column has no INTEGER affinity (declared without
    /// "INT", as a table rebuilt by another tool may be): their keys may be stored as text, which
    /// an integer comparison never matches.
    var textKeyTables: [String] {
        tables.values.filter { table in
            let types = Dictionary(table.columns.map { ($0.name.uppercased(), $0.type) }, uniquingKeysWith: { a, _ in a })
            guard types["Z_PK"] != nil, types["Z_ENT"] != nil, table.name.uppercased().hasPrefix("Z"),
                !table.name.uppercased().hasPrefix("Z_")
            else { return false }
            return ["Z_PK", "Z_ENT", "Z_OPT"].contains { types[$0].map { !$0.contains("INT") } ?? false }
        }.map(\.name).sorted()
    }

    /// For each of ``textKeyTables``, a temp view of the same name that reads it with its keys
    /// cast to integers; in the temp schema it shadows the table for unqualified names.
    var textKeyViews: [String] {
        textKeyTables.map { name in
            let columns = self.columns(of: name).map { column in
                let quoted = column.name.quotedDatabaseIdentifier
                return ["Z_PK", "Z_ENT", "Z_OPT"].contains(column.name.uppercased())
                    ? "CAST(\(quoted) AS INTEGER) AS \(quoted)" : quoted
            }
            return "CREATE TEMP VIEW IF NOT EXISTS \(name.quotedDatabaseIdentifier) AS SELECT \(columns.joined(separator: ", ")) "
                + "FROM main.\(name.quotedDatabaseIdentifier)"
        }
    }

    func columns(of table: String) -> [Column] { tables[table.uppercased()]?.columns ?? [] }

    func hasColumn(_ column: String, in table: String) -> Bool {
        columns(of: table).contains { $0.name.uppercased() == column.uppercased() }
    }

    /// Whether `column` of `table` has an index on it alone (how Core Data marks to-one columns).
    func hasSingleColumnIndex(on column: String, in table: String) -> Bool {
        indexes.values.contains {
            $0.table.uppercased() == table.uppercased() && $0.columns.count == 1
                && $0.columns[0].uppercased() == column.uppercased()
        }
    }
}
