import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

/// Reading Core Data's persistent history back, and what a delete records in it.
extension SQLiteStore {
    /// The transactions after number `after`, with their changes decoded, as an app reads them
    /// with `NSPersistentHistoryChangeRequest.fetchHistory(after:)`; empty when the store keeps
    /// no history. Changes of entities the model does not know are left out.
    public func persistentHistory(after: Int64 = 0) throws(ObjectGraphError) -> [HistoryTransaction] {
        try read { db in
            let schema = try FileSchema.read(db, file: path)
            guard ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"].allSatisfy({ schema.table(named: $0) != nil }) else { return [] }
            let history: PersistentHistory
            if let known = mechanisms.history {
                history = known
            } else {
                let tombstones = schema.tombstoneColumns
                history = PersistentHistory(tables: .init(change: 0, transaction: 0, string: 0, tombstoneColumns: tombstones), model: model)
            }
            var strings: [Int64: String] = [:]
            for row in try rows(db, "SELECT Z_PK, ZNAME FROM ATRANSACTIONSTRING") {
                let values = row.storedValues  // by storage class: typed reads trap on what does not convert
                if let key = values[0].storedInteger, let name = values[1].storedText { strings[key] = name }
            }
            func string(_ value: DatabaseValue) -> String? { Self.key(in: value).flatMap { strings[$0] } }
            let tombstoneColumns = history.tables.tombstoneColumns.map { ", " + $0.quotedDatabaseIdentifier }.joined()
            var result: [HistoryTransaction] = []
            for t in try rows(
                db, "SELECT Z_PK, ZTIMESTAMP, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS FROM ATRANSACTION WHERE Z_PK > ? ORDER BY Z_PK",
                [after])
            {
                let number = Self.integer(t, 0)
                var transaction = HistoryTransaction(
                    number: number, timestamp: Date(timeIntervalSinceReferenceDate: Self.seconds(t[1])), author: string(t[2]),
                    bundleID: string(t[3]), contextName: string(t[4]), processID: string(t[5]), changes: [])
                for c in try rows(
                    db,
                    "SELECT Z_PK, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZCOLUMNS\(tombstoneColumns) FROM ACHANGE WHERE ZTRANSACTIONID = ? ORDER BY Z_PK",
                    [number])
                {
                    guard let kind = HistoryChange.Kind(rawValue: Self.integer(c, 1)), let entity = layout.entityByZent[Self.integer(c, 2)]
                    else { continue }
                    let id = ObjectID(entity: entity, key: PrimaryKey(Self.integer(c, 3)))
                    var change = HistoryChange(changeID: Self.integer(c, 0), kind: kind, objectID: id, updatedProperties: [], tombstone: [:])
                    if kind == .update, let mask = (c[4] as DatabaseValue).storedBytes {
                        change.updatedProperties = history.decode(mask: mask, of: entity) ?? ["<\(mask.count) bytes that do not fit the model>"]
                    }
                    if kind == .delete {
                        for (i, name) in history.preservedAttributes(of: entity).enumerated() where 5 + i < c.count {
                            guard let attribute = model[entity].attribute(named: name) else { continue }
                            let place = ValueCoding.Place(entity: model[entity].name, attribute: name, key: id.key.rawValue)
                            change.tombstone[name] = .some(try? ValueCoding.decode(c[5 + i], as: attribute.type, at: place))
                        }
                    }
                    transaction.changes.append(change)
                }
                result.append(transaction)
            }
            return result
        }
    }

    /// The values a delete of `id` records in history (its entity's preserved attributes, as the
    /// row holds them), read before the row goes; empty when the store writes no history.
    func tombstoneValues(of id: ObjectID, _ db: Database) throws(ObjectGraphError) -> [DatabaseValue] {
        guard let history = mechanisms.history, let table = layout[id.entity].table else { return [] }
        let names = history.preservedAttributes(of: id.entity)
        guard !names.isEmpty else { return [] }
        let columns = names.map { name in
            layout[id.entity].attributes.first { $0.attribute.name == name }?.column.map(\.quotedDatabaseIdentifier) ?? "NULL"
        }
        do {
            let found = try rows(
                db, "SELECT \(columns.joined(separator: ", ")) FROM \(table.quotedDatabaseIdentifier) WHERE Z_PK = ?",
                [id.key.rawValue], cached: false)
            return found.first.map { Array($0.databaseValues) } ?? []
        } catch {
            throw Self.mapError(error, file: path)
        }
    }

    /// A timestamp column (seconds since 2001) as stored: a real or an integer; anything else 0.
    static func seconds(_ value: DatabaseValue) -> Double {
        switch value.storage {
        case .double(let seconds): seconds
        case .int64(let seconds): Double(seconds)
        default: 0
        }
    }
}
