import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

/// Reading Core Data's persistent history back (``HistoryReader``), and what a delete records in it.
extension SQLiteStore: PersistentHistoryStore {
    public var keepsPersistentHistory: Bool { historyReader != nil }

    public func historyTransactions(after: Int64, limit: Int, includingChanges: Bool) throws(ObjectGraphError)
        -> [HistoryTransaction]
    {
        guard let reader = historyReader, limit > 0 else { return [] }
        return try read { db in
            let transactions = try rows(db, reader.pageSQL, [after, min(limit, Self.historyPageLimit)]).map(
                reader.transaction)
            guard includingChanges, let first = transactions.first, let last = transactions.last else {
                return transactions
            }
            return try withChanges(transactions, from: first.number, to: last.number, reader: reader, db)
        }
    }

    public func historyTransaction(_ number: Int64) throws(ObjectGraphError) -> HistoryTransaction? {
        guard let reader = historyReader else { return nil }
        return try read { db in
            let found = try rows(db, reader.transactionSQL, [number]).map(reader.transaction)
            return try withChanges(found, from: number, to: number, reader: reader, db).first
        }
    }

    public func historyTransactionNumber(ofChange changeID: Int64) throws(ObjectGraphError) -> Int64? {
        guard let reader = historyReader else { return nil }
        return try read { db in
            guard let row = try rows(db, reader.changeSQL, [changeID]).first else { return nil }
            let values = row.storedValues
            guard layout.entityByZent[SQLiteStore.integer(values[1])] != nil else { return nil }
            return SQLiteStore.integer(values[0])
        }
    }

    /// The most transactions one call reads, whatever it asks for: a page is held in memory whole.
    static let historyPageLimit = 10_000

    /// `transactions` (numbered `first` to `last`) with their changes, read in one statement.
    private func withChanges(
        _ transactions: [HistoryTransaction], from first: Int64, to last: Int64, reader: HistoryReader, _ db: Database
    ) throws -> [HistoryTransaction] {
        guard !transactions.isEmpty else { return [] }
        var index: [Int64: Int] = [:]
        for (i, transaction) in transactions.enumerated() { index[transaction.number] = i }
        var result = transactions
        for row in try rows(db, reader.changesSQL, [first, last]) {
            // Changes of transactions the page does not hold (no ATRANSACTION row) are left out.
            guard let (number, change) = reader.change(row, layout: layout, model: model), let i = index[number] else {
                continue
            }
            result[i].changes.append(change)
        }
        return result
    }

    /// The transactions after number `after`, with their changes decoded, as an app reads them
    /// with `NSPersistentHistoryChangeRequest.fetchHistory(after:)`; empty when the store keeps
    /// no history. Changes of entities the model does not know are left out. The whole history
    /// in memory: ``historyTransactions(after:limit:includingChanges:)`` reads it in pages.
    public func persistentHistory(after: Int64 = 0) throws(ObjectGraphError) -> [HistoryTransaction] {
        var result: [HistoryTransaction] = []
        var next = after
        while true {
            let page = try historyTransactions(after: next, limit: 1000, includingChanges: true)
            // Numbers only go up; a page that does not is damage, not more history.
            guard let last = page.last, last.number > next else { return result }
            result += page
            next = last.number
        }
    }

    /// The values a delete of `id` records in history (its entity's preserved attributes, as the
    /// row holds them), read before the row goes; empty when the store writes no history.
    func tombstoneValues(of id: ObjectID, _ db: Database) throws(ObjectGraphError) -> [DatabaseValue] {
        guard let history = mechanisms.history, let table = layout[id.entity].table else { return [] }
        let names = history.preservedAttributes(of: id.entity)
        guard !names.isEmpty else { return [] }
        let columns = names.map { name in
            layout[id.entity].attributes.first { $0.attribute.name == name }?.column.map(\.quotedDatabaseIdentifier)
                ?? "NULL"
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

    /// A timestamp column (seconds since 2001) as stored: a real or an integer; anything else 0
    /// (whether it is a date at all is ``HistoryTransaction/timestamp(secondsSinceReferenceDate:)``'s).
    static func seconds(_ value: DatabaseValue) -> Double {
        switch value.storage {
        case .double(let seconds): seconds
        case .int64(let seconds): Double(seconds)
        default: 0
        }
    }
}
