import CoreDataSchema
import Foundation
import Logging
import ObjectGraph
import RelationalCore

/// Core Data's schema in PostgreSQL's types: the tables ``StoreLayout`` plans for a new store
/// (the same names, columns and indexes Core Data gives an SQLite file), the bookkeeping tables,
/// and persistent history, made in one transaction (PostgreSQL's DDL is transactional: a store is
/// made whole or not at all).
enum PostgresSchema {
    /// Z_ENT of the history tables' rows in Z_PRIMARYKEY, as Core Data numbers its own tables.
    static let changeZent: Int64 = 16001
    static let transactionZent: Int64 = 16002
    static let stringZent: Int64 = 16003
    /// The author, bundle and process name of every transaction storefs writes.
    static let authorName = "storefs"

    static func create(
        in connection: PostgresConnection, location: PostgresLocation, model: ManagedObjectModel,
        metadata initial: StoreMetadata,
        logger: Logger
    ) throws(ObjectGraphError) {
        let layout = StoreLayout(model: model, schema: nil, logger: logger)
        let metadata = MetadataPlist.initial(initial, model: model, storeType: PostgresStore.typeName)
        let plist = try MetadataPlist.encode(metadata)
        let types = columnTypes(layout)
        let q = SQL.identifier
        var statements = ["CREATE SCHEMA IF NOT EXISTS \(q(location.schema))"]
        for table in layout.plannedTables {
            var parts = table.columns.map { column in
                "\(q(column.name)) \(types[table.name.uppercased()]?[column.name] ?? fallbackType(column.name, column.type))"
            }
            if !table.primaryKey.isEmpty {
                parts.append("PRIMARY KEY (\(table.primaryKey.map(q).joined(separator: ", ")))")
            }
            statements.append("CREATE TABLE \(q(table.name)) (\(parts.joined(separator: ", ")))")
            for index in table.indexes {
                statements.append(
                    "CREATE INDEX \(q(index.name)) ON \(q(table.name)) (\(index.columns.map(q).joined(separator: ", ")))"
                )
            }
            for index in table.uniqueIndexes {
                statements.append(
                    "CREATE UNIQUE INDEX \(q(index.name)) ON \(q(table.name)) (\(index.columns.map(q).joined(separator: ", ")))"
                )
            }
        }
        statements += [
            "CREATE TABLE \"Z_PRIMARYKEY\" (\"Z_ENT\" integer PRIMARY KEY, \"Z_NAME\" varchar, \"Z_SUPER\" integer, \"Z_MAX\" bigint)",
            "CREATE TABLE \"Z_METADATA\" (\"Z_VERSION\" integer PRIMARY KEY, \"Z_UUID\" varchar(255), \"Z_PLIST\" bytea)",
            "CREATE TABLE \"ATRANSACTIONSTRING\" (\"Z_PK\" bigint PRIMARY KEY, \"Z_ENT\" integer, \"Z_OPT\" bigint, \"ZNAME\" text UNIQUE)",
            "CREATE TABLE \"ATRANSACTION\" (\"Z_PK\" bigint PRIMARY KEY, \"Z_ENT\" integer, \"Z_OPT\" bigint, \"ZAUTHORTS\" bigint, "
                + "\"ZBUNDLEIDTS\" bigint, \"ZCONTEXTNAMETS\" bigint, \"ZPROCESSIDTS\" bigint, \"ZTIMESTAMP\" double precision)",
            "CREATE TABLE \"ACHANGE\" (\"Z_PK\" bigint PRIMARY KEY, \"Z_ENT\" integer, \"Z_OPT\" bigint, \"ZCHANGETYPE\" integer, "
                + "\"ZENTITY\" integer, \"ZENTITYPK\" bigint, \"ZTRANSACTIONID\" bigint, \"ZCOLUMNS\" bytea"
                + tombstoneColumns(for: HistorySlots(model: model)).map { ", \(q($0)) text" }.joined() + ")",
            "CREATE INDEX \"ACHANGE_ZTRANSACTIONID_INDEX\" ON \"ACHANGE\" (\"ZTRANSACTIONID\")"
        ]
        // Z_PRIMARYKEY's rows: Z_ENT, Z_NAME, Z_SUPER, Z_MAX, bound.
        var keyRows: [[String?]] = model.entities.map {
            [String($0.id.rawValue), $0.name, String($0.parentID?.rawValue ?? 0), "0"]
        }
        keyRows += [
            [String(changeZent), "CHANGE", "0", "0"], [String(transactionZent), "TRANSACTION", "0", "0"],
            [String(stringZent), "TRANSACTIONSTRING", "0", "1"]
        ]
        let places = keyRows.indices.map { i in "($\(4 * i + 1), $\(4 * i + 2), $\(4 * i + 3), $\(4 * i + 4))" }
        do throws(ObjectGraphError) {
            _ = try connection.execute("BEGIN")
            for sql in statements { _ = try connection.execute(sql) }
            _ = try connection.execute(
                "INSERT INTO \"Z_PRIMARYKEY\" (\"Z_ENT\", \"Z_NAME\", \"Z_SUPER\", \"Z_MAX\") VALUES \(places.joined(separator: ", "))",
                keyRows.flatMap { $0 })
            _ = try connection.execute(
                "INSERT INTO \"ATRANSACTIONSTRING\" (\"Z_PK\", \"Z_ENT\", \"Z_OPT\", \"ZNAME\") VALUES (1, $1, NULL, $2)",
                [String(stringZent), authorName])
            _ = try connection.execute(
                "INSERT INTO \"Z_METADATA\" (\"Z_VERSION\", \"Z_UUID\", \"Z_PLIST\") VALUES (1, $1, $2)",
                [metadata.storeUUID, PostgresValueCoding.hex(plist)])
            _ = try connection.execute("COMMIT")
        } catch {
            _ = try? connection.execute("ROLLBACK")
            if error.message.contains("42P07") {
                throw ObjectGraphError(
                    .exists, "\(location): schema \(location.schema) already holds a store (or tables of its names)")
            }
            throw error
        }
        logger.info("created a store in schema \(location.schema) of \(location): \(layout.plannedTables.count) tables")
    }

