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
/// Threading: a value used by one thread at a time (``ObjectRecordReadAhead`` reads its pages of
/// rows on one thread and their relationships, ``records(of:)``, on another); the store it reads
/// is thread-safe.
public struct ObjectRecordPages: Sendable {
    public let coordinator: PersistentStoreCoordinator
    public let entity: EntityID
    public let includingSubentities: Bool
    public let predicate: Predicate?
    public let pageSize: Int
    /// What evaluating `predicate` may cost: each page read by key is bounded by these limits on
    /// its own (a hostile predicate stops on the first page), a predicate listed in memory once
    /// for all of them. Unbounded unless set.
    public var queryLimits = QueryLimits.unbounded
    /// The predicate as its messages name it ("--where level > 5").
    public var querySubject = "the predicate"

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
        guard let snapshots = try nextSnapshots() else { return nil }
        return try records(of: snapshots)
    }

    /// The next page's snapshots, without their to-many relationships (``records(of:)`` adds
    /// them); nil when every object was read. Never an empty page.
    ///
    /// ``ObjectRecordReadAhead`` reads these and their relationships on two threads.
    public mutating func nextSnapshots() throws(ObjectGraphError) -> [Snapshot]? {
        let snapshots: [Snapshot]
        switch progress {
        case .done:
            return nil
        case .notStarted:
            guard entity.rawValue >= 1, entity.rawValue <= coordinator.model.entities.count else {
                throw ObjectGraphError(.notFound, "\(entity) is not an entity of the model")
            }
            if let page = try bounded({ () throws(ObjectGraphError) in
                try store.snapshots(
                    of: entity, includingSubentities: includingSubentities, matching: predicate, after: nil,
                    limit: pageSize)
            }) {
                snapshots = page
                progress = page.count < pageSize ? .done : .paged(after: page.last?.objectID.key)
            } else {
                let context = coordinator.newContext()
                let ids =
                    if let predicate {
                        try bounded { () throws(ObjectGraphError) in
                            try context.objects(
                                matching: predicate, of: entity, includingSubentities: includingSubentities)
                        }
                    } else {
                        try context.objectIDs(of: entity, includingSubentities: includingSubentities)
                    }
                progress = .listed(ids, next: 0)
                return try nextSnapshots()
            }
        case .paged(let after):
            guard
                let page = try bounded({ () throws(ObjectGraphError) in
                    try store.snapshots(
                        of: entity, includingSubentities: includingSubentities, matching: predicate, after: after,
                        limit: pageSize)
                })
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
        return snapshots
    }

    /// `body`, an evaluation of the predicate, under a budget of ``queryLimits`` (none without a
    /// predicate: reading every object is what was asked).
    private func bounded<T>(_ body: () throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        guard predicate != nil, queryLimits != .unbounded else { return try body() }
        return try QueryBudget(limits: queryLimits, subject: querySubject).run(body)
    }

    /// The snapshots with their to-many relationships, one store request per relationship.
    ///
    /// Threading: reads the store only; call from any thread.
    public func records(of snapshots: [Snapshot]) throws(ObjectGraphError) -> [ObjectRecord] {
        let model = coordinator.model
        // Each entity's to-many relationships, worked out once per page: the slot of each in its
        // records' values (shared by all of them), and which reading below gathers it.
        struct Layout {
            var names: PropertyNames
            var slots: [Int]
            var readings: [Int]
        }
        // One reading per relationship: the objects (and where their records are) whose lists
        // of it are read in one request; a relationship an entity inherits is read for the
        // objects of every entity that has it at once.
        struct Reading {
            var name: String
            /// The entity that declares it: sibling entities' relationships of one name are two.
            var declaring: EntityID
            var ids: [ObjectID] = []
            var places: [Int] = []
            var slots: [Int] = []
        }
        var layouts: [EntityID: Layout] = [:]
        var readings: [Reading] = []
        var readingOf: [String: [EntityID: Int]] = [:]
        var records: [ObjectRecord] = []
        records.reserveCapacity(snapshots.count)
        var last: (entity: EntityID, layout: Layout)?
        for snapshot in snapshots {
            let entity = snapshot.objectID.entity
            // Pages are mostly one entity's rows: the last one's layout saves a lookup per row.
            if last?.entity != entity {
                if let known = layouts[entity] {
                    last = (entity, known)
                } else {
                    let names = model[entity].persistentRelationships.filter(\.isToMany).map(\.name)
                    let (list, slots) = PropertyNames.slotted(names)
                    let layout = Layout(
                        names: list, slots: slots,
                        readings: names.map { name in
                            let declaring = declaringEntity(of: name, from: entity)
                            if let known = readingOf[name]?[declaring] { return known }
                            readings.append(Reading(name: name, declaring: declaring))
                            readingOf[name, default: [:]][declaring] = readings.count - 1
                            return readings.count - 1
                        })
                    layouts[entity] = layout
                    last = (entity, layout)
                }
            }
            guard let layout = last?.layout else { continue }
            // Every record holds every to-many relationship of its entity, empty ones included.
            var toMany = PropertyValues<[ObjectID]>(layout: layout.names)
            for slot in layout.slots { toMany.setValue([], slot: slot) }
            for (reading, slot) in zip(layout.readings, layout.slots) {
                readings[reading].ids.append(snapshot.objectID)
                readings[reading].places.append(records.count)
                readings[reading].slots.append(slot)
            }
            records.append(ObjectRecord(snapshot: snapshot, toMany: toMany))
        }
        for reading in readings.sorted(by: { ($0.name, $0.declaring.rawValue) < ($1.name, $1.declaring.rawValue) }) {
            guard let first = reading.ids.first else { continue }
            let lists = try store.toManyDestinationLists(of: reading.name, in: first.entity, for: reading.ids)
            guard lists.count == reading.ids.count else {
                throw ObjectGraphError(
                    .corruptStore,
                    "the store gave \(lists.count) lists of \(reading.name) for \(reading.ids.count) objects")
            }
            for (index, list) in lists.enumerated() {
                records[reading.places[index]].toMany.setValue(list, slot: reading.slots[index])
            }
        }
        return records
    }

    /// The entity that declares relationship `name` of `entity`: its highest ancestor that has
    /// it (a subentity inherits its ancestors' properties and cannot declare one of theirs again).
    private func declaringEntity(of name: String, from entity: EntityID) -> EntityID {
        let model = coordinator.model
        var declaring = entity
        var steps = 0
        // Bounded by the number of entities: a model's parents form no cycle, and this never
        // trusts that they do not.
        while steps < model.entities.count, let parent = model[declaring].parentID,
            model[parent].persistentRelationships.contains(where: { $0.name == name })
        {
            declaring = parent
            steps += 1
        }
        return declaring
    }
}
