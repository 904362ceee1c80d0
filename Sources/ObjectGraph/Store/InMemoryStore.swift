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
        var snapshots: [ObjectID: Snapshot] = [:]
        var keysByRoot: [EntityID: [PrimaryKey: ObjectID]] = [:]
        var toMany: [RowCache.ToManyKey: [ObjectID]] = [:]
        var maxKey: [EntityID: Int64] = [:]
        var metadata: StoreMetadata
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
        self.state = Mutex(State(metadata: metadata))
    }

    public var requestCount: Int { state.withLock { $0.requests } }

    public func metadata() throws(ObjectGraphError) -> StoreMetadata {
        try access { $0.metadata }
    }

    public func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] {
        try access { state in
            (state.keysByRoot[model[entity].rootID] ?? [:]).values.filter { $0.entity == entity }.sorted()
        }
    }

    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        try access { state in
            (state.keysByRoot[model[entity].rootID] ?? [:]).values.count { $0.entity == entity }
        }
    }

    public func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] {
        try access { state in ids.compactMap { state.snapshots[$0] } }
    }

    public func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]
    {
        try access { state in
            var result: [ObjectID: [ObjectID]] = [:]
            for source in sources {
                result[source] = state.toMany[.init(source: source, relationship: relationship)] ?? []
            }
            return result
        }
    }

    public func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey] {
        try access { state in
            let first = (state.maxKey[root] ?? 0) + 1
            state.maxKey[root] = first + Int64(count) - 1
            return (0..<Int64(count)).map { PrimaryKey(first + $0) }
        }
    }

    public func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        try access { state in
            guard state.keysByRoot[root]?[key] == nil else { return false }
            state.maxKey[root] = max(state.maxKey[root] ?? 0, key.rawValue)
            return true
        }
    }

    public func save(_ request: SaveRequest) throws(ObjectGraphError) {
        try access { (state) throws(ObjectGraphError) in
            // Check every version before changing anything: a save is all or nothing.
            for s in request.updated where state.snapshots[s.objectID]?.version != s.version {
                throw conflict(s.objectID, state)
            }
            for d in request.deleted where state.snapshots[d.objectID]?.version != d.expectedVersion {
                throw conflict(d.objectID, state)
            }
            for s in request.inserted {
                let root = model[s.objectID.entity].rootID
                guard state.keysByRoot[root]?[s.objectID.key] == nil else {
                    throw ObjectGraphError(.exists, "\(model[s.objectID.entity].name) key \(s.objectID.key) already exists")
                }
            }
            for s in request.inserted {
                var s = s
                s.version = 1
                let root = model[s.objectID.entity].rootID
                state.snapshots[s.objectID] = s
                state.keysByRoot[root, default: [:]][s.objectID.key] = s.objectID
                state.maxKey[root] = max(state.maxKey[root] ?? 0, s.objectID.key.rawValue)
            }
            for s in request.updated {
                var s = s
                s.version += 1
                state.snapshots[s.objectID] = s
            }
            for d in request.deleted {
                state.snapshots[d.objectID] = nil
                state.keysByRoot[model[d.objectID.entity].rootID]?[d.objectID.key] = nil
                state.toMany = state.toMany.filter { $0.key.source != d.objectID }
            }
            for change in request.toManyChanges where state.snapshots[change.source] != nil {
                state.toMany[.init(source: change.source, relationship: change.relationship)] = change.destinations
            }
            if var metadata = request.metadata {
                metadata.storeType = InMemoryStoreType.typeName
                // A migration brings the old store's UUID; otherwise the store keeps its own.
                if metadata.storeUUID == nil { metadata.storeUUID = state.metadata.storeUUID }
                state.metadata = metadata
            }
        }
    }

    public func externalChangeToken() throws(ObjectGraphError) -> Int64? { nil }

    public func close() { state.withLock { $0.closed = true } }

    private func conflict(_ id: ObjectID, _ state: State) -> ObjectGraphError {
        let what = "\(model[id.entity].name)/\(id.key)"
        return state.snapshots[id] == nil
            ? ObjectGraphError(.conflict, "\(what) was deleted by another save since it was read")
            : ObjectGraphError(.conflict, "\(what) was changed by another save since it was read")
    }

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
