import CoreDataSchema
import GRDB
import ObjectGraph

/// Reading an SQLite file's ``FileSchema``.
extension FileSchema {
    static func read(_ db: Database, file: String) throws -> FileSchema {
        var schema = FileSchema()
        let masterRows = try Row.fetchAll(
            db, sql: "SELECT type, name, tbl_name, sql FROM main.sqlite_master WHERE type IN ('table', 'index')")
        // Every value is read by storage class (StoredValue.swift): a damaged file can hold
        // anything anywhere, and GRDB's typed subscripts trap on what does not convert.
        for row in masterRows {
            let values = row.storedValues
            guard let type = values[0].storedText, let name = values[1].storedText, let table = values[2].storedText
            else { continue }
            if type == "table" {
                // main.: a view in the temp schema may shadow the table (see textKeyViews).
                // table_info: cid, name, type, notnull, dflt_value, pk.
                let columns = try Row.fetchAll(db, sql: "PRAGMA main.table_info(\(name.quotedDatabaseIdentifier))")
                    .compactMap {
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
                // A UNIQUE index (Core Data's for a uniqueness constraint, or one an app made):
                // its columns must differ between rows where none is NULL.
                if values.count > 3, let sql = values[3].storedText,
                    sql.uppercased().hasPrefix("CREATE UNIQUE INDEX"), !columns.isEmpty
                {
                    schema.uniqueIndexes.insert(name.uppercased())
                }
            }
        }
        if let bookkeeping = schema.tables["Z_PRIMARYKEY"] {
            let names = Set(bookkeeping.columns.map { $0.name.uppercased() })
            for column in ["Z_ENT", "Z_NAME", "Z_SUPER", "Z_MAX"] where !names.contains(column) {
                throw ObjectGraphError(
                    .corruptStore,
                    "\(file): table Z_PRIMARYKEY has no column \(column): this is not a Core Data store, or its bookkeeping was damaged"
                )
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

    /// For each of ``textKeyTables``, a temp view of the same name that reads it with its keys
    /// cast to integers; in the temp schema it shadows the table for unqualified names.
    var textKeyViews: [String] {
        textKeyTables.map { name in
            let columns = self.columns(of: name).map { column in
                let quoted = column.name.quotedDatabaseIdentifier
                return ["Z_PK", "Z_ENT", "Z_OPT"].contains(column.name.uppercased())
                    ? "CAST(\(quoted) AS INTEGER) AS \(quoted)" : quoted
            }
            return
                "CREATE TEMP VIEW IF NOT EXISTS \(name.quotedDatabaseIdentifier) AS SELECT \(columns.joined(separator: ", ")) "
                + "FROM main.\(name.quotedDatabaseIdentifier)"
        }
    }

    /// ACHANGE's `ZTOMBSTONE<n>` columns, by n.
    var tombstoneColumns: [String] {
        var numbered: [(name: String, number: Int)] = []
        for column in columns(of: "ACHANGE") where column.name.uppercased().hasPrefix("ZTOMBSTONE") {
            if let number = Int(column.name.dropFirst("ZTOMBSTONE".count)) { numbered.append((column.name, number)) }
        }
        return numbered.sorted { $0.number < $1.number }.map(\.name)
    }
}
