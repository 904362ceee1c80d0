import ObjectGraph

/// What an existing store holds: its tables with their columns, its indexes and the rows of
/// Z_PRIMARYKEY, read once when a store opens (the SQLite store reads it from its file:
/// FileSchema+Reading.swift), for ``StoreLayout`` to reconcile the model with.
package struct FileSchema: Sendable {
    package struct Column: Sendable, Hashable {
        package var name: String
        /// The declared type, upper-cased ("INTEGER", "VARCHAR", "TIMESTAMP", ...).
        package var type: String

        package init(name: String, type: String) {
            self.name = name
            self.type = type
        }
    }

    package struct EntityRow: Sendable, Hashable {
        package var zent: Int64
        package var name: String
        package var superZent: Int64

        package init(zent: Int64, name: String, superZent: Int64) {
            self.zent = zent
            self.name = name
            self.superZent = superZent
        }
    }

    /// Tables by upper-cased name (SQLite table names are case-insensitive).
    package var tables: [String: (name: String, columns: [Column])] = [:]
    /// Single-column and multi-column indexes: index name (upper-cased) → (table, columns).
    package var indexes: [String: (table: String, columns: [String])] = [:]
    /// The names (upper-cased) of the indexes that are UNIQUE.
    package var uniqueIndexes: Set<String> = []
    /// Z_PRIMARYKEY rows below 16000 (entities, not Core Data's system tables), by Z_ENT.
    package var entityRows: [EntityRow] = []

    package init() {}

    package func table(named name: String) -> (name: String, columns: [Column])? { tables[name.uppercased()] }

    /// Entity tables whose Z_PK, Z_ENT or Z_OPT column has no INTEGER affinity (declared without
    /// "INT", as a table rebuilt by another tool may be): their keys may be stored as text, which
    /// an integer comparison never matches.
    package var textKeyTables: [String] {
        tables.values.filter { table in
            let types = Dictionary(
                table.columns.map { ($0.name.uppercased(), $0.type) }, uniquingKeysWith: { a, _ in a })
            guard types["Z_PK"] != nil, types["Z_ENT"] != nil, table.name.uppercased().hasPrefix("Z"),
                !table.name.uppercased().hasPrefix("Z_")
            else { return false }
            return ["Z_PK", "Z_ENT", "Z_OPT"].contains { types[$0].map { !$0.contains("INT") } ?? false }
        }.map(\.name).sorted()
    }

    package func columns(of table: String) -> [Column] { tables[table.uppercased()]?.columns ?? [] }

    package func hasColumn(_ column: String, in table: String) -> Bool {
        columns(of: table).contains { $0.name.uppercased() == column.uppercased() }
    }

    /// Whether `column` of `table` has an index on it alone (how Core Data marks to-one columns).
    package func hasSingleColumnIndex(on column: String, in table: String) -> Bool {
        indexes.values.contains {
            $0.table.uppercased() == table.uppercased() && $0.columns.count == 1
                && $0.columns[0].uppercased() == column.uppercased()
        }
    }
}
