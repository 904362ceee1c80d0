import Synchronization

/// The coordinator's cache of snapshots and to-many contents, bounded in bytes.
///
/// It keeps two generations: new and recently used entries live in the young one; when the young
/// generation reaches half the limit, it becomes the old one and the previous old one is dropped.
/// A hit in the old generation moves the entry back to the young one. That bounds memory at the
/// limit with O(1) work per access, and drops what was least recently used: those objects are
/// faults again and fire from the store when next read.
///
/// Threading: safe from any thread (one lock; it never calls out while holding it).
public final class RowCache: Sendable {
    struct ToManyKey: Hashable {
        var source: ObjectID
        var relationship: String
    }

    private struct Generation {
        var snapshots: [ObjectID: Snapshot] = [:]
        var toMany: [ToManyKey: [ObjectID]] = [:]
        var bytes = 0
    }

    private struct State {
        var young = Generation()
        var old = Generation()
        var hits = 0
        var misses = 0
        var evictions = 0
        /// Moves whenever entries are forgotten (a save, a refresh, another process's commit):
        /// a read made without the context's lock stores its rows only if it did not move
        /// meanwhile, so a row read before a save never replaces what the save left.
        var generation: UInt64 = 0
    }

    private let limit: Int
    private let state = Mutex(State())

    public init(limit: Int) { self.limit = max(limit, 1024) }

    /// The cached snapshot of `id`, if any.
    public func snapshot(for id: ObjectID) -> Snapshot? {
        state.withLock { state in
            if let s = state.young.snapshots[id] {
                state.hits += 1
                return s
            }
            if let s = state.old.snapshots.removeValue(forKey: id) {
                state.hits += 1
                state.old.bytes -= s.approximateSize
                insert(s, into: &state)
                return s
            }
            state.misses += 1
            return nil
        }
    }

    /// Whether `id` has a cached snapshot, without counting a hit or a miss.
    public func contains(_ id: ObjectID) -> Bool {
        state.withLock { $0.young.snapshots[id] != nil || $0.old.snapshots[id] != nil }
    }

    public func store(_ snapshots: some Sequence<Snapshot>) {
        state.withLock { state in
            for s in snapshots { insert(s, into: &state) }
        }
    }

    /// The current generation (see ``store(_:ifGeneration:)``).
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// Stores `snapshots` read from the store when nothing was forgotten since `generation` was
    /// taken (before the read); returns whether they were stored.
    @discardableResult
    public func store(_ snapshots: some Sequence<Snapshot>, ifGeneration generation: UInt64) -> Bool {
        state.withLock { state in
            guard state.generation == generation else { return false }
            for s in snapshots { insert(s, into: &state) }
            return true
        }
    }

    /// Stores to-many contents read from the store, as ``store(_:ifGeneration:)`` does.
    @discardableResult
    public func storeToMany(_ lists: [ObjectID: [ObjectID]], of relationship: String, ifGeneration generation: UInt64)
        -> Bool
    {
        state.withLock { state in
            guard state.generation == generation else { return false }
            for (id, destinations) in lists {
                insertToMany(destinations, ToManyKey(source: id, relationship: relationship), into: &state)
            }
            return true
        }
    }

    public func toManyDestinations(of relationship: String, for id: ObjectID) -> [ObjectID]? {
        let key = ToManyKey(source: id, relationship: relationship)
        return state.withLock { state in
            if let d = state.young.toMany[key] { return d }
            if let d = state.old.toMany.removeValue(forKey: key) {
                state.old.bytes -= Self.cost(of: d)
                state.young.toMany[key] = d
                state.young.bytes += Self.cost(of: d)
                rotateIfNeeded(&state)
                return d
            }
            return nil
        }
    }

    public func storeToMany(_ destinations: [ObjectID], of relationship: String, for id: ObjectID) {
        state.withLock { insertToMany(destinations, ToManyKey(source: id, relationship: relationship), into: &$0) }
    }

    private func insertToMany(_ destinations: [ObjectID], _ key: ToManyKey, into state: inout State) {
        if let old = state.old.toMany.removeValue(forKey: key) { state.old.bytes -= Self.cost(of: old) }
        if let old = state.young.toMany.updateValue(destinations, forKey: key) {
            state.young.bytes -= Self.cost(of: old)
        }
        state.young.bytes += Self.cost(of: destinations)
        rotateIfNeeded(&state)
    }

    /// Forgets everything cached about `ids` (after they were deleted or changed elsewhere).
    public func remove(_ ids: some Sequence<ObjectID>) {
        state.withLock { state in
            state.generation &+= 1
            for id in ids {
                if let s = state.young.snapshots.removeValue(forKey: id) { state.young.bytes -= s.approximateSize }
                if let s = state.old.snapshots.removeValue(forKey: id) { state.old.bytes -= s.approximateSize }
            }
            let removed = Set(ids)
            state.young.toMany = state.young.toMany.filter { !removed.contains($0.key.source) }
            state.old.toMany = state.old.toMany.filter { !removed.contains($0.key.source) }
        }
    }

    /// Drops everything (after another process changed the store).
    public func removeAll() {
        state.withLock { state in
            state.generation &+= 1
            state.evictions += state.young.snapshots.count + state.old.snapshots.count
            state.young = Generation()
            state.old = Generation()
        }
    }

    /// The IDs of every cached snapshot with its version (to find what another process changed).
    public func cachedVersions() -> [ObjectID: Int64] {
        state.withLock { state in
            var result: [ObjectID: Int64] = [:]
            for (id, s) in state.old.snapshots { result[id] = s.version }
            for (id, s) in state.young.snapshots { result[id] = s.version }
            return result
        }
    }

    /// Figures for `user.storefs.stats` and benchmarks.
    public var statistics: (snapshots: Int, bytes: Int, hits: Int, misses: Int, evictions: Int) {
        state.withLock {
            (
                $0.young.snapshots.count + $0.old.snapshots.count, $0.young.bytes + $0.old.bytes,
                $0.hits, $0.misses, $0.evictions
            )
        }
    }

    // MARK: - Private

    private func insert(_ snapshot: Snapshot, into state: inout State) {
        if let old = state.old.snapshots.removeValue(forKey: snapshot.objectID) {
            state.old.bytes -= old.approximateSize
        }
        if let old = state.young.snapshots.updateValue(snapshot, forKey: snapshot.objectID) {
            state.young.bytes -= old.approximateSize
        }
        state.young.bytes += snapshot.approximateSize
        rotateIfNeeded(&state)
    }

    private func rotateIfNeeded(_ state: inout State) {
        guard state.young.bytes > limit / 2 else { return }
        state.evictions += state.old.snapshots.count
        state.old = state.young
        state.young = Generation()
    }

    private static func cost(of destinations: [ObjectID]) -> Int { 48 + destinations.count * 16 }
}
