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
            db, sql: "SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')")
        for row in masterRows {
            let type: String = row[0]
            let name: String = row[1]
            let table: String = row[2]
            if type == "table" {
                let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(\(name.quotedDatabaseIdentifier))").map {
                    Column(name: $0["name"], type: (($0["type"] as String?) ?? "").uppercased())
                }
                schema.tables[name.uppercased()] = (name, columns)
            } else {
                let columns = try Row.fetchAll(db, sql: "PRAGMA index_info(\(name.quotedDatabaseIdentifier))")
                    .compactMap { $0["name"] as String? }
                schema.indexes[name.uppercased()] = (table, columns)
            }
        }
        if schema.tables["Z_PRIMARYKEY"] != nil {
            schema.entityRows = try Row.fetchAll(
                db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT"
            ).map {
                EntityRow(
                    zent: $0[0] ?? 0, name: $0[1] ?? "", superZent: $0[2] ?? 0, max: $0[3] ?? 0)
            }
        }
        return schema
    }

    func table(named name: String) -> (name: String, columns: [Column])? { tables[name.uppercased()] }

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
