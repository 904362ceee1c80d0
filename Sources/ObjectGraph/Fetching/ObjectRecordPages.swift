/// Reads the records of many objects of a store, a page at a time: each row is read once, a page
/// costs one store request for the rows and one per to-many relationship, and memory holds one
/// page whatever the number of objects.
///
/// An SQLite store reads each page by key with the predicate evaluated in SQL (no list of every
/// key is made); stores that keep their objects in memory, and a predicate the store declines,
/// list the matching IDs once (evaluated in memory) and read them a page at a time. Pages come in
/// key order; without a predicate they hold every object of the entity (and of its subentities
/// when asked), saved objects only.
///
/// Threading: a value used by one thread at a time (``ObjectRecordReadAhead`` reads it on a
/// thread of its own); the store it reads is thread-safe.
public struct ObjectRecordPages: Sendable {
    public let coordinator: PersistentStoreCoordinator
    public let entity: EntityID
    public let includingSubentities: Bool
    public let predicate: Predicate?
    public let pageSize: Int

    private enum Progress {
        case notStarted
        /// Pages read by key from the store; the last key read.
        case paged(after: PrimaryKey?)
        /// IDs listed once; the position of the next page.
        case listed([ObjectID], next: Int)
        case done
    }

    private var progress = Progress.notStarted
    private var store: any PersistentStore { coordinator.store }

    /// Reads the objects of `entity` that match `predicate` (all when nil), `pageSize` at a time
    /// (by default the coordinator's batch size).
    public init(
        coordinator: PersistentStoreCoordinator, entity: EntityID, includingSubentities: Bool = true,
        matching predicate: Predicate? = nil, pageSize: Int? = nil
    ) {
        self.coordinator = coordinator
        self.entity = entity
        self.includingSubentities = includingSubentities
        self.predicate = predicate
        self.pageSize = max(1, pageSize ?? coordinator.configuration.batchSize)
    }

    /// The next page of records, by key; nil when every object was read.
    ///
    /// - Throws: what reading the store throws, and what evaluating the predicate throws (see
    ///   ``PredicateEvaluator``).
    public mutating func next() throws(ObjectGraphError) -> [ObjectRecord]? {
        let snapshots: [Snapshot]
        switch progress {
        case .done:
            return nil
        case .notStarted:
            guard entity.rawValue >= 1, entity.rawValue <= coordinator.model.entities.count else {
                throw ObjectGraphError(.notFound, "\(entity) is not an entity of the model")
            }
            if let page = try store.snapshots(
                of: entity, includingSubentities: includingSubentities, matching: predicate, after: nil, limit: pageSize
            ) {
                snapshots = page
                progress = page.count < pageSize ? .done : .paged(after: page.last?.objectID.key)
            } else {
                let context = coordinator.newContext()
                let ids =
                    if let predicate {
                        try context.objects(matching: predicate, of: entity, includingSubentities: includingSubentities)
                    } else {
                        try context.objectIDs(of: entity, includingSubentities: includingSubentities)
                    }
                progress = .listed(ids, next: 0)
                return try next()
            }
        case .paged(let after):
            guard
                let page = try store.snapshots(
                    of: entity, includingSubentities: includingSubentities, matching: predicate, after: after,
                    limit: pageSize)
            else {
                throw ObjectGraphError(.unsupported, "the \(store.storeType) store stopped reading pages part-way")
            }
            snapshots = page
            progress = page.count < pageSize ? .done : .paged(after: page.last?.objectID.key)
        case .listed(let ids, let start):
            guard start < ids.count else {
                progress = .done
                return nil
            }
            let end = min(start + pageSize, ids.count)
            snapshots = try store.snapshots(for: Array(ids[start..<end]))
            progress = end < ids.count ? .listed(ids, next: end) : .done
        }
        if snapshots.isEmpty {
            progress = .done
            return nil
        }
        return try records(of: snapshots)
    }

    /// The snapshots with their to-many relationships, one store request per relationship.
    private func records(of snapshots: [Snapshot]) throws(ObjectGraphError) -> [ObjectRecord] {
        let model = coordinator.model
        // Sources by relationship name: a relationship an entity inherits is read for the
        // objects of every entity that has it at once.
        var sources: [String: [ObjectID]] = [:]
        var names: [EntityID: [String]] = [:]
        for snapshot in snapshots {
            let entity = snapshot.objectID.entity
            if names[entity] == nil {
                names[entity] = model[entity].persistentRelationships.filter(\.isToMany).map(\.name)
            }
            for name in names[entity] ?? [] { sources[name, default: []].append(snapshot.objectID) }
        }
        var lists: [String: [ObjectID: [ObjectID]]] = [:]
        for (name, ids) in sources.sorted(by: { $0.key < $1.key }) {
            guard let first = ids.first else { continue }
            lists[name] = try store.toManyDestinations(of: name, in: first.entity, for: ids)
        }
        return snapshots.map { snapshot in
            var toMany: [String: [ObjectID]] = [:]
            for name in names[snapshot.objectID.entity] ?? [] { toMany[name] = lists[name]?[snapshot.objectID] ?? [] }
            return ObjectRecord(snapshot: snapshot, toMany: toMany)
        }
    }
}
