import Foundation
import GRDB
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

    @Test func readingAheadGivesThePagesReadingInTurnGives() throws {
        let coordinator = try Self.sampleStore(objects: 700)
        defer { coordinator.close() }
        for entity in coordinator.model.entities {
            var pages = ObjectRecordPages(coordinator: coordinator, entity: entity.id, pageSize: 61)
            var expected: [[ObjectRecord]] = []
            while let page = try pages.next() { expected.append(page) }
            let ahead = ObjectRecordReadAhead(
                ObjectRecordPages(coordinator: coordinator, entity: entity.id, pageSize: 61), depth: 2)
            var read: [[ObjectRecord]] = []
            while let page = try ahead.next() { read.append(page) }
            #expect(read == expected, "\(entity.name): the same pages, in order")
            #expect(try ahead.next() == nil, "and nil again after the last")
        }
        // A reader let go of part-way ends its threads (they wait for room and must see the stop).
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        for _ in 0..<20 {
            let ahead = ObjectRecordReadAhead(
                ObjectRecordPages(coordinator: coordinator, entity: employee, pageSize: 10), depth: 1)
            _ = try ahead.next()
        }
    }

    @Test func aDamagedRowReachesTheReaderAfterThePagesBeforeIt() throws {
        let url = try ScratchSpace.folder("record-pages-damaged").appendingPathComponent("Company.sqlite")
        let writer = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true)
        )
        try SampleGenerator(objectCount: 400).populate(writer.newContext())
        writer.close()
        // An Integer 16 attribute holding what no Integer 16 holds, in the middle of the table.
        let keys = try DatabaseQueue(path: url.path).write { db in
            let keys = try Int64.fetchAll(db, sql: "SELECT Z_PK FROM ZPERSON ORDER BY Z_PK")
            try db.execute(
                sql: "UPDATE ZPERSON SET ZLEVEL = 99999999 WHERE Z_PK = ?", arguments: [keys[keys.count / 2]])
            return keys
        }
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        let person = try #require(coordinator.model.entityID(named: "Person"))
        let ahead = ObjectRecordReadAhead(ObjectRecordPages(coordinator: coordinator, entity: person, pageSize: 16))
        var read = 0
        var failure: ObjectGraphError?
        do throws(ObjectGraphError) {
            while let page = try ahead.next() { read += page.count }
        } catch {
            failure = error
        }
        let error = try #require(failure, "the damaged row is an error, not a short export")
        #expect(error.code == .corruptStore)
        #expect(error.message.contains("99999999"), "\(error.message)")
        #expect(read == keys.count / 2 / 16 * 16, "every page before the damaged row's, none after")
        #expect(throws: ObjectGraphError.self, "and the error again on the next call") { try ahead.next() }
    }

    /// The lists of a to-many relationship for sources in any order, repeated, dense (one range)
    /// or sparse (listed keys): those the context reads one object at a time, in the sources' order.
    @Test func toManyListsFollowTheSourcesWhateverTheirOrder() throws {
        let coordinator = try Self.sampleStore(objects: 600)
        defer { coordinator.close() }
        let model = coordinator.model
        let context = coordinator.newContext()
        let cases: [(entity: String, relationship: String)] = [
            ("Department", "employees"), ("Employee", "projects"), ("Project", "members"), ("Manager", "directReports")
        ]
        for (entityName, relationship) in cases {
            let entity = try #require(model.entityID(named: entityName), "\(entityName)")
            let ids = try context.objectIDs(of: entity, includingSubentities: true)
            try #require(ids.count >= 4, "\(entityName) has objects to read")
            var generator = SeededRandom(seed: 26)
            let orders: [(String, [ObjectID])] = [
                ("by key", ids),
                ("shuffled", ids.shuffled(using: &generator)),
                ("repeated", ids + ids.prefix(5) + [ids[0]]),
                ("sparse", stride(from: 0, to: ids.count, by: 7).map { ids[$0] }),
                ("one", [ids[ids.count / 2]])
            ]
            for (name, sources) in orders {
                let lists = try coordinator.store.toManyDestinationLists(of: relationship, in: entity, for: sources)
                let expected = try sources.map { try context.destinations(of: relationship, for: $0) }
                #expect(lists == expected, "\(entityName).\(relationship), sources \(name)")
                let dictionary = try coordinator.store.toManyDestinations(of: relationship, in: entity, for: sources)
                #expect(Set(dictionary.keys) == Set(sources), "\(entityName).\(relationship), sources \(name)")
                for (source, list) in zip(sources, lists) { #expect(dictionary[source] == list) }
            }
        }
    }

    /// Two sibling entities each declare a to-many relationship of the same name: a page holding
    /// objects of both reads each one's own lists (one request per relationship, not per name).
    @Test func siblingsRelationshipsOfOneNameAreReadApart() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Shape", attributes: [AttributeDescription(name: "label", type: .string)]),
            EntityDescription(
                name: "Square", parentName: "Shape",
                relationships: [
                    RelationshipDescription(
                        name: "marks", destinationEntityName: "Mark", inverseName: "square", isToMany: true)
                ]),
            EntityDescription(
                name: "Circle", parentName: "Shape",
                relationships: [
                    RelationshipDescription(
                        name: "marks", destinationEntityName: "Mark", inverseName: "circle", isToMany: true,
                        isOrdered: true)
                ]),
            EntityDescription(
                name: "Mark", attributes: [AttributeDescription(name: "n", type: .integer64)],
                relationships: [
                    RelationshipDescription(name: "square", destinationEntityName: "Square", inverseName: "marks"),
                    RelationshipDescription(name: "circle", destinationEntityName: "Circle", inverseName: "marks")
                ])
        ])
        let url = try ScratchSpace.folder("record-pages-siblings").appendingPathComponent("Shapes.sqlite")
        let writer = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: model, options: StoreOptions(createIfMissing: true))
        let square = try #require(model.entityID(named: "Square"))
        let circle = try #require(model.entityID(named: "Circle"))
        let mark = try #require(model.entityID(named: "Mark"))
        let context = writer.newContext()
        for index in 0..<12 {
            let shape = try context.insertObject(of: index % 2 == 0 ? square : circle)
            let marks = try context.insertObjects(of: mark, count: index % 4 + 1)
            try context.setDestinations(index % 4 == 1 ? marks.reversed() : marks, of: "marks", for: shape)
        }
        try context.save()
        writer.close()

        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        let shape = try #require(coordinator.model.entityID(named: "Shape"))
        var pages = ObjectRecordPages(coordinator: coordinator, entity: shape, pageSize: 100)
        let before = coordinator.store.requestCount
        let page = try #require(try pages.next())
        #expect(coordinator.store.requestCount - before == 3, "the rows, then each entity's marks")
        #expect(page.count == 12)
        let reader = coordinator.newContext()
        for record in page {
            let expected = try reader.destinations(of: "marks", for: record.objectID)
            #expect(expected.count >= 1)
            #expect(record.toMany["marks"] == expected, "\(record.objectID)")
        }
    }
}
