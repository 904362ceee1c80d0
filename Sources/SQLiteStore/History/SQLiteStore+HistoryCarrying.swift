import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

/// Carrying Core Data's persistent history into the new store of a model migration.
///
/// The history tables move as they are (their SQL, their rows, their Z_PRIMARYKEY rows and
/// counters), so every transaction keeps its number and an app's stored history token still
/// points into the history. Each change is renamed to where the migration put its object: the
/// new entity's Z_ENT and the object's key, its updated-columns bit set re-encoded over the new
/// entity's property slots (properties the migration dropped drop out of it), its tombstone
/// values moved to the new entity's preserved attributes. Changes of entities the new model does
/// not keep are dropped.
extension SQLiteStore: HistoryCarrying {
    static let historyTables = ["ATRANSACTIONSTRING", "ATRANSACTION", "ACHANGE"]
    static let historyEntityNames = ["CHANGE", "TRANSACTION", "TRANSACTIONSTRING"]

    /// What a store's history tables hold, as read for carrying.
    struct HistoryTables: Sendable {
        /// `CREATE TABLE` and `CREATE INDEX` statements, tables first.
        var schema: [String]
        /// Z_PRIMARYKEY rows of the history entities: Z_ENT, Z_NAME, Z_SUPER, Z_MAX.
        var primaryKeys: [[DatabaseValue]]
        /// Per table: column names and rows.
        var rows: [String: (columns: [String], rows: [[DatabaseValue]])]
        /// Z_ENT → entity of the old store's model.
        var entityByZent: [Int64: EntityID]
    }

    public func exportHistory() throws(ObjectGraphError) -> CarriedHistory? {
        try read { db -> CarriedHistory? in
            let schema = try FileSchema.read(db, file: path)
            guard Self.historyTables.allSatisfy({ schema.table(named: $0) != nil }) else { return nil }
            var statements: [String] = []
            for kind in ["table", "index"] {
                for row in try Row.fetchAll(
                    db,
                    sql:
                        "SELECT name, tbl_name, sql FROM main.sqlite_master WHERE type = ? AND sql IS NOT NULL ORDER BY rowid",
                    arguments: [kind])
                {
                    let values = row.storedValues
                    guard let table = values[1].storedText?.uppercased(), Self.historyTables.contains(table),
                        let sql = values[2].storedText
                    else { continue }
                    statements.append(sql)
                }
            }
            var tables: [String: (columns: [String], rows: [[DatabaseValue]])] = [:]
            for table in Self.historyTables {
                let columns = schema.columns(of: table).map(\.name)
                let list = columns.map { $0.quotedDatabaseIdentifier }.joined(separator: ", ")
                let rows = try Row.fetchAll(
                    db, sql: "SELECT \(list) FROM main.\(table.quotedDatabaseIdentifier) ORDER BY Z_PK")
                tables[table] = (columns, rows.map(\.storedValues))
            }
            let names = Self.historyEntityNames.map { "'\($0)'" }.joined(separator: ", ")
            let keys = try Row.fetchAll(
                db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM main.Z_PRIMARYKEY WHERE Z_NAME IN (\(names))"
            ).map(\.storedValues)
            let payload = HistoryTables(
                schema: statements, primaryKeys: keys, rows: tables, entityByZent: layout.entityByZent)
            return CarriedHistory(
                storeType: storeType, model: model, payload: payload,
                transactionCount: tables["ATRANSACTION"]?.rows.count ?? 0)
        }
    }