    /// PostgreSQL types of every column the layout maps, by upper-cased table name and column.
    private static func columnTypes(_ layout: StoreLayout) -> [String: [String: String]] {
        var types: [String: [String: String]] = [:]
        for entity in layout.entities {
            guard let table = entity.table?.uppercased() else { continue }
            for attribute in entity.attributes {
                if let column = attribute.column {
                    types[table, default: [:]][column] = PostgresValueCoding.columnType(of: attribute.attribute.type)
                }
            }
            for toOne in entity.toOne {
                if let column = toOne.column { types[table, default: [:]][column] = "bigint" }
                if let column = toOne.entityColumn { types[table, default: [:]][column] = "integer" }
            }
        }
        return types
    }

    /// Bookkeeping columns: keys bigint, Z_ENT integer.
    private static func fallbackType(_ name: String, _ sqliteType: String) -> String {
        if name == "Z_PK" { return "bigint PRIMARY KEY" }
        if name == "Z_ENT" { return "integer" }
        return "bigint"
    }

    /// ACHANGE's tombstone columns: as many as the entity that preserves the most attributes needs.
    static func tombstoneColumns(for slots: HistorySlots) -> [String] {
        (0..<slots.maximumPreservedCount).map { "ZTOMBSTONE\($0)" }
    }

    /// Checks that the store was made for `layout`'s model (its Z_PRIMARYKEY names the same
    /// entities under the same numbers) and returns the key of the author string.
    static func check(_ connection: PostgresConnection, layout: StoreLayout, location: PostgresLocation)
        throws(ObjectGraphError)
        -> Int64
    {
        let rows = try connection.execute("SELECT \"Z_ENT\", \"Z_NAME\" FROM \"Z_PRIMARYKEY\" WHERE \"Z_ENT\" < 16000")
        var names: [Int64: String] = [:]
        for row in 0..<rows.rowCount {
            if let zent = rows.integer(row, 0) { names[zent] = rows.text(row, 1) ?? "" }
        }
        for entity in layout.entities where names[entity.zent ?? 0] != entity.name {
            throw ObjectGraphError(
                .invalidModel,
                "\(location): the store was made for another model (entity \(entity.zent ?? 0) is \(names[entity.zent ?? 0] ?? "missing"), "
                    + "not \(entity.name)); mount it without --model to use the model it keeps")
        }
        let author = try connection.execute(
            "SELECT \"Z_PK\" FROM \"ATRANSACTIONSTRING\" WHERE \"ZNAME\" = $1", [authorName])
        guard let key = author.integer(0, 0) else {
            throw ObjectGraphError(.corruptStore, "\(location): ATRANSACTIONSTRING has no row for the author storefs")
        }
        return key
    }
}
