import Foundation
import Synchronization

/// Core Data's in-memory store type: the whole graph in memory, nothing on disk.
///
/// Used for scratch mounts and tests, and as the target in a migration chain. It keeps to-many
/// contents as the context gives them (both sides of every pair), so it needs no join logic.
///
/// Threading: safe from any thread (one lock).
public final class InMemoryStore: PersistentStore {
    struct State {
        var graph: StoreGraph
        var requests = 0
        var closed = false
    }

    public let model: ManagedObjectModel
    public var storeType: String { InMemoryStoreType.typeName }
    public var url: URL? { nil }
    public let isReadOnly = false
    private let state: Mutex<State>

    public init(model: ManagedObjectModel, metadata: StoreMetadata = StoreMetadata()) {
        var metadata = metadata
        metadata.storeType = InMemoryStoreType.typeName
        if metadata.storeUUID == nil { metadata.storeUUID = StoreMetadata.newStoreUUID() }
        self.model = model
        self.state = Mutex(State(graph: StoreGraph(metadata: metadata)))
    }

    public var requestCount: Int { state.withLock { $0.requests } }
    public var isAtomic: Bool { true }

    public func metadata() throws(ObjectGraphError) -> StoreMetadata {
        try access { $0.graph.metadata }
    }

    public func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] {
        try access { $0.graph.objectIDs(of: entity, model: model) }
    }

    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        try access { $0.graph.count(of: entity, model: model) }
    }

    public func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] {
        try access { state in ids.compactMap { state.graph.snapshots[$0] } }
    }

    public func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]
    {
        try access { $0.graph.toManyDestinations(of: relationship, for: sources) }
    }

    public func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey] {
        try access { (state) throws(ObjectGraphError) in
            try KeyRange.reserve(count, after: state.graph.maxKey[root] ?? 0, in: model[root].name) { state.graph.maxKey[root] = $0 }
        }
    }

    public func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        try access { state in
            guard state.graph.isFree(key, in: root) else { return false }
            state.graph.maxKey[root] = max(state.graph.maxKey[root] ?? 0, key.rawValue)
            return true
        }
    }

    public func highestKeyHandedOut(in root: EntityID) throws(ObjectGraphError) -> Int64? {
        try access { $0.graph.maxKey[root] ?? 0 }
    }

    public func save(_ request: SaveRequest) throws(ObjectGraphError) {
        try access { (state) throws(ObjectGraphError) in
            var copy = state.graph
            try copy.apply(request, model: model, storeType: InMemoryStoreType.typeName, keepsStoreUUID: false)
            state.graph = copy
        }
    }

    public func externalChangeToken() throws(ObjectGraphError) -> Int64? { nil }

    public func close() { state.withLock { $0.closed = true } }

    private func access<T>(_ body: (inout State) throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        try state.withLock { (state) throws(ObjectGraphError) -> T in
            guard !state.closed else { throw ObjectGraphError(.unsupported, "the in-memory store is closed") }
            state.requests += 1
            return try body(&state)
        }
    }
}

/// The in-memory store type. It has no files: `storefs mount --memory` makes one directly.
public struct InMemoryStoreType: Sendable {
    public static let typeName = "InMemory"
}