    public func adoptHistory(_ history: CarriedHistory, mapping: HistoryMapping) throws(ObjectGraphError) -> Int {
        guard history.storeType == storeType, let tables = history.payload as? HistoryTables else {
            throw ObjectGraphError(
                .unsupported, "persistent history of a \(history.storeType) store cannot be written into \(path)")
        }
        let old = PersistentHistory(
            tables: .init(change: 0, transaction: 0, string: 0, tombstoneColumns: []), model: history.model)
        let new = PersistentHistory(
            tables: .init(change: 0, transaction: 0, string: 0, tombstoneColumns: []), model: model)
        return try write { db -> Int in
            for sql in tables.schema { try db.execute(sql: sql) }
            for row in tables.primaryKeys {
                try db.execute(
                    sql: "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)",
                    arguments: StatementArguments(row))
            }
            for table in ["ATRANSACTIONSTRING", "ATRANSACTION"] {
                guard let (columns, rows) = tables.rows[table], !columns.isEmpty else { continue }
                let sql =
                    "INSERT INTO \(table) (\(columns.map { $0.quotedDatabaseIdentifier }.joined(separator: ", "))) VALUES ("
                    + columns.map { _ in "?" }.joined(separator: ", ") + ")"
                let statement = try db.makeStatement(sql: sql)
                for row in rows { try statement.execute(arguments: StatementArguments(row)) }
            }
            guard let (columns, rows) = tables.rows["ACHANGE"] else {
                return tables.rows["ATRANSACTION"]?.rows.count ?? 0
            }
            func position(_ name: String) -> Int? { columns.firstIndex { $0.uppercased() == name } }
            guard let entityColumn = position("ZENTITY"), let keyColumn = position("ZENTITYPK"),
                let maskColumn = position("ZCOLUMNS"),
                let kindColumn = position("ZCHANGETYPE")
            else {
                throw ObjectGraphError(
                    .unsupported, "the old store's ACHANGE table lacks ZENTITY, ZENTITYPK, ZCHANGETYPE or ZCOLUMNS")
            }
            let oldTombstones = columns.enumerated().filter { $0.element.uppercased().hasPrefix("ZTOMBSTONE") }
                .compactMap { item in Int(item.element.dropFirst("ZTOMBSTONE".count)).map { (item.offset, $0) } }
                .sorted { $0.1 < $1.1 }.map(\.0)
            // The new model may preserve more attributes per entity than the old had columns for.
            var allColumns = columns
            let needed = model.entities.map { new.preservedAttributes(of: $0.id).count }.max() ?? 0
            var tombstoneColumns = oldTombstones
            while tombstoneColumns.count < needed {
                let name = "ZTOMBSTONE\(tombstoneColumns.count)"
                try db.execute(sql: "ALTER TABLE ACHANGE ADD COLUMN \(name.quotedDatabaseIdentifier)")
                allColumns.append(name)
                tombstoneColumns.append(allColumns.count - 1)
            }
            let sql =
                "INSERT INTO ACHANGE (\(allColumns.map { $0.quotedDatabaseIdentifier }.joined(separator: ", "))) VALUES ("
                + allColumns.map { _ in "?" }.joined(separator: ", ") + ")"
            let statement = try db.makeStatement(sql: sql)
            for row in rows {
                guard let zent = row[entityColumn].storedInteger, let oldEntity = tables.entityByZent[zent],
                    let key = row[keyColumn].storedInteger,
                    let moved = mapping.object(ObjectID(entity: oldEntity, key: PrimaryKey(key))),
                    moved.entity.rawValue >= 1, moved.entity.rawValue <= layout.entities.count,
                    let newZent = layout[moved.entity].zent
                else { continue }
                var values = row + Array(repeating: DatabaseValue.null, count: allColumns.count - columns.count)
                values[entityColumn] = newZent.databaseValue
                values[keyColumn] = moved.key.rawValue.databaseValue
                let names = mapping.properties[oldEntity] ?? [:]
                if let mask = row[maskColumn].storedBytes, let slots = old.decode(mask: mask, of: oldEntity) {
                    var renamed: Set<String> = []
                    for slot in slots {
                        let base = slot.split(separator: "#", maxSplits: 1).first.map(String.init) ?? slot
                        if let name = names[base] { renamed.insert(name) }
                    }
                    values[maskColumn] = new.columnMask(for: renamed, of: moved.entity).databaseValue
                }
                if row[kindColumn].storedInteger == HistoryChange.Kind.delete.rawValue {
                    let oldPreserved = old.preservedAttributes(of: oldEntity)
                    var valueByNewName: [String: DatabaseValue] = [:]
                    for (index, name) in oldPreserved.enumerated() where index < oldTombstones.count {
                        if let newName = names[name] { valueByNewName[newName] = row[oldTombstones[index]] }
                    }
                    for column in tombstoneColumns { values[column] = .null }
                    for (index, name) in new.preservedAttributes(of: moved.entity).enumerated()
                    where index < tombstoneColumns.count {
                        values[tombstoneColumns[index]] = valueByNewName[name] ?? .null
                    }
                }
                try statement.execute(arguments: StatementArguments(values))
            }
            return tables.rows["ATRANSACTION"]?.rows.count ?? 0
        }
    }
}
