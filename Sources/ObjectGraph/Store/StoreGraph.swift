/// The whole object graph of a store held in memory: the in-memory store's contents, and what an
/// atomic store (XML, binary) loads from and writes to its file.
///
/// A value type on purpose: a save applies its request to a copy, and the store keeps the copy only
/// once it is stored (written to the file), so a failed save leaves the graph exactly as it was.
/// To-many contents are kept as the context gives them, both sides of every pair.
public struct StoreGraph: Sendable {
    public struct ToManyKey: Hashable, Sendable {
        public var source: ObjectID
        public var relationship: String

        public init(source: ObjectID, relationship: String) {
            self.source = source
            self.relationship = relationship
        }
    }

    public var snapshots: [ObjectID: Snapshot] = [:]
    public var keysByRoot: [EntityID: [PrimaryKey: ObjectID]] = [:]
    public var toMany: [ToManyKey: [ObjectID]] = [:]
    /// The highest key saved per root entity (Core Data's Z_MAX).
    public var maxKey: [EntityID: Int64] = [:]
    public var metadata: StoreMetadata

    public init(metadata: StoreMetadata) { self.metadata = metadata }

    /// Adds an object read from a file; false, changing nothing, when its key is already taken in
    /// its root. A reader of many objects loads them through ``startLoading(root:expecting:)``.
    public mutating func load(_ snapshot: consuming Snapshot, root: EntityID) -> Bool {
        var run = startLoading(root: root)
        defer { finishLoading(run) }
        return load(snapshot, into: &run)
    }

    /// Makes room for `objects` more snapshots and `toManyLists` more to-many lists before a
    /// reader loads them: the tables then do not grow by rehashing everything they hold as a file
    /// is read. The counts are what the file says; at most ``reservationLimit`` of each is taken
    /// on its word, so a file that claims more than it holds cannot make this allocate.
    public mutating func reserve(objects: Int, toManyLists: Int = 0) {
        if objects > 0 { snapshots.reserveCapacity(snapshots.count + min(objects, Self.reservationLimit)) }
        if toManyLists > 0 { toMany.reserveCapacity(toMany.count + min(toManyLists, Self.reservationLimit)) }
    }

    /// The most objects (and to-many lists) one reservation makes room for. More are loaded as
    /// usual, the tables growing as they need.
    public static let reservationLimit = 1 << 20

    /// One root's key table and highest key, taken out of the graph while a reader loads many
    /// objects of that root (``startLoading(root:expecting:)``), so that an object costs no lookup
    /// of its root's tables; ``finishLoading(_:)`` puts them back. Until then the graph lacks them.
    public struct RootLoad: Sendable {
        public let root: EntityID
        var keys: [PrimaryKey: ObjectID]
        var highest: Int64
    }

    /// Takes `root`'s tables out for loading its objects with ``load(_:into:)``, with room for
    /// `expecting` more keys (capped like ``reserve(objects:toManyLists:)``).
    public mutating func startLoading(root: EntityID, expecting count: Int = 0) -> RootLoad {
        var keys = keysByRoot.removeValue(forKey: root) ?? [:]
        if count > 0 { keys.reserveCapacity(keys.count + min(count, Self.reservationLimit)) }
        return RootLoad(root: root, keys: keys, highest: maxKey[root] ?? 0)
    }

    /// ``load(_:root:)`` into tables taken out by ``startLoading(root:expecting:)``.
    public mutating func load(_ snapshot: consuming Snapshot, into run: inout RootLoad) -> Bool {
        let id = snapshot.objectID
        if let holder = run.keys.updateValue(id, forKey: id.key) {
            run.keys[id.key] = holder  // a damaged file: put the first one back
            return false
        }
        snapshots[id] = snapshot
        if run.highest < id.key.rawValue { run.highest = id.key.rawValue }
        return true
    }

    /// Puts back the tables ``startLoading(root:expecting:)`` took out, with what was loaded into them.
    public mutating func finishLoading(_ run: consuming RootLoad) {
        if !run.keys.isEmpty { keysByRoot[run.root] = run.keys }
        if run.highest > 0 { maxKey[run.root] = run.highest }
    }

    /// Whether objects exist, for checking many (every reference of a file read or written):
    /// each entity's root key table is found once, so a check is one lookup instead of three.
    public func existence(model: ManagedObjectModel) -> Existence {
        Existence(tables: model.entities.map { keysByRoot[$0.rootID] ?? [:] })
    }

    /// See ``existence(model:)``; `existence(id)` says whether `id` is in the graph.
    public struct Existence: Sendable {
        @usableFromInline let tables: [[PrimaryKey: ObjectID]]

        @inlinable
        public func callAsFunction(_ id: ObjectID) -> Bool {
            guard id.entity.rawValue >= 1, id.entity.rawValue <= tables.count else { return false }
            return tables[id.entity.rawValue - 1][id.key] == id
        }
    }

