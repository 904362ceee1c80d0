/// What a store changed by itself while it applied a save, beyond what the save asked for:
/// objects whose stored state is no longer what the engine holds, so that caches read them
/// afresh.
///
/// An SQLite store reports the rows Core Data's triggers changed (a derived count, a Photos
/// counter) and the keys it cleared to keep relationships consistent (a one-to-one partner
/// left over from a one-sided link, a key that would point at a deleted object). Threading: a
/// value; share it freely.
public struct SaveEffects: Sendable, Hashable {
    /// Objects the store changed on its own, to be read again.
    public var refreshed: Set<ObjectID> = []
    /// Set when the store cannot name them all (more than it keeps count of): every cached
    /// object is to be read again.
    public var refreshesEverything = false
    /// Updated objects whose rows the save found exactly as the request read them (every value
    /// and the version equal to the update's `original`), checked inside its transaction with
    /// the rows locked: each row now holds what the request wrote and the version one higher, so
    /// the engine keeps the row it saved instead of reading it again (issue 40). Not a change of
    /// the store's own: ``isEmpty`` does not count it.
    public var rowsAsRead: Set<ObjectID> = []
    /// The store's change token (``PersistentStore/externalChangeToken()``) as of this save,
    /// read inside its transaction, for a store whose token does not move for its own saves:
    /// another process's commit after this save moves the token away from it. Nil when the store
    /// does not say (the caller reads the token after the save).
    public var changeTokenAtSave: Int64?

    public init(
        refreshed: Set<ObjectID> = [], refreshesEverything: Bool = false, rowsAsRead: Set<ObjectID> = [],
        changeTokenAtSave: Int64? = nil
    ) {
        self.refreshed = refreshed
        self.refreshesEverything = refreshesEverything
        self.rowsAsRead = rowsAsRead
        self.changeTokenAtSave = changeTokenAtSave
    }

    public var isEmpty: Bool { refreshed.isEmpty && !refreshesEverything }
}
