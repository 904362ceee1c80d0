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

    public init(refreshed: Set<ObjectID> = [], refreshesEverything: Bool = false) {
        self.refreshed = refreshed
        self.refreshesEverything = refreshesEverything
    }

    public var isEmpty: Bool { refreshed.isEmpty && !refreshesEverything }
}