    /// Objects of exactly `entity`, by key.
    public func objectIDs(of entity: EntityID, model: ManagedObjectModel) -> [ObjectID] {
        (keysByRoot[model[entity].rootID] ?? [:]).values.filter { $0.entity == entity }.sorted()
    }

    public func count(of entity: EntityID, model: ManagedObjectModel) -> Int {
        (keysByRoot[model[entity].rootID] ?? [:]).values.count { $0.entity == entity }
    }

    public func toManyDestinations(of relationship: String, for sources: [ObjectID]) -> [ObjectID: [ObjectID]] {
        var result: [ObjectID: [ObjectID]] = [:]
        for source in sources { result[source] = toMany[ToManyKey(source: source, relationship: relationship)] ?? [] }
        return result
    }

    /// Whether `key` is free in the tree of `root`: no object has it.
    public func isFree(_ key: PrimaryKey, in root: EntityID) -> Bool { keysByRoot[root]?[key] == nil }

    /// Applies a save (see ``SaveRequest``): every check first, so a request that fails changes
    /// nothing; then inserts, updates of what changed, deletes, to-many differences and metadata.
    ///
    /// - Throws: ``ObjectGraphError/Code/conflict`` naming the object whose changed property
    ///   another save changed, or that another save deleted; ``ObjectGraphError/Code/exists``
    ///   naming an inserted object whose key is taken.
    /// `keepsStoreUUID`: the graph keeps its own store UUID whatever the request's metadata says
    /// (a file's identity); otherwise a request that brings a UUID (a migration) sets it.
    public mutating func apply(
        _ request: SaveRequest, model: ManagedObjectModel, storeType: String, keepsStoreUUID: Bool
    )
        throws(ObjectGraphError)
    {
        for update in request.updated where !update.isEmpty {
            guard let current = snapshots[update.objectID] else {
                throw conflict(update.objectID, model, deleted: true)
            }
            let attributeMoved = update.changedAttributes.contains {
                current.attributes[$0] != update.original.attributes[$0]
            }
            let toOneMoved = update.changedToOne.contains { current.toOne[$0] != update.original.toOne[$0] }
            if attributeMoved || toOneMoved { throw conflict(update.objectID, model, deleted: false) }
        }
        for d in request.deleted where snapshots[d.objectID]?.version != d.expectedVersion {
            throw conflict(d.objectID, model, deleted: snapshots[d.objectID] == nil)
        }
        var inserting: Set<ObjectID> = []
        for s in request.inserted {
            let root = model[s.objectID.entity].rootID
            guard keysByRoot[root]?[s.objectID.key] == nil, inserting.insert(s.objectID).inserted else {
                throw ObjectGraphError(
                    .exists, "\(model[s.objectID.entity].name) key \(s.objectID.key) already exists",
                    objects: [s.objectID])
            }
        }
        for s in request.inserted {
            var s = s
            if !request.keepsVersions || s.version < 1 { s.version = 1 }
            let root = model[s.objectID.entity].rootID
            snapshots[s.objectID] = s
            keysByRoot[root, default: [:]][s.objectID.key] = s.objectID
            maxKey[root] = max(maxKey[root] ?? 0, s.objectID.key.rawValue)
        }
        for update in request.updated where !update.isEmpty {
            guard var current = snapshots[update.objectID] else { continue }
            for name in update.changedAttributes { current.attributes[name] = update.snapshot.attributes[name] }
            for name in update.changedToOne { current.toOne[name] = update.snapshot.toOne[name] }
            current.version += 1
            snapshots[update.objectID] = current
        }
        for d in request.deleted {
            snapshots[d.objectID] = nil
            keysByRoot[model[d.objectID.entity].rootID]?[d.objectID.key] = nil
            for r in model[d.objectID.entity].persistentRelationships where r.isToMany {
                toMany[ToManyKey(source: d.objectID, relationship: r.name)] = nil
            }
        }
        for change in request.toManyChanges where snapshots[change.source] != nil {
            let key = ToManyKey(source: change.source, relationship: change.relationship)
            let list = change.applied(to: toMany[key] ?? [])
            toMany[key] = list.isEmpty ? nil : list
        }
        for (root, counter) in request.keyCounters where counter > (maxKey[root] ?? 0) { maxKey[root] = counter }
        if var newMetadata = request.metadata {
            newMetadata.storeType = storeType
            if keepsStoreUUID || newMetadata.storeUUID == nil { newMetadata.storeUUID = metadata.storeUUID }
            metadata = newMetadata
        }
    }

    private func conflict(_ id: ObjectID, _ model: ManagedObjectModel, deleted: Bool) -> ObjectGraphError {
        let what = "\(model[id.entity].name)/\(id.key)"
        return deleted
            ? ObjectGraphError(.conflict, "\(what) was deleted by another save since it was read", objects: [id])
            : ObjectGraphError(.conflict, "\(what) was changed by another save since it was read", objects: [id])
    }
}
