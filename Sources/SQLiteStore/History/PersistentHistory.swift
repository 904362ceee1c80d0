import Foundation
import CoreDataSchema
import GRDB
import Logging
import ObjectGraph
import RelationalCore

/// Core Data's persistent history, written as Core Data writes it: each save of a store whose
/// app tracks history appends one transaction and one change per inserted, updated and deleted
/// object, in the same SQLite transaction as the change itself, so the app (and CloudKit
/// mirroring) learns what storefs changed.
///
/// The format was read off the real rows of the corpus stores (Notes, Photos, SwiftData,
/// CoreDataPlus; docs/SEMANTICS.md has the evidence):
/// - `ATRANSACTION`: key = the transaction number, `ZTIMESTAMP` seconds since 2001, and the
///   author, bundle identifier, process name and context name as keys of interned strings in
///   `ATRANSACTIONSTRING` (`ZAUTHORTS`, ...); `Z_OPT` NULL.
/// - `ACHANGE`: `ZCHANGETYPE` 0 insert, 1 update, 2 delete; `ZENTITY`/`ZENTITYPK` the object's
///   concrete Z_ENT and Z_PK; `ZTRANSACTIONID`; for updates `ZCOLUMNS`, a bit set (most
///   significant bit first) over the entity's property slots (``slots(of:)``); for deletes
///   `ZTOMBSTONE0…` the values of the attributes preserved after deletion.
/// - Keys from the `Z_PRIMARYKEY` rows `CHANGE`, `TRANSACTION`, `TRANSACTIONSTRING`.
/// Rows changed by triggers get no change (none does in the corpus's history).
///
/// History is written only where the app tracks it: the tables exist **and** hold a
/// transaction. Core Data forces a store opened without tracking into read-only mode once it
/// has history, and an app that turned tracking off deleted its history first; writing into
/// empty tables could therefore lock such an app out (an inference from Core Data's documented
/// behaviour).
///
/// Threading: a value built once per store; share it freely.
struct PersistentHistory: Sendable {
    /// Z_ENT of the three history tables' rows (Z_PRIMARYKEY `CHANGE`, `TRANSACTION`,
    /// `TRANSACTIONSTRING`), and the tombstone columns of `ACHANGE` in order.
    struct Tables: Sendable {
        var change: Int64
        var transaction: Int64
        var string: Int64
        var tombstoneColumns: [String]
    }

    /// What storefs writes as author, bundle identifier and process name.
    static let author = "storefs"

    let tables: Tables
    /// The property slots its changes mark.
    let slots: HistorySlots

    init(tables: Tables, model: ManagedObjectModel) {
        self.tables = tables
        self.slots = HistorySlots(model: model)
    }

    func columnMask(for names: Set<String>, of entity: EntityID) -> Data { slots.columnMask(for: names, of: entity) }

    func decode(mask: Data, of entity: EntityID) -> [String]? { slots.decode(mask: mask, of: entity) }

    // MARK: - Finding it in a store

