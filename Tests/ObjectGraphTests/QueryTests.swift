import Foundation
import ObjectGraph
import Testing

private typealias OGPredicate = ObjectGraph.Predicate

/// What queries add to the predicate language and the engine: ISO 8601 date constants, the
/// checker that refuses a query before any object is read, counting, reading records in pages,
/// and comparing two stores object by object.
@Suite struct QueryTests {
    // MARK: - ISO 8601 dates

    @Test(arguments: [
        ("2001-01-01", 0.0), ("2001-01-01T00:00:00Z", 0), ("2001-01-01T00:00:01.5Z", 1.5),
        ("2001-01-01T02:00:00+02:00", 0), ("2000-12-31 23:00", -3600), ("1970-01-01T00:00:00Z", -978_307_200),
        ("2024-05-01T12:30:00.25+02:00", 736_252_200.25)
    ])
    func isoDatesAreTheSecondsTheyName(_ text: String, _ seconds: Double) throws {
        for quote in ["\"", "'"] {
            let predicate = try PredicateParser.parse("birthDate < CAST(\(quote)\(text)\(quote), \"NSDate\")")
            #expect(
                predicate == .comparison(lhs: .keyPath(["birthDate"]), op: .less, rhs: .constant(.date(seconds))),
                "\(text)")
            #expect(try PredicateParser.parse(predicate.description) == predicate)
        }
    }

    @Test func anIsoDateMeansWhatTheFileShows() throws {
        // A date as an attribute file shows it (ISO8601DateText, which the files use) names the
        // same instant in a predicate, fractions included.
        for seconds in [-1e9 + 0.123456, 0.1, 599_443_200.695477, 1e9 + 0.000001] {
            let text = ISO8601DateText.text(of: Date(timeIntervalSinceReferenceDate: seconds))
            let predicate = try PredicateParser.parse("d == CAST(\"\(text)\", \"NSDate\")")
            #expect(
                predicate == .comparison(lhs: .keyPath(["d"]), op: .equal, rhs: .constant(.date(seconds))), "\(text)")
        }
    }

    @Test(arguments: ["2024-13-01", "2024-02-30", "yesterday", "2024-05-01T25:00", "", "2024-05-01T12:00:00Zjunk"])
    func aDateThatIsNotIsoSaysSo(_ text: String) {
        #expect {
            try PredicateParser.parse("d < CAST(\"\(text)\", \"NSDate\")")
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == .invalidModel && error.message.contains("ISO 8601")
                && error.message.contains("position 10:")
        }
    }

    @Test func isoDatesSelectWhatNumericDatesSelect() throws {
        let coordinator = makeSampleCoordinator()
        try SampleGenerator(objectCount: 300).populate(coordinator.newContext())
        let context = coordinator.newContext()
        let employee = coordinator.model.id("Employee")
        let iso = try context.objects(
            matching: PredicateParser.parse(#"birthDate >= CAST("1970-01-01T00:00:00Z", "NSDate")"#), of: employee)
        let seconds = try context.objects(
            matching: PredicateParser.parse(#"birthDate >= CAST(-978307200, "NSDate")"#), of: employee)
        #expect(iso == seconds)
        let all = try context.objectIDs(of: employee, includingSubentities: true)
        #expect(!iso.isEmpty && iso.count < all.count)
    }

    // MARK: - The checker

    @Test(arguments: [
        "level > 5", "department.name BEGINSWITH[cd] 'sales'", "ANY projects.milestones.done == NO",
        "projects.@count > 2", "department.employees.@avg.salary > 1000",
        "department.employees.@max.birthDate < CAST(\"2000-01-01\", \"NSDate\")",
        "photo == nil", "NOT photo != nil", "manager IN department.employees",
        "SELF == manager", "{level, 3} CONTAINS 3", "name MATCHES 'a.*'"
    ])
    func queriesThatMeanSomethingPass(_ text: String) throws {
        let model = SampleModel.make()
        let entity = text.hasPrefix("name") ? model.id("Project") : model.id("Employee")
        try PredicateChecker.check(try PredicateParser.parse(text), for: entity, in: model)
    }

    @Test(arguments: [
        ("nmae == 1", "entity Employee has no attribute or relationship named nmae"),
        ("department.nmae == 1", "entity Department has no attribute or relationship named nmae"),
        ("title == 'x'", "entity Employee has no attribute or relationship named title"),
        ("colleagues.@count > 1", "fetched property"),
        ("nickname == 'x'", "transient"),
        ("lastName.first == 'x'", "a value has no key first"),
        ("projects.@count.name == 1", "nothing can follow @count"),
        // Issue 34: a collection operator after one value or one object counted 1 silently.
        ("lastName.@count > 1", "lastName is one value, which has no key @count"),
        ("level.@sum > 3", "level is one value, which has no key @sum"),
        ("department.name.@max == 'x'", "department.name is one value, which has no key @max"),
        ("manager.@count == 1", "manager is one object, which has no key @count"),
        ("SELF.@count == 1", "SELF is one object, which has no key @count"),
        ("projects.@sum.name > 1", "@sum of String values"),
        ("projects.@avg > 1", "@avg of objects"),
        ("department.employees.@max.photo > 1", "@max of Binary values"),
        ("projects.@median.budget > 1", "@median is not a collection operator"),
        ("department == $FETCH_SOURCE", "a query has no variables"),
        ("lastName MATCHES '('", "is not a valid regular expression"),
        ("level BETWEEN projects.budget", "BETWEEN needs two values"),
        ("photo == 'abc'", "compares only with nil"),
        ("photo == preferences", "compares only with nil"),
        ("photo IN {nil}", "compares only with nil")
    ])
    func queriesThatCannotMeanAnythingSayWhy(_ text: String, _ message: String) throws {
        let model = SampleModel.make()
        let predicate = try PredicateParser.parse(text)
        #expect {
            try PredicateChecker.check(predicate, for: model.id("Employee"), in: model)
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == .validation && error.message.contains(message)
        }
    }

    // MARK: - Counting and records

    @Test func countingAndPagesWhereTheStoreCannotQuery() throws {
        // The in-memory store evaluates nothing itself: the engine counts and lists in memory.
        let coordinator = makeSampleCoordinator()
        try SampleGenerator(objectCount: 500).populate(coordinator.newContext())
        let context = coordinator.newContext()
        let model = coordinator.model
        let predicate = try PredicateParser.parse("level > 5 OR department.name BEGINSWITH 'Sales'")
        let employee = model.id("Employee")
        let matching = try context.objects(matching: predicate, of: employee)
        #expect(try context.count(matching: predicate, of: employee) == matching.count)
        #expect {
            try context.count(matching: predicate, of: employee, strategy: .store)
        } throws: { ($0 as? ObjectGraphError)?.code == .unsupported }

        var pages = ObjectRecordPages(coordinator: coordinator, entity: employee, matching: predicate, pageSize: 64)
        var read: [ObjectRecord] = []
        while let page = try pages.next() {
            #expect(page.count <= 64)
            read += page
        }
        #expect(read.map(\.objectID) == matching)
        let records = try context.records(for: matching)
        #expect(read == records)
        let manager = try #require(read.first { $0.objectID.entity == model.id("Manager") })
        #expect(manager.toMany["directReports"]?.isEmpty == false, "a manager's ordered to-many is in the record")
        #expect(manager.toMany.keys.sorted() == ["directReports", "projects"])
    }

    @Test func recordsSeeUnsavedChanges() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        let company = try insertSmallCompany(context)
        try context.setValue(.string("Lovelace"), of: "lastName", for: company.employees[0])
        let records = try context.records(for: [company.employees[0], company.department])
        #expect(records.map(\.objectID) == [company.employees[0], company.department])
        #expect(records[0].attributes["lastName"] == .string("Lovelace"))
        #expect(records[0].toOne["department"] == company.department)
        #expect(Set(records[1].toMany["employees"] ?? []) == Set(company.employees))
    }

    // MARK: - Comparing stores

    @Test func aStoreComparedWithItsCopyHasNoDifferences() throws {
        let a = makeSampleCoordinator()
        try SampleGenerator(objectCount: 300).populate(a.newContext())
        let b = makeSampleCoordinator()
        try SampleGenerator(objectCount: 300).populate(b.newContext())
        var differences: [ObjectDifference] = []
        let count = try StoreComparison(old: a, new: b, pageSize: 50).compare { differences.append($0) }
        #expect(count == 0)
        #expect(differences.isEmpty)
    }

    @Test func everyKindOfChangeIsReported() throws {
        let a = makeSampleCoordinator()
        try SampleGenerator(objectCount: 200).populate(a.newContext())
        let b = makeSampleCoordinator()
        try SampleGenerator(objectCount: 200).populate(b.newContext())
        let model = b.model
        let context = b.newContext()
        let employees = try context.objectIDs(of: model.id("Employee"))
        let departments = try context.objectIDs(of: model.id("Department"))
        let managers = try context.objectIDs(of: model.id("Manager"))
        let projects = try context.objectIDs(of: model.id("Project"))
        let changed = employees[0]
        try context.setValue(.string("Hopper"), of: "lastName", for: changed)
        try context.setValue(nil, of: "birthDate", for: changed)
        try context.setDestination(departments[1], of: "department", for: changed)
        try context.setValue(.double(-0.0), of: "hoursPerWeek", for: employees[1])
        let project = projects[0]
        let milestones = try context.destinations(of: "milestones", for: project)
        try context.setDestinations(milestones.reversed(), of: "milestones", for: project)
        let removed = try #require(try context.objectIDs(of: model.id("Milestone")).last)
        try context.delete(removed)
        let inserted = try context.insertObject(of: model.id("Milestone"))
        try context.setValue(.string("New"), of: "title", for: inserted)
        try context.save()

        var found: [ObjectDifference] = []
        try StoreComparison(old: a, new: b, pageSize: 7).compare { found.append($0) }
        let name = { (id: ObjectID) in ObjectReference(entityName: model[id.entity].name, key: id.key) }
        let byObject = Dictionary(found.map { ($0.object, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byObject[name(inserted)]?.kind == .inserted)
        #expect(byObject[name(removed)]?.kind == .deleted)
        let employee = try #require(byObject[name(changed)])
        #expect(employee.kind == .updated)
        #expect(employee.properties.map(\.name) == ["lastName", "birthDate", "department"], "in the model's order")
        if case .attribute(_, let type, let old, let new) = employee.properties[0] {
            #expect(type == .string && new == .string("Hopper") && old != nil)
        }
        #expect(
            employee.properties[2] == .toOne(name: "department", old: name(departments[0]), new: name(departments[1])))
        let hours = try #require(byObject[name(employees[1])], "-0.0 is not 0.0 (the files differ)")
        #expect(hours.properties.map(\.name) == ["hoursPerWeek"])
        let reordered = try #require(byObject[name(project)])
        guard
            case .toMany(_, let minus, let plus, let old, let new) = try #require(
                reordered.properties.first { $0.name == "milestones" })
        else { Issue.record("milestones are not a to-many difference"); return }
        #expect(minus == [name(removed)].filter { old.contains($0) } && plus.isEmpty)
        #expect(old.filter { $0 != name(removed) }.reversed() == new, "the order, reversed")
        // Both sides of the moved employee's department, and the managers' unchanged side.
        #expect(byObject[name(departments[0])]?.properties.map(\.name) == ["employees"])
        #expect(byObject[name(departments[1])]?.properties.map(\.name) == ["employees"])
        #expect(byObject[name(managers[0])] == nil)
        // Sorted as promised: entity by entity in model order, by key within one.
        let order = found.map { "\(model.entityID(named: $0.object.entityName)!.rawValue)/\($0.object.key.rawValue)" }
        let sorted = found.sorted {
            (model.entityID(named: $0.object.entityName)!.rawValue, $0.object.key) < (
                model.entityID(named: $1.object.entityName)!.rawValue, $1.object.key
            )
        }.map { "\(model.entityID(named: $0.object.entityName)!.rawValue)/\($0.object.key.rawValue)" }
        #expect(order == sorted)
    }

    @Test func nanIsTheSameValueAndNegativeZeroIsNot() {
        #expect(StoreComparison.same(.double(.nan), .double(.nan)))
        #expect(!StoreComparison.same(.double(-0.0), .double(0.0)))
        #expect(StoreComparison.same(.decimal(Decimal(string: "1.50")!), .decimal(Decimal(string: "1.5")!)))
        #expect(!StoreComparison.same(.integer(1), .double(1)))
        #expect(!StoreComparison.same(nil, .string("")))
    }
}
