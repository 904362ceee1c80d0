import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

/// How a file keeps Core Data's persistent history, for reading it back: the statements that read
/// a page of transactions and their changes, made once when the store opens from the columns its
/// history tables have.
///
/// A store keeps history when the three tables exist with the columns every layout in the
/// corpus has (`ATRANSACTION.Z_PK`/`ZTIMESTAMP`, `ACHANGE.Z_PK`/`ZCHANGETYPE`/`ZENTITY`/
/// `ZENTITYPK`/`ZTRANSACTIONID`, `ATRANSACTIONSTRING.Z_PK`/`ZNAME`), whether or not they hold
/// rows: an app that tracks history and has not saved yet has an empty one. The rest is read
/// where the file has it: the interned names (`ZAUTHORTS`, …, joined to `ATRANSACTIONSTRING`)
/// and the plain ones some releases wrote instead (`ZAUTHOR`, …), `ZCOLUMNS`, the tombstones.
/// A page is two statements whatever its length, each on an index Core Data creates (the
/// primary key, `ACHANGE_ZTRANSACTIONID_INDEX`).
///
/// Threading: a value built once per store; share it freely.
struct HistoryReader: Sendable {
    /// Decodes `ZCOLUMNS` and says which attributes a tombstone keeps.
    let decoder: PersistentHistory
    /// Transactions above `?`, at most `?` of them.
    let pageSQL: String
    /// Transaction `?`.
    let transactionSQL: String
    /// Changes of the transactions numbered from `?` to `?`.
    let changesSQL: String
    /// The transaction and entity of change `?`.
    let changeSQL = "SELECT ZTRANSACTIONID, ZENTITY FROM ACHANGE WHERE Z_PK = ?"

    /// The reader of `schema`'s history; nil when the file keeps none.
    init?(schema: FileSchema, model: ManagedObjectModel) {
        let required = [
            "ATRANSACTION": ["Z_PK", "ZTIMESTAMP"],
            "ACHANGE": ["Z_PK", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID"],
            "ATRANSACTIONSTRING": ["Z_PK", "ZNAME"]
        ]
        for (table, columns) in required {
            guard schema.table(named: table) != nil, columns.allSatisfy({ schema.hasColumn($0, in: table) }) else {
                return nil
            }
        }
        let tombstones = schema.columns(of: "ACHANGE").map(\.name).filter { $0.uppercased().hasPrefix("ZTOMBSTONE") }
            .compactMap { name in Int(name.dropFirst("ZTOMBSTONE".count)).map { (name, $0) } }.sorted { $0.1 < $1.1 }
            .map(\.0)
        decoder = PersistentHistory(
            tables: .init(change: 0, transaction: 0, string: 0, tombstoneColumns: tombstones), model: model)
        // Author, bundle ID, context name, process ID: interned, then plain, NULL where absent.
        var joins = ""
        var names: [String] = []
        for (i, field) in ["AUTHOR", "BUNDLEID", "CONTEXTNAME", "PROCESSID"].enumerated() {
            if schema.hasColumn("Z\(field)TS", in: "ATRANSACTION") {
                joins += " LEFT JOIN ATRANSACTIONSTRING s\(i) ON s\(i).Z_PK = t.Z\(field)TS"
                names.append("s\(i).ZNAME")
            } else {
                names.append("NULL")
            }
        }
        for field in ["AUTHOR", "BUNDLEID", "CONTEXTNAME", "PROCESSID"] {
            names.append(schema.hasColumn("Z\(field)", in: "ATRANSACTION") ? "t.Z\(field)" : "NULL")
        }
        let select = "SELECT t.Z_PK, t.ZTIMESTAMP, \(names.joined(separator: ", ")) FROM ATRANSACTION t\(joins)"
        // Transactions are numbered by integer keys: a key of another type (a table rebuilt by
        // another tool holds TEXT there) names no transaction, and SQLite orders TEXT after every
        // integer, so a page after any number would find it again and again.
        pageSQL = select + " WHERE t.Z_PK > ? AND typeof(t.Z_PK) = 'integer' ORDER BY t.Z_PK LIMIT ?"
        transactionSQL = select + " WHERE t.Z_PK = ?"
        let columns = schema.hasColumn("ZCOLUMNS", in: "ACHANGE") ? "ZCOLUMNS" : "NULL"
        let tombstoneSQL = tombstones.map { ", " + $0.quotedDatabaseIdentifier }.joined()
        changesSQL =
            "SELECT Z_PK, ZTRANSACTIONID, ZCHANGETYPE, ZENTITY, ZENTITYPK, \(columns)\(tombstoneSQL) FROM ACHANGE "
            + "WHERE ZTRANSACTIONID >= ? AND ZTRANSACTIONID <= ? ORDER BY ZTRANSACTIONID, Z_PK"
    }

    /// A transaction row of ``pageSQL`` or ``transactionSQL``, without its changes. Values are read
    /// by storage class (a damaged file holds anything): a timestamp that is not a number, or not
    /// a date a file can show, is 0 (``HistoryTransaction/timestamp(secondsSinceReferenceDate:)``);
    /// a name that is not text is absent.
    func transaction(_ row: Row) -> HistoryTransaction {
        let values = row.storedValues
        func name(_ i: Int) -> String? { values[2 + i].storedText ?? values[6 + i].storedText }
        return HistoryTransaction(
            number: SQLiteStore.integer(values[0]),
            timestamp: HistoryTransaction.timestamp(secondsSinceReferenceDate: SQLiteStore.seconds(values[1])),
            author: name(0), bundleID: name(1), contextName: name(2), processID: name(3))
    }

    /// A change row of ``changesSQL`` and its transaction's number; nil for a change of an entity
    /// the model does not know, or of a kind Core Data does not write.
    func change(_ row: Row, layout: StoreLayout, model: ManagedObjectModel) -> (Int64, HistoryChange)? {
        let values = row.storedValues
        guard let kind = HistoryChange.Kind(rawValue: SQLiteStore.integer(values[2])),
            let entity = layout.entityByZent[SQLiteStore.integer(values[3])]
        else { return nil }
        let id = ObjectID(entity: entity, key: PrimaryKey(SQLiteStore.integer(values[4])))
        var change = HistoryChange(changeID: SQLiteStore.integer(values[0]), kind: kind, objectID: id)
        if kind == .update, let mask = values[5].storedBytes {
            change.updatedProperties =
                decoder.decode(mask: mask, of: entity) ?? ["<\(mask.count) bytes that do not fit the model>"]
        }
        if kind == .delete {
            for (i, name) in decoder.preservedAttributes(of: entity).enumerated() where 6 + i < values.count {
                guard let attribute = model[entity].attribute(named: name) else { continue }
                let place = ValueCoding.Place(entity: model[entity].name, attribute: name, key: id.key.rawValue)
                change.tombstone[name] = .some(try? ValueCoding.decode(values[6 + i], as: attribute.type, at: place))
            }
        }
        return (SQLiteStore.integer(values[1]), change)
    }
}