    /// The store's history, when its app tracks it (see the type's documentation); nil when the
    /// store has no history tables or they hold no transaction.
    ///
    /// - Throws: ``ObjectGraphError/Code/unsupported`` when it has history storefs cannot
    ///   continue: an unknown layout of the tables, a model inferred from the schema (which
    ///   cannot give the slots), or recent changes whose bits do not fit this model's slots.
    static func find(
        in db: Database, schema: FileSchema, model: ManagedObjectModel, modelSource: ModelSource, layout: StoreLayout,
        file: String, logger: Logger
    ) throws -> PersistentHistory? {
        let names = ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]
        guard names.allSatisfy({ schema.table(named: $0) != nil }) else { return nil }
        guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM main.ATRANSACTION)") == true else {
            logger.info(
                "\(file): its persistent history tables are empty (tracking turned off); storefs writes no history")
            return nil
        }
        func refuse(_ why: String) -> ObjectGraphError {
            ObjectGraphError(
                .unsupported,
                "\(file) keeps Core Data's persistent history, which storefs must continue with each save, but \(why). "
                    + "Mount it read-only (-o ro) to browse it.")
        }
        let required: [String: [String]] = [
            "ACHANGE": ["Z_PK", "Z_ENT", "Z_OPT", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"],
            "ATRANSACTION": [
                "Z_PK", "Z_ENT", "Z_OPT", "ZAUTHORTS", "ZBUNDLEIDTS", "ZCONTEXTNAMETS", "ZPROCESSIDTS", "ZTIMESTAMP"
            ],
            "ATRANSACTIONSTRING": ["Z_PK", "Z_ENT", "Z_OPT", "ZNAME"]
        ]
        for (table, columns) in required.sorted(by: { $0.key < $1.key }) {
            let missing = columns.filter { !schema.hasColumn($0, in: table) }
            if !missing.isEmpty {
                throw refuse("its table \(table) has no column \(missing.joined(separator: ", ")) (an unknown layout)")
            }
        }
        var ents: [String: Int64] = [:]
        for row in try Row.fetchAll(
            db,
            sql:
                "SELECT Z_NAME, Z_ENT FROM main.Z_PRIMARYKEY WHERE Z_NAME IN ('CHANGE', 'TRANSACTION', 'TRANSACTIONSTRING')"
        ) {
            // By storage class: GRDB's typed reads trap on a value that does not convert.
            let values = row.storedValues
            if let name = values[0].storedText, let zent = values[1].storedInteger { ents[name] = zent }
        }
        guard let change = ents["CHANGE"], let transaction = ents["TRANSACTION"], let string = ents["TRANSACTIONSTRING"]
        else {
            throw refuse("Z_PRIMARYKEY has no rows CHANGE, TRANSACTION and TRANSACTIONSTRING for it")
        }
        if case .inferred = modelSource {
            throw refuse(
                "the store holds no model (Z_MODELCACHE) and the model inferred from its schema cannot say which bits a change sets; give the app's model with --model"
            )
        }
        let tombstones = schema.tombstoneColumns
        let history = PersistentHistory(
            tables: Tables(change: change, transaction: transaction, string: string, tombstoneColumns: tombstones),
            model: model)
        // The last updates Core Data wrote must fit this model's slots: if they do not, the slots
        // storefs would mark would name other properties to the app.
        for row in try Row.fetchAll(
            db,
            sql:
                "SELECT ZENTITY, ZCOLUMNS FROM main.ACHANGE WHERE ZCHANGETYPE = 1 AND ZCOLUMNS IS NOT NULL ORDER BY Z_PK DESC LIMIT 200"
        ) {
            let values = row.storedValues
            guard let zent = values[0].storedInteger, let entity = layout.entityByZent[zent],
                let mask = values[1].storedBytes
            else { continue }
            if history.decode(mask: mask, of: entity) == nil {
                throw refuse(
                    "its recorded changes of \(model[entity].name) do not fit the properties of the model storefs has "
                        + "(\(history.slots.slots(of: entity).count) slots, \(mask.count) bytes); give the app's model with --model"
                )
            }
        }
        return history
    }

    // MARK: - Appending

    /// Appends one transaction recording `rows` (``HistoryRow``), in the caller's write
    /// transaction. Keys continue from Z_MAX or the table's highest key, whichever is higher.
    func append(_ rows: [HistoryRow], on connection: SQLiteConnection) throws(ObjectGraphError) {
        guard !rows.isEmpty else { return }
        var nextKeys: [Int64: Int64] = [:]
        func nextKey(_ zent: Int64, table: String) throws(ObjectGraphError) -> Int64 {
            if let next = nextKeys[zent] {
                nextKeys[zent] = next + 1
                return next
            }
            // Z_MAX or a key that is not an integer (a damaged file) counts as 0; the other bounds it.
            let max = try connection.integer("SELECT IFNULL(Z_MAX, 0) FROM Z_PRIMARYKEY WHERE Z_ENT = \(zent)") ?? 0
            let top = try connection.integer("SELECT IFNULL(MAX(Z_PK), 0) FROM \(identifier: table)") ?? 0
            let (next, overflow) = Swift.max(max, top).addingReportingOverflow(1)
            guard !overflow else { throw ObjectGraphError(.io, "the history table \(table) has no key left") }
            nextKeys[zent] = next + 1
            return next
        }
        func intern(_ text: String) throws(ObjectGraphError) -> Int64 {
            if let key = try connection.integer("SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = \(text)") {
                return key
            }
            let key = try nextKey(tables.string, table: "ATRANSACTIONSTRING")
            try connection.execute(
                "INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (\(key), \(tables.string), NULL, \(text))"
            )
            return key
        }
        let name = try intern(Self.author)
        let transaction = try nextKey(tables.transaction, table: "ATRANSACTION")
        try connection.execute(
            "INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP) "
                + "VALUES (\(transaction), \(tables.transaction), NULL, \(name), \(name), NULL, \(name), \(SQLValue.real(Date().timeIntervalSinceReferenceDate)))"
        )
        let tombstoneNames = tables.tombstoneColumns.map { ", " + SQL.identifier($0) }.joined()
        let tombstoneMarks = tables.tombstoneColumns.map { _ in ", ?" }.joined()
        let insert =
            "INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS\(tombstoneNames)) "
            + "VALUES (?, ?, NULL, ?, ?, ?, ?, ?\(tombstoneMarks))"
        for row in rows {
            let key = try nextKey(tables.change, table: "ACHANGE")
            var values: [SQLValue] = [
                .integer(key), .integer(tables.change), .integer(row.kind), .integer(row.zent), .integer(row.key),
                .integer(transaction), row.columns.map(SQLValue.blob) ?? .null
            ]
            for i in tables.tombstoneColumns.indices {
                values.append(i < row.tombstone.count ? row.tombstone[i] : .null)
            }
            try connection.execute(SQL(text: insert, arguments: values))
        }
        for (zent, next) in nextKeys.sorted(by: { $0.key < $1.key }) {
            try connection.execute(
                "UPDATE Z_PRIMARYKEY SET Z_MAX = \(next - 1) WHERE Z_ENT = \(zent) AND IFNULL(Z_MAX, 0) < \(next - 1)")
        }
    }

    /// The attributes of `entity` a delete records, in tombstone order.
    func preservedAttributes(of entity: EntityID) -> [String] { slots.preservedAttributes(of: entity) }
}
