import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// SQL against the reference evaluation: random predicates over random stores (the sample
/// company, changed at random) and real stores of the corpus, each evaluated by the SQLite store
/// in SQL and by ``PredicateEvaluator`` in memory on every object of the entity; both must give
/// the same objects. The SQL side must answer in one query without reading an object (no fault
/// fires), also for its count.
///
/// The seed is printed with every failure; `STOREFS_PREDICATE_SEED=N` replays it.
@Suite struct RandomPredicateTests {
    static let seed: UInt64 = {
        if let text = ProcessInfo.processInfo.environment["STOREFS_PREDICATE_SEED"], let seed = UInt64(text) {
            return seed
        }
        return UInt64.random(in: 1...UInt64(UInt32.max))
    }()

    @Test func randomSampleStoresAgreeWithMemory() throws {
        var random = SeededRandom(seed: Self.seed)
        let url = try ScratchSpace.folder("random-predicates").appendingPathComponent("Company.sqlite")
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true)
        )
        defer { coordinator.close() }
        let objects = Int.random(in: 3...8, using: &random) * 100
        try SampleGenerator(objectCount: objects, seed: random.next()).populate(coordinator.newContext())
        try Self.scramble(coordinator.newContext(), &random)
        try Self.compare(coordinator, predicates: 300, random: &random, label: "sample store of \(objects) objects")
    }

    /// Forms random runs found declined in SQL, kept as fixed cases: externally stored bytes
    /// compared with nil, through to-one and to-many steps.
    @Test(arguments: [
        "photo == nil", "photo != nil", "department.employees.photo == nil", "ANY department.employees.photo != nil",
        "manager.photo == nil"
    ])
    func externallyStoredBytesComparedWithNilAreAnsweredInSQL(_ text: String) throws {
        let url = try ScratchSpace.folder("nil-photos").appendingPathComponent("Company.sqlite")
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true)
        )
        defer { coordinator.close() }
        try SampleGenerator(objectCount: 300, seed: 7).populate(coordinator.newContext())
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        let predicate = try PredicateParser.parse(text)
        let inMemory = try coordinator.newContext().objects(matching: predicate, of: employee, strategy: .inMemory)
        let context = coordinator.newContext()
        let before = coordinator.store.requestCount
        let inSQL = try context.objects(matching: predicate, of: employee, strategy: .store)
        #expect(inSQL == inMemory, "\(text): SQL \(inSQL.count), memory \(inMemory.count)")
        #expect(
            coordinator.store.requestCount - before == 1 && context.faultsFired == 0, "\(text): one query, no fault")
    }

    /// Real stores with the models they carry (Z_MODELCACHE), fewer predicates where an entity
    /// has thousands of objects (every predicate is evaluated in memory on each of them).
    @Test(arguments: [
        ("magicalpanda_MagicalRecord_Recipes.sqlite", 150), ("alemar11_CoreDataPlus_SampleModel2_V1.sqlite", 60),
        ("RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite", 150),
        ("RhetTbull_merge_photos_libraries_Photos.sqlite", 150)
    ])
    func corpusStoresAgreeWithMemory(_ name: String, _ predicates: Int) throws {
        var random = SeededRandom(seed: Self.seed ^ UInt64(name.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        let url = try StoreFixtures.corpusCopy(name)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        try Self.compare(coordinator, predicates: predicates, random: &random, label: name)
    }

    // MARK: - Comparing

    /// `exactOnly`: the store answers every predicate exactly in SQL (SQLite, whose SQL runs the
    /// evaluator's comparisons).
    @discardableResult
    static func compare(
        _ coordinator: PersistentStoreCoordinator, predicates count: Int, random: inout SeededRandom, label: String,
        exactOnly: Bool = true
    ) throws -> (evaluated: Int, exact: Int) {
        let model = coordinator.model
        let started = Date()
        var sqlTime = 0.0
        defer {
            if ProcessInfo.processInfo.environment["STOREFS_PREDICATE_TRACE"] != nil {
                print("\(label): \(count) predicates in \(Date().timeIntervalSince(started)) s, SQL \(sqlTime) s")
            }
        }
        let values = try sampledValues(coordinator)
        var generator = PredicateGenerator(model: model, values: values, random: random)
        let reference = coordinator.newContext()
        var selective = 0
        var evaluated = 0
        var exact = 0
        // Entities with a few objects at least (one with none selects nothing whatever the
        // predicate, one with one object all or nothing).
        let counts = try Dictionary(
            uniqueKeysWithValues: model.entities.map {
                ($0.id, try reference.objectIDs(of: $0.id, includingSubentities: true).count)
            })
        let entities = model.entities.filter { (counts[$0.id] ?? 0) >= 3 }
        try #require(!entities.isEmpty, "\(label) has entities with objects")
        for index in 0..<count {
            let entity = generator.random.pick(entities).id
            let predicate = generator.predicate(for: entity)
            let name = "seed \(seed), \(label), #\(index): \(model[entity].name) where \(predicate)"
            try PredicateChecker.check(predicate, for: entity, in: model)
            #expect(try PredicateParser.parse(predicate.description) == predicate, "round trip: \(name)")

            let inMemory: [ObjectID]
            do {
                inMemory = try reference.objects(matching: predicate, of: entity, strategy: .inMemory)
            } catch {
                Issue.record("the evaluator failed: \(error): \(name)")
                continue
            }
            evaluated += 1
            // A fresh context: anything it reads from the store is a fault it fires.
            let context = coordinator.newContext()
            let before = coordinator.store.requestCount
            let sqlStarted = Date()
            defer {
                let spent = Date().timeIntervalSince(sqlStarted)
                sqlTime += spent
                if spent > 0.5, ProcessInfo.processInfo.environment["STOREFS_PREDICATE_TRACE"] != nil {
                    print("slow (\(spent) s): \(name)")
                }
            }
            let inSQL: [ObjectID]
            do {
                inSQL = try context.objects(matching: predicate, of: entity, strategy: .store)
            } catch {
                Issue.record("SQL failed: \(error): \(name)")
                continue
            }
            let queries = coordinator.store.requestCount - before
            let faults = context.faultsFired
            let counted = try context.count(matching: predicate, of: entity, strategy: .store)
            #expect(inSQL == inMemory, "SQL \(inSQL.count) objects, memory \(inMemory.count): \(name)")
            #expect(counted == inMemory.count, "count \(counted): \(name)")
            // What the store's one statement answers: exactly the matches, or (an engine that
            // cannot run the evaluator's comparisons in SQL) a superset the engine decides.
            let candidates = try #require(
                try coordinator.store.candidates(matching: predicate, of: entity, includingSubentities: true),
                "the store declined: \(name)")
            #expect(Set(inMemory).isSubset(of: Set(candidates.ids)), "every match is a candidate: \(name)")
            if candidates.exact {
                exact += 1
                // One query; an integer @sum beyond Int64 makes the engine fail it, and it runs
                // again with the evaluator's sum.
                #expect(
                    queries == 1 || (queries == 2 && "\(predicate)".contains("@sum")), "\(queries) queries: \(name)")
                #expect(faults == 0, "SQL read objects: \(name)")
            } else {
                #expect(!exactOnly, "SQLite answers every predicate exactly: \(name)")
                // The engine reads the candidates, and no other object.
                #expect(faults <= candidates.ids.count, "\(faults) faults, \(candidates.ids.count) candidates: \(name)")
            }
            if !inMemory.isEmpty && inMemory.count < (counts[entity] ?? 0) { selective += 1 }
            if ProcessInfo.processInfo.environment["STOREFS_PREDICATE_TRACE"] != nil {
                print("\(inMemory.count)/\(counts[entity] ?? 0): \(name)")
            }
        }
        // The predicates mean something: many select some objects and not all (real stores
        // leave many attributes nil, so fewer do there).
        #expect(
            selective * 8 >= evaluated, "only \(selective) of \(evaluated) predicates selected some but not all objects"
        )
        random = generator.random
        return (evaluated, exact)
    }

    /// Up to 40 values of each attribute per entity (and its ancestors, for key paths that start
    /// there), read a page of records per entity.
    static func sampledValues(_ coordinator: PersistentStoreCoordinator) throws -> [EntityID: [String:
        [AttributeValue]]]
    {
        let model = coordinator.model
        var values: [EntityID: [String: [AttributeValue]]] = [:]
        for entity in model.entities {
            var pages = ObjectRecordPages(
                coordinator: coordinator, entity: entity.id, includingSubentities: false, pageSize: 200)
            guard let page = try pages.next() else { continue }
            var owners: [EntityID] = [entity.id]
            while let parent = model[owners.last!].parentID { owners.append(parent) }
            for record in page {
                for (name, value) in record.attributes {
                    for owner in owners where (values[owner]?[name]?.count ?? 0) < 40 {
                        values[owner, default: [:]][name, default: []].append(value)
                    }
                }
            }
        }
        return values
    }

    // MARK: - A random store

    /// Changes the sample at random where predicates are most likely to go wrong: nil values,
    /// strings with accents, case, wildcards and NULs, extreme numbers (sums past Int64), cleared
    /// to-one relationships (nil in the middle of a key path), deleted objects.
    ///
    /// `nul`: strings may hold a NUL (PostgreSQL's text cannot).
    static func scramble(_ context: ObjectContext, _ random: inout SeededRandom, nul: Bool = true) throws {
        let model = context.model
        let employee = try #require(model.entityID(named: "Employee"))
        let project = try #require(model.entityID(named: "Project"))
        let department = try #require(model.entityID(named: "Department"))
        let names = [
            "Émile", "ÉMILE", "emile", "Zoë", "a*b?c", "O'Brien", nul ? "Ça\u{0}va" : "Ça va", "  spaced ", "Łukasz",
            "ß", "x"
        ]
        for id in try context.objectIDs(of: employee, includingSubentities: true) where random.chance(0.2) {
            try context.setValue(.string(random.pick(names)), of: "lastName", for: id)
            if random.chance(0.3) {
                try context.setValue(.string(random.chance(0.5) ? "" : random.pick(names)), of: "firstName", for: id)
            }
            for attribute in [
                "birthDate", "salary", "rating", "hoursPerWeek", "homepage", "personID", "badgeNumber", "level"
            ]
            where random.chance(0.25) {
                try context.setValue(nil, of: attribute, for: id)
            }
            if random.chance(0.1) {
                try context.setValue(.integer(random.chance(0.5) ? Int64.max : Int64.min), of: "badgeNumber", for: id)
            }
            if random.chance(0.1) { try context.setValue(.double(-0.0), of: "hoursPerWeek", for: id) }
            if random.chance(0.15) { try context.setDestination(nil, of: "department", for: id) }
            if random.chance(0.15) { try context.setDestination(nil, of: "manager", for: id) }
        }
        for id in try context.objectIDs(of: department) where random.chance(0.3) {
            try context.setValue(nil, of: random.pick(["budget", "founded", "code"]), for: id)
        }
        for id in try context.objectIDs(of: project) where random.chance(0.1) {
            try context.delete(id)
        }
        try context.save()
    }
}
