import Synchronization

/// The highest primary key each inheritance tree of the store had handed out, as far as this
/// process knows: a key above it names no object, so a lookup of it is answered from memory
/// (``ObjectContext/objectID(forKey:in:)``). A copy into a mount looks up every new name before
/// making it (`cp -a`'s LOOKUP before MKDIR); without this each asked the store.
///
/// Only ever too high, never too low, while it is known:
/// - learned from the store itself (``PersistentStore/highestKey(in:)``: Core Data's Z_MAX or the
///   highest key a row has, with keys reserved or claimed and not saved yet);
/// - raised by every insert of this process's contexts before the object is visible anywhere
///   (``raise(_:)``), so what a context saves never lies above it;
/// - forgotten (``forgetAll()``) whenever another process may have added objects: its commit
///   seen by the change token or announced by the server (the same moments the row cache is
///   dropped); the next lookup learns it again.
/// A value learned from a query that an insert or a forget overtook is not kept (``generation``):
/// the query may predate the insert.
///
/// Threading: one lock, held for moments; never calls out while holding it.
public final class KeyBounds: Sendable {
    private struct State {
        var highest: [EntityID: Int64] = [:]
        /// Moves at every raise and forget: a value learned across one is dropped.
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// The highest key handed out in the tree of root entity `root`, when known.
    public func highest(in root: EntityID) -> Int64? { state.withLock { $0.highest[root] } }

    /// Where the bounds stand now: pass it to ``learn(_:in:ifGeneration:)`` with what the store
    /// answered after this was read.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps `highest`, read from the store, unless an insert or forget happened since
    /// `generation` was read.
    public func learn(_ highest: Int64, in root: EntityID, ifGeneration generation: UInt64) {
        state.withLock { state in
            guard state.generation == generation else { return }
            state.highest[root] = max(state.highest[root] ?? highest, highest)
        }
    }

    /// Notes that `id`'s key is in use (an insert) in the tree of `root`.
    public func raise(_ id: ObjectID, root: EntityID) {
        state.withLock { state in
            state.generation &+= 1
            if let known = state.highest[root], known < id.key.rawValue { state.highest[root] = id.key.rawValue }
        }
    }

    /// Forgets every bound: another process may have added objects.
    public func forgetAll() {
        state.withLock { state in
            state.generation &+= 1
            state.highest = [:]
        }
    }
}
