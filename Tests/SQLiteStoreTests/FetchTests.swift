import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

// Foundation has its own `Predicate`; this name picks ObjectGraph's.
private typealias OGPredicate = ObjectGraph.Predicate

// MARK: - The sample stores

/// The sample company (2,000 objects) in an SQLite file and in an in-memory store, with the
/// changes PredicateTests makes so every string option has something to tell apart: accented and
/// upper-case last names, and a department with nothing in it.
private struct FetchFixture: Sendable {
    let url: URL
    let memory: PersistentStoreCoordinator
    /// Kept open so that the file stays in WAL mode with its -wal and -shm files: tests open and
    /// close their own coordinators, and the last close would checkpoint under their feet.
    let keeper: PersistentStoreCoordinator
    /// Opening and closing take SQLite's write lock briefly; tests running in parallel take turns.
    let gate = NSLock()

    init() throws {
        // Shared by the whole suite, so it lives until the test process exits.
        url = try ScratchSpace.folder("fetch").appendingPathComponent("Company.sqlite")
        let sqlite = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true)
        )
        try Self.fill(sqlite.newContext())
        keeper = sqlite
        memory = PersistentStoreCoordinator(store: GraphStore(model: SampleModel.make()))
        try Self.fill(memory.newContext())
    }

    private static func fill(_ context: ObjectContext) throws {
        try SampleGenerator(objectCount: 2_000).populate(context)
        let model = context.model
        for id in try context.objectIDs(of: model.entityID(named: "Employee")!, includingSubentities: true) {
            guard case .string(let last)? = try context.value(of: "lastName", for: id) else { continue }
            switch id.key.rawValue % 5 {
            case 0:
                try context.setValue(.string(last.replacingOccurrences(of: "e", with: "é")), of: "lastName", for: id)
            case 1: try context.setValue(.string(last.uppercased()), of: "lastName", for: id)
            default: break
            }
        }
        let empty = try context.insertObject(of: model.entityID(named: "Department")!)
        try context.setValue(.string("Émpty"), of: "name", for: empty)
        try context.save()
    }

    /// A read-only coordinator of its own on the SQLite file, so that its request count is this
    /// test's (read-only: tests run at once, and a store has one writer at a time).
    func openSQLite() throws -> PersistentStoreCoordinator {
        gate.lock()
        defer { gate.unlock() }
        return try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(readOnly: true))
    }

    func close(_ coordinator: PersistentStoreCoordinator) {
        gate.lock()
        defer { gate.unlock() }
        coordinator.close()
    }
}

private let sharedFetchFixture = Result<FetchFixture, any Error> { try FetchFixture() }

extension ManagedObjectModel {
    fileprivate func entity(_ name: String) -> EntityID { entityID(named: name)! }
}

/// One predicate over the sample; `sql` says whether the SQLite store must translate it.
private struct FetchRow: Sendable, CustomTestStringConvertible {
    enum Source: Sendable { case none, employee, department }

    let entity: String
    let predicate: String
    var source = Source.none
    var fetchedProperty: String?
    var variables: [String: AttributeValue] = [:]
    var mayBeEmpty = false
    var sql = true

    init(
        _ entity: String, _ predicate: String, source: Source = .none, fetchedProperty: String? = nil,
        variables: [String: AttributeValue] = [:], mayBeEmpty: Bool = false, sql: Bool = true
    ) {
        self.entity = entity
        self.predicate = predicate
        self.source = source
        self.fetchedProperty = fetchedProperty
        self.variables = variables
        self.mayBeEmpty = mayBeEmpty
        self.sql = sql
    }

    var testDescription: String {
        "\(entity): \(predicate.count > 120 ? predicate.prefix(100) + "… (\(predicate.count) characters)" : predicate)"
    }

