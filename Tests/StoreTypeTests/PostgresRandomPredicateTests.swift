import Foundation
import ObjectGraph
import PostgresStore
import SQLiteStore
import TestSupport
import Testing

/// ``RandomPredicateTests`` against a real PostgreSQL server: random predicates (a new seed each
/// run, `STOREFS_PREDICATE_SEED=N` replays one) over the sample company changed at random and over
/// a real store migrated into PostgreSQL, each answered by the PostgreSQL store in one statement
/// and by ``PredicateEvaluator`` in memory; both give the same objects and count. Where
/// PostgreSQL's SQL cannot decide a comparison exactly (no Swift runs in the server), the
/// statement's answer holds every match and the engine reads those objects only.
@Suite struct PostgresRandomPredicateTests {
    let server: PostgresServer

    init() throws { server = try PostgresServer.shared() }

    @Test func randomSampleStoresAgreeWithMemory() throws {
        var random = SeededRandom(seed: RandomPredicateTests.seed ^ 0x5051)
        let url = server.url(schema: PostgresServer.uniqueSchema("predicates"))
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [PostgresStoreType()], model: SampleModel.make(),
            options: StoreOptions(createIfMissing: true))
        defer { coordinator.close() }
        let objects = Int.random(in: 3...6, using: &random) * 100
        try SampleGenerator(objectCount: objects, seed: random.next()).populate(coordinator.newContext())
        try RandomPredicateTests.scramble(coordinator.newContext(), &random, nul: false)
        let (evaluated, exact) = try RandomPredicateTests.compare(
            coordinator, predicates: 250, random: &random, label: "PostgreSQL sample store of \(objects) objects",
            exactOnly: false)
        print("PostgreSQL: \(exact) of \(evaluated) random predicates answered exactly in SQL")
        // Most forms are plain SQL: the widened answer is the exception, not the rule.
        #expect(exact * 2 >= evaluated, "only \(exact) of \(evaluated) predicates were exact in SQL")
    }

    /// A real app's store, migrated from SQLite into PostgreSQL with the model it carries.
    @Test func aCorpusStoreMigratedIntoPostgreSQLAgreesWithMemory() throws {
        let name = "magicalpanda_MagicalRecord_Recipes.sqlite"
        var random = SeededRandom(seed: RandomPredicateTests.seed ^ 0x7265)
        let copy = try StoreFixtures.corpusCopy(name)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let types: [any PersistentStoreType] = [SQLiteStoreType(), PostgresStoreType()]
        let url = server.url(schema: PostgresServer.uniqueSchema("corpuspredicates"))
        let source = try PersistentStoreCoordinator.open(at: copy, types: types, options: StoreOptions(readOnly: true))
        try source.migrate(to: url, type: PostgresStoreType())
        source.close()
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: types, options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        try RandomPredicateTests.compare(
            coordinator, predicates: 120, random: &random, label: "\(name) in PostgreSQL", exactOnly: false)
    }

    /// Forms PostgreSQL's plain SQL decides exactly: one statement, no object read.
    @Test(arguments: [
        "lastName == 'Doe'", "salary > 50000 AND level < 3", "department.name BEGINSWITH 'E'",
        "ANY projects.name != nil", "photo == nil", "manager.manager == nil", "employeeID IN {1, 2, 3, 5, 8, 13}",
        "NOT (lastName < 'M')", "department.employees.@count > 3"
    ])
    func plainFormsAreOneStatementWithoutFaults(_ text: String) throws {
        let url = server.url(schema: PostgresServer.uniqueSchema("plainpredicates"))
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [PostgresStoreType()], model: SampleModel.make(),
            options: StoreOptions(createIfMissing: true))
        defer { coordinator.close() }
        try SampleGenerator(objectCount: 200, seed: 11).populate(coordinator.newContext())
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        let predicate = try PredicateParser.parse(text)
        let inMemory = try coordinator.newContext().objects(matching: predicate, of: employee, strategy: .inMemory)
        let context = coordinator.newContext()
        let before = coordinator.store.requestCount
        let inSQL = try context.objects(matching: predicate, of: employee, strategy: .store)
        #expect(inSQL == inMemory, "\(text): SQL \(inSQL.count), memory \(inMemory.count)")
        #expect(
            coordinator.store.requestCount - before == 1 && context.faultsFired == 0, "\(text): one query, no fault")
        let countBefore = coordinator.store.requestCount
        #expect(try context.count(matching: predicate, of: employee, strategy: .store) == inMemory.count)
        #expect(coordinator.store.requestCount - countBefore == 1, "\(text): counted in one statement")
    }
}
