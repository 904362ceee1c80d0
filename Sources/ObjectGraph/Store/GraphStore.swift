import Foundation
import Synchronization

/// How a ``GraphStore`` keeps its graph between opens: a whole file, written atomically at every
/// save (XML, binary), or nothing (in-memory: no persistence at all).
///
/// Threading: called with the store's lock held, from any thread.
public protocol GraphPersistence: Sendable {
    /// Replaces the stored graph with `graph`, whole and atomically.
    func write(_ graph: StoreGraph) throws(ObjectGraphError)
    /// Reads the stored graph again (another process replaced the file).
    func read() throws(ObjectGraphError) -> StoreGraph
    /// A token that changes whenever the stored graph does; nil when it cannot be read.
    func changeToken() -> Int64?
}

/// A store that holds its whole graph in memory (``StoreGraph``): Core Data's in-memory store, and
/// the atomic stores (XML, binary), which add a ``GraphPersistence`` that writes the whole file
/// at every save.
///
/// Another process may replace the file: when its token moves, the store reads the graph again
/// before it answers, so the mount shows the change and the next save keeps it. Versions are the
/// graph's own in memory (XML has none), so an object whose stored state changed gets a new one,
/// and a save whose change of a property was made on the old value conflicts, as in SQLite.
///
/// Threading: safe from any thread (one lock; a save holds it while it writes the file).
public final class GraphStore: PersistentStore {
    private struct State {
        var graph: StoreGraph
        /// The token of the stored graph this one was read from or last written as.
        var token: Int64?
        var requests = 0
        var closed = false
    }

    public let model: ManagedObjectModel
    public let storeType: String
    public let url: URL?
    public let isReadOnly: Bool
    public let modelSource: ModelSource
    /// The file as it was read, hashed, when the open was asked to hash its inputs
    /// (``StoreOptions/hashesInputs``): such a store keeps showing what was hashed, and reads no
    /// other process's change (``externalChangeToken()``).
    public let inputFiles: [InputFile]
    private let persistence: (any GraphPersistence)?
    private let state: Mutex<State>

    /// A store of `graph` kept by `persistence` (nil: in memory only).
    public init(
        model: ManagedObjectModel, storeType: String, url: URL?, readOnly: Bool, graph: StoreGraph,
        persistence: (any GraphPersistence)?, modelSource: ModelSource = .inferred, inputs: [InputFile] = []
    ) {
        self.model = model
        self.storeType = storeType
        self.url = url
        self.isReadOnly = readOnly
        self.persistence = persistence
        self.modelSource = modelSource
        self.inputFiles = inputs
        self.state = Mutex(State(graph: graph, token: persistence?.changeToken()))
    }

    /// A new, empty in-memory store (Core Data's in-memory store type).
    public convenience init(model: ManagedObjectModel, metadata: StoreMetadata = StoreMetadata()) {
        var metadata = metadata
        metadata.storeType = InMemoryStoreType.typeName
        if metadata.storeUUID == nil { metadata.storeUUID = StoreMetadata.newStoreUUID() }
        self.init(
            model: model, storeType: InMemoryStoreType.typeName, url: nil, readOnly: false,
            graph: StoreGraph(metadata: metadata), persistence: nil)
    }

    public var requestCount: Int { state.withLock { $0.requests } }
    public var isAtomic: Bool { true }

    public func metadata() throws(ObjectGraphError) -> StoreMetadata { try access { $0.graph.metadata } }

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
            try KeyRange.reserve(count, after: state.graph.maxKey[root] ?? 0, in: describe(root)) {
                state.graph.maxKey[root] = $0
            }
        }
    }

    public func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        try access { state in
            guard state.graph.isFree(key, in: root) else { return false }
            state.graph.maxKey[root] = max(state.graph.maxKey[root] ?? 0, key.rawValue)
            return true
        }
    }

    /// Applies the request to a copy of the graph, writes it (after reading again a file another
    /// process replaced, so its change is checked against and kept), then keeps the copy.
    public func save(_ request: SaveRequest) throws(ObjectGraphError) {
        try access { (state) throws(ObjectGraphError) in
            guard !isReadOnly else {
                throw ObjectGraphError(
                    .readOnly, "\(url?.path ?? "the store") was opened read-only; the save was not written")
            }
            try readAgainIfReplaced(&state)
            var copy = state.graph
            try copy.apply(request, model: model, storeType: storeType, keepsStoreUUID: persistence != nil)
            if let persistence {
                try persistence.write(copy)
                state.token = persistence.changeToken()
            }
            state.graph = copy
        }
    }

    public func highestKey(in root: EntityID) throws(ObjectGraphError) -> Int64 {
        try access { $0.graph.maxKey[root] ?? 0 }
    }

    public func externalChangeToken() throws(ObjectGraphError) -> Int64? {
        guard persistence != nil, inputFiles.isEmpty else { return nil }
        return try access { (state) throws(ObjectGraphError) in
            try readAgainIfReplaced(&state)
            return state.token
        }
    }

    public func close() { state.withLock { $0.closed = true } }

    /// Reads the graph again when another process replaced the stored one since it was read or
    /// written here: what it changed shows, and gets new versions.
    private func readAgainIfReplaced(_ state: inout State) throws(ObjectGraphError) {
        guard let persistence, let token = persistence.changeToken(), token != state.token else { return }
        var fresh = try persistence.read()
        fresh.continueVersions(of: state.graph)
        state.graph = fresh
        state.token = token
    }

    private func describe(_ root: EntityID) -> String {
        url.map { "\($0.path): \(model[root].name)" } ?? model[root].name
    }

    private func access<T>(_ body: (inout State) throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        try state.withLock { (state) throws(ObjectGraphError) -> T in
            guard !state.closed else {
                throw ObjectGraphError(.unsupported, "the store \(url?.path ?? "in memory") is closed")
            }
            state.requests += 1
            return try body(&state)
        }
    }
}

/// The in-memory store type. It has no files: `storefs mount --memory` makes one directly
/// (``GraphStore/init(model:metadata:)``).
public struct InMemoryStoreType: Sendable {
    public static let typeName = "InMemory"
}