    func source(in context: ObjectContext) throws -> ObjectID? {
        switch source {
        case .none: nil
        case .employee: try context.objectIDs(of: context.model.entity("Employee"))[4]
        case .department: try context.objectIDs(of: context.model.entity("Department"))[2]
        }
    }

    func fetched(in model: ManagedObjectModel) -> FetchedPropertyDescription? {
        guard let fetchedProperty else { return nil }
        let parts = fetchedProperty.split(separator: ".").map(String.init)
        return model.entity(named: parts[0])?.fetchedProperty(named: parts[1])
    }

    /// The objects the row selects with `strategy`.
    func objects(_ context: ObjectContext, _ strategy: FetchStrategy) throws -> [ObjectID] {
        try context.objects(
            matching: PredicateParser.parse(predicate), of: context.model.entity(entity), source: source(in: context),
            fetchedProperty: fetched(in: context.model), variables: variables, strategy: strategy)
    }
}

private let fetchRows: [FetchRow] =
    [
        FetchRow("Employee", "level == 5"),
        FetchRow("Employee", "level = 5"),
        FetchRow("Employee", "level != 5"),
        FetchRow("Employee", "level <> 5"),
        FetchRow("Employee", "level < 3"),
        FetchRow("Employee", "level <= 3"),
        FetchRow("Employee", "level =< 3"),
        FetchRow("Employee", "level > 8"),
        FetchRow("Employee", "level >= 8"),
        FetchRow("Employee", "level => 8"),
        FetchRow("Employee", "badgeNumber > 4611686018427387904"),
        FetchRow("Employee", "badgeNumber > -1"),
        FetchRow("Employee", "salary > 100000"),
        FetchRow("Employee", "salary <= 75000.5"),
        FetchRow("Employee", "hoursPerWeek == 37.5"),
        FetchRow("Employee", "hoursPerWeek == 40"),
        FetchRow("Employee", "rating >= 2.5"),
        FetchRow("Employee", "level == 5.0"),
        FetchRow("Department", "budget > 500000"),
        FetchRow("Employee", "firstName == 'Ada'"),
        FetchRow("Employee", #"firstName == "Grace""#),
        FetchRow("Employee", "firstName ==[c] 'ada'"),
        FetchRow("Employee", "lastName == 'Hopper'"),
        FetchRow("Employee", "lastName ==[d] 'Hopper'"),
        FetchRow("Employee", "lastName ==[cd] 'HOPPÉR'"),
        FetchRow("Employee", "firstName < 'G'"),
        FetchRow("Employee", "lastName >=[c] 'turing'"),
        FetchRow("Employee", "firstName BEGINSWITH 'Gr'"),
        FetchRow("Employee", "firstName BEGINSWITH[c] 'gR'"),
        FetchRow("Employee", "lastName ENDSWITH 'son'"),
        FetchRow("Employee", "lastName CONTAINS 'pp'"),
        FetchRow("Employee", "lastName CONTAINS[c] 'PP'"),
        FetchRow("Employee", "lastName CONTAINS[d] 'lace'"),
        FetchRow("Employee", "lastName CONTAINS[cd] 'LACÉ'"),
        FetchRow("Employee", #"homepage CONTAINS "~ada.""#),
        FetchRow("Employee", "lastName == 'van Rossum'"),
        FetchRow("Employee", "firstName LIKE 'A*'"),
        FetchRow("Employee", "lastName LIKE '?o*'"),
        FetchRow("Employee", "lastName LIKE[c] '*SON'"),
        FetchRow("Employee", "lastName LIKE[cd] 'lov?lac?'"),
        FetchRow("Employee", "firstName MATCHES '[A-D].*'"),
        FetchRow("Employee", "lastName MATCHES[c] 'h.*r'"),
        FetchRow("Employee", "lastName MATCHES 'Ho|Hopper'"),
        FetchRow("Employee", "department.name BEGINSWITH 'Engineering'"),
        FetchRow("Employee", "department.code == 'D00003'"),
        FetchRow("Employee", "manager.firstName == 'Grace'"),
        FetchRow("Employee", "department.budget > 500000"),
        FetchRow("Employee", "manager.manager.firstName == nil"),
        FetchRow("Employee", "manager.level > 0"),
        FetchRow("Employee", "photo == nil"),
        FetchRow("Employee", "photo != nil"),
        FetchRow("Employee", "preferences = NULL"),
        FetchRow("Employee", "manager == nil"),
        FetchRow("Employee", "manager != nil AND manager.manager == nil"),
        FetchRow("Employee", "isRemote == YES"),
        FetchRow("Employee", "isRemote == 1"),
        FetchRow("Employee", "isRemote = TRUE"),
        FetchRow("Employee", "isRemote == NO"),
        FetchRow("Employee", "isRemote == 0"),
        FetchRow("Employee", "isRemote != false"),
        FetchRow("Project", "isActive == YES"),
        FetchRow("Milestone", "done == NO"),
        FetchRow("Employee", #"birthDate < CAST(-700000000, "NSDate")"#),
        FetchRow("Employee", "birthDate > -600000000"),
        FetchRow("Milestone", #"dueDate >= CAST(700000000.5, "NSDate")"#),
        FetchRow("Employee", #"birthDate BETWEEN {CAST(-900000000, "NSDate"), CAST(-500000000, "NSDate")}"#),
        FetchRow("Employee", "level BETWEEN {3, 5}"),
        FetchRow("Employee", "hoursPerWeek BETWEEN {32, 40}"),
        FetchRow("Employee", "firstName IN {'Ada', 'Grace', 'Alan'}"),
        FetchRow("Employee", "firstName IN[c] {'ada', 'GRACE'}"),
        FetchRow("Employee", "level IN {1, 2.0, 3}"),
        FetchRow("Project", "$FETCH_SOURCE IN members", source: .employee),
        FetchRow("Project", "members CONTAINS $FETCH_SOURCE", source: .employee),
        FetchRow("Employee", "ANY projects.name ENDSWITH '-1'"),
        FetchRow("Employee", "SOME projects.isActive == NO"),
        FetchRow("Employee", "projects.isActive == NO"),
        FetchRow("Employee", "ALL projects.isActive == YES"),
        FetchRow("Employee", "NONE projects.name ENDSWITH '-4'"),
        FetchRow("Department", "ALL projects.budget > 300000"),
        FetchRow("Department", "ANY employees.level == 10 AND ALL employees.level >= 1"),
        FetchRow("Employee", "ANY projects IN $FETCH_SOURCE.projects", source: .employee),
        FetchRow("Employee", "ALL projects.milestones.done == YES"),
        FetchRow("Employee", "projects.@count == 2"),
        FetchRow("Project", "members.@count > 20"),
        FetchRow("Department", "employees.@count == 0"),
        FetchRow("Department", "employees.@avg.level > 5.5"),
        FetchRow("Department", "employees.@sum.hoursPerWeek > 2920"),
        FetchRow("Department", "projects.@max.budget > 1100000"),
        FetchRow("Department", #"projects.@min.startDate < CAST(500000000, "NSDate")"#),
        FetchRow("Employee", "level > 5 AND isRemote == YES"),
        FetchRow("Employee", "level > 8 OR level < 2"),
        FetchRow("Employee", "NOT level > 5"),
        FetchRow("Employee", "!(level > 5) && isRemote == YES || firstName == 'Ada'"),
        FetchRow("Employee", "level > 5 AND (firstName == 'Ada' OR firstName == 'Alan')"),
        FetchRow("Employee", "level > 5 and not isRemote == yes or any projects.name endswith '-2'"),
        FetchRow("Employee", "TRUEPREDICATE"),
        FetchRow("Employee", "FALSEPREDICATE OR SELF.level == 3"),
        FetchRow("Employee", "FALSEPREDICATE", mayBeEmpty: true),
        FetchRow("Employee", "SELF == $FETCH_SOURCE", source: .employee),
        FetchRow("Employee", "department == $FETCH_SOURCE.department AND SELF != $FETCH_SOURCE", source: .employee),
        FetchRow(
            "Employee", "department == $FETCH_SOURCE AND salary > $FETCHED_PROPERTY.userInfo.threshold",
            source: .department, fetchedProperty: "Department.highEarners"),
        FetchRow(
            "Employee", "salary > $FETCHED_PROPERTY.userInfo.threshold", fetchedProperty: "Department.highEarners"),
        // Beyond the evaluator's table: modifiers on plain attributes, aggregates, strings read as
        // numbers, named variables, and what SQL leaves to memory.
        FetchRow("Employee", "ANY level > 5"),
        FetchRow("Employee", "ALL level > 5"),
        FetchRow("Employee", "NONE level > 5"),
        FetchRow("Employee", "badgeNumber > 4.6e18"),
        FetchRow("Employee", "salary > '100000'"),
        FetchRow("Employee", "salary > 'lots'", mayBeEmpty: true),
        FetchRow("Employee", "salary != 'lots'"),
        FetchRow("Employee", "personID != nil AND personID != 'not a uuid'"),
        FetchRow("Employee", "lastName CONTAINS ''", mayBeEmpty: true),
        FetchRow("Employee", "NOT lastName BEGINSWITH[cd] 'h'"),
        FetchRow("Employee", "firstName == $name", variables: ["name": .string("Ada")]),
        FetchRow(
            "Employee", "level > $minimum AND isRemote == $remote",
            variables: ["minimum": .integer(7), "remote": .boolean(true)]),
        FetchRow("Employee", "manager IN {$FETCH_SOURCE.manager, nil}", source: .employee),
        FetchRow("Employee", "department.head.title != nil"),
        FetchRow("Department", "name IN 'Sales 1, Engineering 8, Research 2'"),
        FetchRow("Department", "head == nil"),
        FetchRow("Department", "employees.@sum.level > 440"),
        FetchRow("Department", "employees.@max.salary > 179000"),
        FetchRow("Department", "employees.@min.lastName == 'ALLEN'"),
        FetchRow("Department", "projects.members.@count > 100"),
        FetchRow("Department", "ANY employees.lastName BEGINSWITH[cd] 'h'"),
        FetchRow("Department", "NONE employees.isRemote == YES"),
        FetchRow("Department", "SELF == $FETCH_SOURCE OR employees CONTAINS $FETCH_SOURCE", source: .department),
        FetchRow("Milestone", "project.department.employees.@count > 80"),
        FetchRow("Employee", "lastName == firstName", mayBeEmpty: true),
        FetchRow("Employee", "firstName == 5", mayBeEmpty: true),
        FetchRow("Department", "employees.@avg.salary > 100000"),
        // Through the evaluator's values inside SQLite: key path against key path, nil through a
        // to-one, lists, UUIDs, ISO dates.
        FetchRow("Employee", "department.employees.@avg.level < level"),
        FetchRow("Employee", "department.projects.budget > 1000000"),
        FetchRow("Employee", "department.projects.budget != 1000000"),
        FetchRow("Manager", "directReports.department == department"),
        FetchRow("Employee", "ANY projects.milestones.project.department == department"),
        FetchRow("Project", "members.department.head.title != nil"),
        FetchRow("Department", "employees.projects.@sum.budget > 50000000"),
        FetchRow("Department", "projects.@avg.budget > 500000"),
        FetchRow("Employee", "personID == personID"),
        FetchRow("Employee", "level IN {department.employees.@min.level, 3}"),
        FetchRow("Employee", #"birthDate > CAST("1975-06-01", "NSDate")"#),
        FetchRow(
            "Employee",
            #"birthDate BETWEEN {CAST("1960-01-01T00:00:00Z", "NSDate"), CAST("1970-12-31T23:59:59.5Z", "NSDate")}"#),
        // Left to memory: a MATCHES pattern read from each object may not be a regular expression.
        FetchRow("Employee", "firstName MATCHES lastName", mayBeEmpty: true, sql: false)
    ] + largeListRows

/// Large `IN` lists and long `OR`s (issue 34): one SQL `IN (…)` list per way of comparing and a
/// balanced tree of ORs in SQL, sets in memory; past what one statement can bind, memory alone.
private let largeListRows: [FetchRow] = {
    let ids = (0..<6000).map(String.init).joined(separator: ", ")
    let names = ["'Ada'", "'Grace'", "'Alan'", "'HOPPER'", "'Lovélace'", "'van Rossum'", "'nobody'"]
    let manyNames = (names + (0..<40).map { "'name \($0)'" }).joined(separator: ", ")
    let mixed = ["1", "2.0", "'3'", "'x'", "7.5", "YES", "nil", "-4611686018427387904"] + (20..<40).map(String.init)
    // 1,100 terms: past SQLite's expression depth of 1,000 as a chain, and cheap enough in memory
    // (each object is compared with every term).
    let ors = (0..<1100).map { "employeeID == \($0)" }.joined(separator: " OR ")
    let ands = (0..<1100).map { "employeeID != \($0 * 3)" }.joined(separator: " AND ")
    return [
        FetchRow("Employee", "employeeID IN {\(ids)}"),
        FetchRow("Employee", "NOT employeeID IN {\(ids)}", mayBeEmpty: true),
        FetchRow("Employee", "firstName IN {\(manyNames)}"),
        FetchRow("Employee", "lastName IN[c] {\(manyNames)}", mayBeEmpty: true),
        FetchRow("Employee", "level IN {\(mixed.joined(separator: ", "))}"),
        FetchRow("Employee", "hoursPerWeek IN {\((0..<60).map { "\(Double($0) / 2)" }.joined(separator: ", "))}"),
        FetchRow(
            "Employee", "salary IN {\((0..<400).map { "\(40000 + $0 * 250)" }.joined(separator: ", "))}",
            mayBeEmpty: true),
        FetchRow(
            "Employee", "ANY projects.name IN {\((0..<100).map { "'Project \($0)-1'" }.joined(separator: ", "))}",
            mayBeEmpty: true),
        FetchRow(
            "Employee",
            "ALL projects.milestones.done IN {\((0..<20).map { $0 % 2 == 0 ? "YES" : "7" }.joined(separator: ", "))}"),
        FetchRow("Employee", ors),
        FetchRow("Employee", ands),
        // 31,000 values: more than one statement binds; evaluated in memory, as a set.
        FetchRow("Employee", "employeeID IN {\((0..<31_000).map(String.init).joined(separator: ", "))}", sql: false)
    ]
}()

@Suite struct FetchTests {
    // MARK: - SQL and memory agree

    @Test(arguments: fetchRows)
    fileprivate func sqliteGivesTheObjectsMemoryGives(_ row: FetchRow) throws {
        let fixture = try sharedFetchFixture.get()
        let coordinator = try fixture.openSQLite()
        defer { fixture.close(coordinator) }
        let context = coordinator.newContext()
        let model = context.model
        let entity = model.entity(row.entity)
        let inMemory = try row.objects(context, .inMemory)

        if row.sql {
            let predicate = try PredicateParser.parse(row.predicate)
            let plain = try #require(
                try context.substitutingVariables(
                    in: predicate, source: row.source(in: context), fetchedProperty: row.fetched(in: model),
                    variables: row.variables))
            let before = coordinator.store.requestCount
            let answered = try coordinator.store.objectIDs(matching: plain, of: entity, includingSubentities: true)
            #expect(coordinator.store.requestCount == before + 1, "one SQL query")
            #expect(answered == inMemory, "SQL \(answered?.count ?? -1), memory \(inMemory.count)")
            #expect(try row.objects(context, .store) == inMemory)
        } else {
            #expect {
                try row.objects(context, .store)
            } throws: { error in
                (error as? ObjectGraphError)?.code == .unsupported
            }
        }
        #expect(try row.objects(context, .automatic) == inMemory)
        if !row.mayBeEmpty {
            #expect(!inMemory.isEmpty, "the row should select something to be meaningful")
        }
    }

    @Test(arguments: fetchRows)
    fileprivate func inMemoryStoreEvaluatesInMemory(_ row: FetchRow) throws {
        let fixture = try sharedFetchFixture.get()
        let context = fixture.memory.newContext()
        let inMemory = try row.objects(context, .inMemory)
        #expect(try row.objects(context, .automatic) == inMemory)
        #expect {
            try row.objects(context, .store)
        } throws: { error in
            (error as? ObjectGraphError)?.code == .unsupported
        }
        let coordinator = try fixture.openSQLite()
        defer { fixture.close(coordinator) }
        #expect(try row.objects(coordinator.newContext(), .inMemory).count == inMemory.count, "same sample, same count")
    }

    // MARK: - The sample model's fetched properties and template

    @Test func fetchedPropertiesAgreeForSeveralSources() throws {
        let fixture = try sharedFetchFixture.get()
        let coordinator = try fixture.openSQLite()
        defer { fixture.close(coordinator) }
        let context = coordinator.newContext()
        let model = context.model
        let employee = try #require(model.entity(named: "Employee"))
        let department = try #require(model.entity(named: "Department"))
        for (owner, name, step) in [(employee, "colleagues", 97), (department, "highEarners", 3)] {
            let property = try #require(owner.fetchedProperty(named: name))
            let predicate = try PredicateParser.parse(property.predicateString)
            let destination = model.entity(property.destinationEntityName)
            let sources = try context.objectIDs(of: owner.id, includingSubentities: true)
            var nonEmpty = 0
            for source in stride(from: 0, to: sources.count, by: step).map({ sources[$0] }) {
                func fetch(_ strategy: FetchStrategy) throws -> [ObjectID] {
                    try context.objects(
                        matching: predicate, of: destination, source: source, fetchedProperty: property,
                        strategy: strategy)
                }
                let before = coordinator.store.requestCount
                let viaSQL = try fetch(.store)
                #expect(coordinator.store.requestCount - before <= 2, "the source's row (at most) and one query")
                let viaMemory = try fetch(.inMemory)
                #expect(viaSQL == viaMemory, "\(name) of \(source)")
                #expect(!viaSQL.contains(source))
                if !viaSQL.isEmpty { nonEmpty += 1 }
                if name == "colleagues" {
                    #expect(viaSQL.count == 84, "80 employees and 5 managers per department, less the source")
                } else {
                    for id in viaSQL {
                        #expect(try context.destination(of: "department", for: id) == source)
                        guard case .decimal(let salary)? = try context.value(of: "salary", for: id) else {
                            Issue.record("\(id) has no salary")
                            continue
                        }
                        #expect(salary > 100_000)
                    }
                }
            }
            #expect(nonEmpty >= 3, "\(name) selects objects for most sources")
        }
    }

    @Test func remoteEmployeesTemplate() throws {
        let fixture = try sharedFetchFixture.get()
        let coordinator = try fixture.openSQLite()
        defer { fixture.close(coordinator) }
        let context = coordinator.newContext()
        let model = context.model
        let template = try #require(model.fetchRequestTemplates.first { $0.name == "remoteEmployees" })
        let predicate = try PredicateParser.parse(try #require(template.predicateString))
        let entity = model.entity(template.entityName)
        let viaSQL = try context.objects(matching: predicate, of: entity, strategy: .store)
        let viaMemory = try context.objects(matching: predicate, of: entity, strategy: .inMemory)
        #expect(viaSQL == viaMemory)
        let all = try context.objectIDs(of: entity, includingSubentities: true)
        #expect(viaSQL.count > all.count / 8 && viaSQL.count < all.count / 2, "about a quarter are remote")
        for id in viaSQL { #expect(try context.value(of: "isRemote", for: id) == .boolean(true)) }
    }

    // MARK: - Unsaved changes, sorting, entities

    @Test func unsavedChangesAreSeenByAutomaticFetches() throws {
        let fixture = try sharedFetchFixture.get()
        let coordinator = try fixture.openSQLite()
        defer { fixture.close(coordinator) }
        let context = coordinator.newContext()
        let entity = context.model.entity("Employee")
        let predicate = try PredicateParser.parse("isRemote == YES")
        let saved = try context.objects(matching: predicate, of: entity)
        let office = try #require(
            try context.objects(matching: PredicateParser.parse("isRemote == NO"), of: entity).first)
        try context.setValue(.boolean(true), of: "isRemote", for: office)
        let automatic = try context.objects(matching: predicate, of: entity)
        #expect(automatic == (saved + [office]).sorted { $0.key < $1.key })
        #expect(
            try context.objects(matching: predicate, of: entity, strategy: .store) == saved, "the file is unchanged")
        context.rollback()
        #expect(try context.objects(matching: predicate, of: entity) == saved)
    }

    @Test func sortKeysOrderTheResult() throws {
        let fixture = try sharedFetchFixture.get()
        let coordinator = try fixture.openSQLite()
        defer { fixture.close(coordinator) }
        let context = coordinator.newContext()
        let entity = context.model.entity("Employee")
        let predicate = try PredicateParser.parse("level == 3")
        let sorted = try context.objects(
            matching: predicate, of: entity, sortedBy: [SortKey("lastName"), SortKey("employeeID", ascending: false)])
        let plain = try context.objects(matching: predicate, of: entity)
        #expect(Set(sorted) == Set(plain))
        func key(_ id: ObjectID) throws -> (String, Int64) {
            guard case .string(let last)? = try context.value(of: "lastName", for: id),
                case .integer(let number)? = try context.value(of: "employeeID", for: id)
            else { return ("", 0) }
            return (last, number)
        }
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            let (lastA, idA) = try key(a)
            let (lastB, idB) = try key(b)
            #expect(
                lastA.unicodeScalars.lexicographicallyPrecedes(lastB.unicodeScalars) || (lastA == lastB && idA > idB),
                "\(lastA) \(idA) before \(lastB) \(idB)")
        }
    }

    @Test func subentitiesAreIncludedOnlyWhenAsked() throws {
        let fixture = try sharedFetchFixture.get()
        let coordinator = try fixture.openSQLite()
        defer { fixture.close(coordinator) }
        let context = coordinator.newContext()
        let model = context.model
        let predicate = try PredicateParser.parse("level > 5")
        for strategy in [FetchStrategy.store, .inMemory] {
            let all = try context.objects(matching: predicate, of: model.entity("Employee"), strategy: strategy)
            let plain = try context.objects(
                matching: predicate, of: model.entity("Employee"), includingSubentities: false, strategy: strategy)
            #expect(all.contains { $0.entity == model.entity("Manager") })
            #expect(plain.allSatisfy { $0.entity == model.entity("Employee") } && !plain.isEmpty)
            #expect(Set(plain).isSubset(of: Set(all)))
        }
    }

    @Test func unknownKeysFailAsTheEvaluatorFails() throws {
        let fixture = try sharedFetchFixture.get()
        let coordinator = try fixture.openSQLite()
        defer { fixture.close(coordinator) }
        let context = coordinator.newContext()
        let predicate = try PredicateParser.parse("department.nmae == 'x'")
        #expect {
            try context.objects(matching: predicate, of: context.model.entity("Employee"))
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == .notFound && error.message.contains("nmae")
        }
    }
}
