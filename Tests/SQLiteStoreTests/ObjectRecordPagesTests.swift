import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Reading many objects from an SQLite store a page at a time (what `storefs export` and `diff`
/// do): pages by key, filtered in SQL, each a fixed number of queries, with exactly the records a
/// context reads object by object.
@Suite struct ObjectRecordPagesTests {
    static func sampleStore(objects: Int) throws -> PersistentStoreCoordinator {
        let url = try ScratchSpace.folder("record-pages").appendingPathComponent("Company.sqlite")
        let writer = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true)
        )
        try SampleGenerator(objectCount: objects).populate(writer.newContext())
        writer.close()
        return try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
    }

    @Test func pagesCostAQueryForTheRowsAndOnePerToManyRelationship() throws {
        let coordinator = try Self.sampleStore(objects: 1000)
        defer { coordinator.close() }
        let model = coordinator.model
        let employee = try #require(model.entityID(named: "Employee"))
        let predicate = try PredicateParser.parse("level > 3 AND (ANY projects.isActive == YES OR isRemote == YES)")
        try PredicateChecker.check(predicate, for: employee, in: model)
        let expected = try coordinator.newContext().objects(matching: predicate, of: employee, strategy: .inMemory)
        try #require(expected.count > 300)

        var pages = ObjectRecordPages(coordinator: coordinator, entity: employee, matching: predicate, pageSize: 128)
        var read: [ObjectRecord] = []
        var before = coordinator.store.requestCount
        while let page = try pages.next() {
            let queries = coordinator.store.requestCount - before
            // Rows (filtered in SQL), then projects (Employee and Manager have it) and, when a
            // manager is on the page, directReports.
            let relationships = page.contains { $0.objectID.entity == model.entityID(named: "Manager") } ? 2 : 1
            #expect(
                queries == 1 + relationships,
                "\(queries) queries for a page of \(page.count): \(Set(page.map { model[$0.objectID.entity].name }))")
            #expect(page.count <= 128)
            read += page
            before = coordinator.store.requestCount
        }
        #expect(read.map(\.objectID) == expected, "by key, the objects the evaluator selects")
        #expect(read.contains { $0.objectID.entity == model.entityID(named: "Manager") }, "subentities' objects too")
        #expect(read == (try coordinator.newContext().records(for: expected)), "the records a context reads")
    }

    @Test func withoutAPredicateEveryObjectOfTheEntityOnce() throws {
        let coordinator = try Self.sampleStore(objects: 500)
        defer { coordinator.close() }
        let model = coordinator.model
        for entity in model.entities {
            for subentities in [false, true] {
                var pages = ObjectRecordPages(
                    coordinator: coordinator, entity: entity.id, includingSubentities: subentities, pageSize: 97)
                var ids: [ObjectID] = []
                while let page = try pages.next() { ids += page.map(\.objectID) }
                #expect(
                    ids == (try coordinator.newContext().objectIDs(of: entity.id, includingSubentities: subentities)),
                    "\(entity.name), subentities \(subentities)")
            }
        }
    }

    @Test func countingReadsNoRow() throws {
        let coordinator = try Self.sampleStore(objects: 500)
        defer { coordinator.close() }
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        let context = coordinator.newContext()
        for text in ["isRemote == YES", "department.employees.@avg.salary > salary", "TRUEPREDICATE", "FALSEPREDICATE"]
        {
            let predicate = try PredicateParser.parse(text)
            let before = coordinator.store.requestCount
            let counted = try context.count(matching: predicate, of: employee, strategy: .store)
            #expect(coordinator.store.requestCount == before + 1, "one COUNT query: \(text)")
            #expect(context.faultsFired == 0)
            #expect(
                counted
                    == (try coordinator.newContext().objects(matching: predicate, of: employee, strategy: .inMemory)
                        .count))
        }
    }
}
