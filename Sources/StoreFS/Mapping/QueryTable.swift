import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// The queries a mount has been asked (`.query/ENTITY/NAME`), numbered for inode numbers, with
/// what their files hold and the last reason one was refused.
///
/// An inode number has no room for a predicate, so each (entity, name) looked up gets the next
/// index and keeps it while the mount lasts. At most ``capacity`` are kept: past that the oldest
/// is forgotten (a number the kernel still holds for it then answers ENOENT, and looking the name
/// up again gives it a new number), so names typed by a script in a loop cannot grow the table
/// without bound. Indexes are never reused, so a forgotten number never names another query.
///
/// Threading: a `Mutex` guards everything; call from any thread.
final class QueryTable: Sendable {
    struct Query: Hashable, Sendable {
        let entity: EntityID
        /// The name looked up: a saved query's name or the predicate itself (resolved when
        /// evaluated, so a saved query changed by `setfattr` answers with its new predicate).
        let name: String
    }

    static let capacity = 16_384
    /// Files of results kept (the last few read; each is at most ``QueryFolder/maximumResultBytes``).
    static let keptFiles = 2

    private struct State {
        var queries: [UInt32: Query] = [:]
        var indexes: [Query: UInt32] = [:]
        var next: UInt32 = 1
        /// Indexes in the order they were given, for forgetting the oldest.
        var order: [UInt32] = []
        var orderStart = 0
        var errors: [EntityID: String] = [:]
        var files: [(node: Node, generation: UInt64, content: Data)] = []
        /// Result files whose sizes the kernel was told since results were last dropped.
        var shown: Set<Node> = []
        /// The saved queries as last read from the metadata (dropped with the results).
        var saved: [String: MetadataValue]?
        /// Moved by every drop of ``saved``: a read that started before one is not kept (it may
        /// predate a `setfattr user.query.*`), as ``FetchedResults`` does for results.
        var savedGeneration: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The index of `query`, given now if it has none; nil once 2^32 - 1 indexes were given.
    func index(of query: Query) -> UInt32? {
        state.withLock { state in
            if let known = state.indexes[query] { return known }
            guard state.next < UInt32.max else { return nil }
            let index = state.next
            state.next += 1
            state.queries[index] = query
            state.indexes[query] = index
            state.order.append(index)
            if state.queries.count > Self.capacity {
                let oldest = state.order[state.orderStart]
                state.orderStart += 1
                if let forgotten = state.queries.removeValue(forKey: oldest) { state.indexes[forgotten] = nil }
                if state.orderStart > Self.capacity {
                    state.order.removeFirst(state.orderStart)
                    state.orderStart = 0
                }
            }
            return index
        }
    }

    func query(_ index: UInt32) -> Query? { state.withLock { $0.queries[index] } }

    /// The last reason a query of `entity` was refused (`user.storefs.error` on `.query/ENTITY`).
    func error(of entity: EntityID) -> String? { state.withLock { $0.errors[entity] } }

    func setError(_ message: String?, of entity: EntityID) { state.withLock { $0.errors[entity] = message } }

    /// The content of result file `node` made in `generation` (of ``FetchedResults``), if kept.
    func file(_ node: Node, generation: UInt64) -> Data? {
        state.withLock { state in
            state.files.first { $0.node == node && $0.generation == generation }?.content
        }
    }

    /// Notes that the kernel was told the size of result file `node`.
    func shown(_ node: Node) { state.withLock { _ = $0.shown.insert(node) } }

    /// The result files the kernel was told about since the last call, forgotten with what was
    /// kept (files and saved queries: anything may have changed).
    func takeShown() -> Set<Node> {
        state.withLock { state in
            defer { state.shown = [] }
            state.files = []
            state.saved = nil
            state.savedGeneration &+= 1
            return state.shown
        }
    }

    /// The saved queries of every entity, read by `read` unless kept. `read` runs without the
    /// lock; what it read is kept only if nothing dropped the saved queries meanwhile.
    func saved(_ read: () throws(FileSystemError) -> [String: MetadataValue]) throws(FileSystemError)
        -> [String: MetadataValue]
    {
        let (kept, generation) = state.withLock { ($0.saved, $0.savedGeneration) }
        if let kept { return kept }
        let saved = try read()
        state.withLock { state in
            if state.savedGeneration == generation { state.saved = saved }
        }
        return saved
    }

    func forgetSaved() {
        state.withLock { state in
            state.saved = nil
            state.savedGeneration &+= 1
        }
    }

    func keep(_ content: Data, of node: Node, generation: UInt64) {
        state.withLock { state in
            state.files.removeAll { $0.node == node || $0.generation != generation }
            state.files.append((node, generation, content))
            if state.files.count > Self.keptFiles { state.files.removeFirst(state.files.count - Self.keptFiles) }
        }
    }
}
