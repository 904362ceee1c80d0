import Foundation
import ObjectGraph
import Synchronization

/// The cached results of fetched properties and templates, by folder.
///
/// A result is evaluated without the lock, so a change can drop everything while one is being
/// evaluated; the generation, moved by every drop, keeps such a result out of the cache (kept,
/// it would list what the folder held before the change until the next one).
final class FetchedResults: Sendable {
    private struct State {
        var results: [Node: [ObjectID]] = [:]
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())

    func get(_ node: Node) -> [ObjectID]? { state.withLock { $0.results[node] } }

    /// The generation to give ``set(_:for:evaluatedIn:)`` for a result evaluated from now.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps `ids` for `node` unless a drop came since `generation` was read; returns whether
    /// it kept them.
    func set(_ ids: [ObjectID], for node: Node, evaluatedIn generation: UInt64) -> Bool {
        state.withLock { state in
            guard state.generation == generation else { return false }
            state.results[node] = ids
            return true
        }
    }

    func drop(_ node: Node) {
        state.withLock { state in
            state.generation &+= 1
            state.results.removeValue(forKey: node)
        }
    }

    /// Drops everything; returns the folders that were cached (their kernel listings go too).
    func dropAll() -> [Node] {
        state.withLock { state in
            state.generation &+= 1
            defer { state.results = [:] }
            return Array(state.results.keys)
        }
    }
}
