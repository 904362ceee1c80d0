import GRDB

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
        var max: Int64
    }

    /// Tables by upper-cased name (SQLite table names are case-insensitive).
    var tables: [String: (name: String, columns: [Column])] = [:]
    /// Single-column and multi-column indexes: index name (upper-cased) → (table, columns).
    var indexes: [String: (table: String, columns: [String])] = [:]
    /// Z_PRIMARYKEY rows below 16000 (entities, not Core Data's system tables), by Z_ENT.
    var entityRows: [EntityRow] = []

    static func read(_ db: Database) throws -> FileSchema {
        var schema = FileSchema()
        let masterRows = try Row.fetchAll(
            db, sql: "SELECT type, name, tbl_name FROM main.sqlite_master WHERE type IN ('table', 'index')")
        for row in masterRows {
            let type: String = row[0]
            let name: String = row[1]
            let table: String = row[2]
            if type == "table" {
                // main.: a view in the temp schema may shadow the table (see textKeyViews).
                let columns = try Row.fetchAll(db, sql: "PRAGMA main.table_info(\(name.quotedDatabaseIdentifier))").map {
                    Column(name: $0["name"], type: (($0["type"] as String?) ?? "").uppercased())
                }
                schema.tables[name.uppercased()] = (name, columns)
            } else {
                let columns = try Row.fetchAll(db, sql: "PRAGMA main.index_info(\(name.quotedDatabaseIdentifier))")
                    .compactMap { $0["name"] as String? }
                schema.indexes[name.uppercased()] = (table, columns)
            }
        }
        if schema.tables["Z_PRIMARYKEY"] != nil {
            schema.entityRows = try Row.fetchAll(
                // CAST: a table rebuilt by another tool may hold these numbers as text.
                db,
                sql: "SELECT CAST(Z_ENT AS INTEGER) AS e, Z_NAME, CAST(Z_SUPER AS INTEGER), CAST(Z_MAX AS INTEGER) "
                    + "FROM main.Z_PRIMARYKEY WHERE CAST(Z_ENT AS INTEGER) < 16000 ORDER BY e"
            ).map {
                EntityRow(
                    zent: $0[0] ?? 0, name: $0[1] ?? "", superZent: $0[2] ?? 0, max: $0[3] ?? 0)
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
