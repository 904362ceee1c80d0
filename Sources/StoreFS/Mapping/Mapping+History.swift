import Foundation
import FuseKit
import ObjectGraph

/// Reading the store's persistent history for the `.history` folders (``HistoryNode``), through
/// ObjectGraph's ``PersistentHistoryStore``: a transaction by its number, the transaction holding
/// a change, and the list of transactions read in pages.
extension Mapping {
    /// The store's history, when it keeps one.
    var historyStore: (any PersistentHistoryStore)? {
        guard let store = coordinator.store as? any PersistentHistoryStore, store.keepsPersistentHistory else {
            return nil
        }
        return store
    }

    /// Transactions read per store request when `.history` is listed.
    static let historyPageSize = 5_000

    /// The numbers and times of every transaction a mount can show (numbers from 1 to 2^32 - 1),
    /// read in pages without their changes.
    func historyListing() throws(FileSystemError) -> [(number: Int64, timestamp: Date)] {
        guard let store = historyStore else { throw .notFound }
        var result: [(number: Int64, timestamp: Date)] = []
        var after: Int64 = 0
        while after < Node.maximumKey {
            let page = try engine(
                { () throws(ObjectGraphError) in
                    try store.historyTransactions(after: after, limit: Self.historyPageSize, includingChanges: false)
                }, "list the persistent history")
            // Numbers only go up; a page that does not (a damaged store) ends the listing.
            guard let last = page.last, last.number > after else { break }
            for transaction in page where Node.fits(PrimaryKey(transaction.number)) {
                result.append((transaction.number, transaction.timestamp))
            }
            after = last.number
        }
        var timestamps: [Int64: Date] = [:]
        timestamps.reserveCapacity(result.count)
        for (number, timestamp) in result { timestamps[number] = timestamp }
        history.listed(timestamps)
        return result
    }

    /// The time of transaction `number`, without its changes: one request on the primary key
    /// unless a listing or a read of it says.
    func historyTimestamp(_ number: Int64) throws(FileSystemError) -> Date {
        if let known = history.timestamp(number) { return known }
        guard let store = historyStore, Node.fits(PrimaryKey(number)) else { throw .notFound }
        let page = try engine(
            { () throws(ObjectGraphError) in
                try store.historyTransactions(after: number - 1, limit: 1, includingChanges: false)
            }, "read transaction \(number)")
        guard let found = page.first, found.number == number else { throw .notFound }
        return found.timestamp
    }

    /// Transaction `number` with its changes.
    func historyTransaction(_ number: Int64) throws(FileSystemError) -> HistoryCache.Entry {
        if let kept = history.entry(number) { return kept }
        guard let store = historyStore, Node.fits(PrimaryKey(number)) else { throw .notFound }
        guard
            let found = try engine(
                { () throws(ObjectGraphError) in try store.historyTransaction(number) }, "read transaction \(number)")
        else { throw .notFound }
        return history.keep(found)
    }

    /// Change `changeID` and the transaction that holds it.
    func historyChange(_ changeID: Int64) throws(FileSystemError) -> (
        transaction: HistoryTransaction, change: HistoryChange
    ) {
        var entry = history.entry(holdingChange: changeID)
        if entry == nil {
            guard let store = historyStore else { throw .notFound }
            guard
                let number = try engine(
                    { () throws(ObjectGraphError) in
                        try store.historyTransactionNumber(ofChange: changeID)
                    }, "read change \(changeID)")
            else { throw .notFound }
            entry = try historyTransaction(number)
        }
        guard let entry, let index = entry.byChange[changeID] else { throw .notFound }
        return (entry.transaction, entry.transaction.changes[index])
    }
}
