import Foundation
import ObjectGraph
import Synchronization

/// The part of an atomic store that does not depend on its file format: the graph in memory,
/// requests, keys and saves. The store type supplies `encode`, which turns a graph into the bytes
/// of the whole file.
///
/// Threading: safe from any thread (one lock; a save holds it while it writes the file).
package final class AtomicStoreCore: Sendable {
    package struct State {
        var graph: AtomicGraph
        var requests = 0
        var closed = false
    }

    package typealias Encoder = @Sendable (AtomicGraph) throws(ObjectGraphError) -> Data

    package let model: ManagedObjectModel
    package let url: URL
    package let storeType: String
    package let isReadOnly: Bool
    private let encode: Encoder
    private let state: Mutex<State>

    package init(model: ManagedObjectModel, url: URL, storeType: String, readOnly: Bool, graph: AtomicGraph,
         encode: @escaping Encoder) {
        self.model = model
        self.url = url
        self.storeType = storeType
        self.isReadOnly = readOnly
        self.encode = encode
        self.state = Mutex(State(graph: graph))
    }

    package var requestCount: Int { state.withLock { $0.requests } }

    package func metadata() throws(ObjectGraphError) -> StoreMetadata { try access { $0.graph.metadata } }

    package func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] {
        try access { $0.graph.objectIDs(of: entity, model: model) }
    }

    package func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        try access { $0.graph.count(of: entity, model: model) }
    }

    package func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] {
        try access { state in ids.compactMap { state.graph.snapshots[$0] } }
    }

    package func toManyDestinations(of relationship: String, for sources: [ObjectID]) throws(ObjectGraphError)
        -> [ObjectID: [ObjectID]]
    {
        try access { $0.graph.toManyDestinations(of: relationship, for: sources) }
    }

    package func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey] {
        try access { (state) throws(ObjectGraphError) in
            try KeyRange.reserve(count, after: state.graph.maxKey[root] ?? 0, in: "\(url.path): \(model[root].name)") { state.graph.maxKey[root] = $0 }
        }
    }

    package func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        try access { state in
            guard state.graph.isFree(key, in: root) else { return false }
            state.graph.maxKey[root] = max(state.graph.maxKey[root] ?? 0, key.rawValue)
            return true
        }
    }

    package func highestKeyHandedOut(in root: EntityID) throws(ObjectGraphError) -> Int64? {
        try access { $0.graph.maxKey[root] ?? 0 }
    }

    /// Applies the request to a copy of the graph, writes the file, then keeps the copy.
    package func save(_ request: SaveRequest) throws(ObjectGraphError) {
        try access { (state) throws(ObjectGraphError) in
            guard !isReadOnly else {
                throw ObjectGraphError(.readOnly, "\(url.path) was opened read-only; the save was not written")
            }
            var copy = state.graph
            try copy.apply(request, model: model, storeType: storeType, keepsStoreUUID: true)
            let data = try encode(copy)
            try AtomicFile.write(data, to: url)
            state.graph = copy
        }
    }

    package func externalChangeToken() throws(ObjectGraphError) -> Int64? {
        try access { _ in AtomicFile.changeToken(url) }
    }

    package func close() { state.withLock { $0.closed = true } }

    private func access<T>(_ body: (inout State) throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        try state.withLock { (state) throws(ObjectGraphError) -> T in
            guard !state.closed else { throw ObjectGraphError(.unsupported, "the store \(url.path) is closed") }
            state.requests += 1
            return try body(&state)
        }
    }
}
