/// A store that can keep Core Data's persistent history: the transactions its app recorded, read
/// back in pages so that a history of any length lists in bounded memory and time.
///
/// Optional: a store type that has no history does not conform, and a store that conforms says
/// per file whether it keeps one (``keepsPersistentHistory``); either way there is nothing to
/// show. Callers need no knowledge of how the store keeps it.
///
/// Threading: as ``PersistentStore``: safe from several threads, blocking, so called from plain
/// threads.
public protocol PersistentHistoryStore: PersistentStore {
    /// Whether this store's file keeps persistent history (a history that may be empty: the
    /// app tracks it and has not saved yet, or deleted what it had).
    var keepsPersistentHistory: Bool { get }

    /// Up to `limit` transactions numbered above `after`, in order of their numbers, each with its
    /// changes when `includingChanges` (else without: a listing of the transactions alone).
    /// Empty past the last one and when the store keeps no history. Costs a bounded number of
    /// store requests per call (two with changes), whatever the history's length.
    func historyTransactions(after: Int64, limit: Int, includingChanges: Bool) throws(ObjectGraphError)
        -> [HistoryTransaction]

    /// Transaction `number` with its changes; nil when there is none.
    func historyTransaction(_ number: Int64) throws(ObjectGraphError) -> HistoryTransaction?

    /// The number of the transaction that holds change `changeID`; nil when there is none (or it
    /// is a change of an entity the model does not know). One store request on the primary key.
    func historyTransactionNumber(ofChange changeID: Int64) throws(ObjectGraphError) -> Int64?
}
