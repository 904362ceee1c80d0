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
    /// its root. Consuming, and with one lookup per table: called once per object of a file.
    public mutating func load(_ snapshot: consuming Snapshot, root: EntityID) -> Bool {
        let id = snapshot.objectID
        if let holder = keysByRoot[root, default: [:]].updateValue(id, forKey: id.key) {
            keysByRoot[root, default: [:]][id.key] = holder  // a damaged file: put the first one back
            return false
        }
        snapshots[id] = snapshot
        Self.raise(&maxKey[root, default: 0], to: id.key.rawValue)
        return true
    }

    /// Makes room for `count` more objects of `root`, with `toManyLists` more to-many lists,
    /// before a reader loads them: the tables then do not grow by rehashing everything they hold
    /// as a file is read. `count` is what the file says; at most ``reservationLimit`` is taken
    /// on its word, so a file that claims more than it holds cannot make this allocate.
    public mutating func reserve(objects count: Int, root: EntityID, toManyLists: Int = 0) {
        guard count > 0 else { return }
        let objects = min(count, Self.reservationLimit)
        let lists = min(max(toManyLists, 0), Self.reservationLimit)
        snapshots.reserveCapacity(snapshots.count + objects)
        let held = keysByRoot[root]?.count ?? 0
        keysByRoot[root, default: [:]].reserveCapacity(held + objects)
        if lists > 0 { toMany.reserveCapacity(toMany.count + lists) }
    }

    /// The most objects (and to-many lists) one ``reserve(objects:root:toManyLists:)`` makes room for.
    /// More are loaded as usual, the tables growing as they need.
    public static let reservationLimit = 1 << 20

    /// One root's key table and highest key, taken out of the graph while a reader loads many
    /// objects of that root (``startLoading(root:)``), so that an object costs no lookup of its
    /// root's tables; ``finishLoading(_:)`` puts them back. Until then the graph lacks them.
    public struct RootLoad: Sendable {
        public let root: EntityID
        var keys: [PrimaryKey: ObjectID]
        var highest: Int64
    }

    /// Takes `root`'s tables out for loading its objects with ``load(_:into:)``.
    public mutating func startLoading(root: EntityID) -> RootLoad {
        RootLoad(root: root, keys: keysByRoot.removeValue(forKey: root) ?? [:], highest: maxKey[root] ?? 0)
    }

    /// ``load(_:root:)`` into tables taken out by ``startLoading(root:)``.
    public mutating func load(_ snapshot: consuming Snapshot, into run: inout RootLoad) -> Bool {
        let id = snapshot.objectID
        if let holder = run.keys.updateValue(id, forKey: id.key) {
            run.keys[id.key] = holder  // a damaged file: put the first one back
            return false
        }
        snapshots[id] = snapshot
        Self.raise(&run.highest, to: id.key.rawValue)
        return true
    }

    /// Puts back the tables ``startLoading(root:)`` took out, with what was loaded into them.
    public mutating func finishLoading(_ run: consuming RootLoad) {
        if !run.keys.isEmpty { keysByRoot[run.root] = run.keys }
        if run.highest > 0 { maxKey[run.root] = run.highest }
    }

    private static func raise(_ value: inout Int64, to floor: Int64) {
        if value < floor { value = floor }
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
    public mutating func apply(_ request: SaveRequest, model: ManagedObjectModel, storeType: String, keepsStoreUUID: Bool)
        throws(ObjectGraphError)
    {
        for update in request.updated where !update.isEmpty {
            guard let current = snapshots[update.objectID] else { throw conflict(update.objectID, model, deleted: true) }
            let attributeMoved = update.changedAttributes.contains { current.attributes[$0] != update.original.attributes[$0] }
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
                    .exists, "\(model[s.objectID.entity].name) key \(s.objectID.key) already exists", objects: [s.objectID])
            }
        }
        for s in request.inserted {
            var s = s
            s.version = 1
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
