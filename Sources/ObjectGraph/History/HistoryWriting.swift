/// A store that takes Core Data's persistent history read from another store, of any type, as
/// it is: a migration between store types then carries the history along with the objects, and
/// an app's history token (a transaction number) still points into it.
///
/// Threading: as ``PersistentStore``.
public protocol HistoryWriting: PersistentStore {
    /// Writes `transactions` (read with ``PersistentHistoryStore/historyTransactions(after:limit:includingChanges:)``
    /// from a store of the same model) after this store's own history, in one transaction:
    /// their numbers, change IDs, authors and timestamps, each change's object, updated
    /// properties and tombstone as read. The store's history tables are made where it has none
    /// (it keeps history from then on). Counters move past the numbers written.
    func writeHistory(_ transactions: [HistoryTransaction]) throws(ObjectGraphError)
}
