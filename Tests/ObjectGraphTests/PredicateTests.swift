import Foundation
import ObjectGraph
import TestSupport
import Testing

// Foundation has its own `Predicate` and `Expression`; these names pick ObjectGraph's.
private typealias OGPredicate = ObjectGraph.Predicate
private typealias OGExpression = ObjectGraph.Expression

// MARK: - Corpus

/// The corpus of real Xcode models in the repository (Tests/Fixtures/corpus/models).
private let predicateCorpusDirectory: URL = Corpus.url("models")

/// Every `predicateString` attribute of every `contents` file in the corpus, XML-unescaped, with
/// the file it came from.
private func corpusPredicateStrings() throws -> [(file: String, predicate: String)] {
    guard let walker = FileManager.default.enumerator(atPath: predicateCorpusDirectory.path) else { return [] }
    let pattern = try Regex(#"predicateString="([^"]*)""#)
    var found: [(String, String)] = []
    for case let relative as String in walker where relative.hasSuffix("/contents") || relative == "contents" {
        let text = try String(
            contentsOf: predicateCorpusDirectory.appendingPathComponent(relative), encoding: .utf8)
        for match in text.matches(of: pattern) {
            guard let raw = match.output[1].substring else { continue }
            found.append((relative, xmlUnescaped(String(raw))))
        }
    }
    return found
}

private func xmlUnescaped(_ s: String) -> String {
    s.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&lt;", with: "<")
        .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&apos;", with: "'")
        .replacingOccurrences(of: "&amp;", with: "&")
}

// MARK: - The sample store

/// The sample company (1,000 objects) with a few changes so every operator has something to
/// tell apart: accented and upper-case last names, and a department with nothing in it.
private struct Fixture: Sendable {
    let context: ObjectContext
    /// An employee who is not a manager.
    let employee: ObjectID
    let department: ObjectID
    let emptyDepartment: ObjectID

    init() throws {
        let coordinator = makeSampleCoordinator()
        let writer = coordinator.newContext()
        try SampleGenerator(objectCount: 1_000).populate(writer)
        let model = writer.model
        for id in try writer.objectIDs(of: model.id("Employee"), includingSubentities: true) {
            guard case .string(let last)? = try writer.value(of: "lastName", for: id) else { continue }
            switch id.key.rawValue % 5 {
            case 0: try writer.setValue(.string(last.replacingOccurrences(of: "e", with: "é")), of: "lastName", for: id)
            case 1: try writer.setValue(.string(last.uppercased()), of: "lastName", for: id)
            default: break
            }
        }
        let empty = try writer.insertObject(of: model.id("Department"))
        try writer.setValue(.string("Émpty"), of: "name", for: empty)
        try writer.save()
        coordinator.dropCaches()
        context = coordinator.newContext()
        employee = try context.objectIDs(of: model.id("Employee"))[4]
        department = try context.objectIDs(of: model.id("Department"))[2]
        emptyDepartment = empty
    }
}

private let sharedFixture = Result<Fixture, any Error> { try Fixture() }

/// Plain reads of one object's values, for computing expected results without the evaluator.
private struct Reader: Sendable {
    let context: ObjectContext
    let source: ObjectID?

    func value(_ id: ObjectID, _ key: String) throws -> AttributeValue? { try context.value(of: key, for: id) }

    func string(_ id: ObjectID, _ key: String) throws -> String? {
        if case .string(let s)? = try value(id, key) { return s }
        return nil
    }

    func int(_ id: ObjectID, _ key: String) throws -> Int64? {
        if case .integer(let i)? = try value(id, key) { return i }
        return nil
    }

    func number(_ id: ObjectID, _ key: String) throws -> Double? {
        switch try value(id, key) {
        case .integer(let i)?: Double(i)
        case .double(let d)?: d
        case .float(let f)?: Double(f)
        case .decimal(let d)?: NSDecimalNumber(decimal: d).doubleValue
        default: nil
        }
    }

    func decimal(_ id: ObjectID, _ key: String) throws -> Decimal? {
        if case .decimal(let d)? = try value(id, key) { return d }
        return nil
    }

    func bool(_ id: ObjectID, _ key: String) throws -> Bool? {
        if case .boolean(let b)? = try value(id, key) { return b }
        return nil
    }

    /// Seconds since 2001.
    func date(_ id: ObjectID, _ key: String) throws -> Double? {
        if case .date(let d)? = try value(id, key) { return d.timeIntervalSinceReferenceDate }
        return nil
    }

    func one(_ id: ObjectID, _ key: String) throws -> ObjectID? { try context.destination(of: key, for: id) }
    func many(_ id: ObjectID, _ key: String) throws -> [ObjectID] { try context.destinations(of: key, for: id) }

    func fold(_ s: String, _ options: String.CompareOptions) -> String { s.folding(options: options, locale: nil) }

    func wholeMatch(_ s: String, _ pattern: String, ignoringCase: Bool = false) throws -> Bool {
        let regex = try Regex(pattern)
        return try (ignoringCase ? regex.ignoresCase() : regex).wholeMatch(in: s) != nil
    }
}

/// One predicate over the sample, with its expected result computed by plain Swift.
private struct Row: Sendable, CustomTestStringConvertible {
    enum Source: Sendable { case none, employee, department }

    let entity: String
    let predicate: String
    var source = Source.none
    /// "Entity.name" of the fetched property `$FETCHED_PROPERTY` names.
    var fetchedProperty: String?
    /// Whether an empty result is right (so the row does not demand matches).
    var mayBeEmpty = false
    let expected: @Sendable (Reader, ObjectID) throws -> Bool

    init(
        _ entity: String, _ predicate: String, source: Source = .none, fetchedProperty: String? = nil,
        mayBeEmpty: Bool = false, _ expected: @escaping @Sendable (Reader, ObjectID) throws -> Bool
    ) {
        self.entity = entity
        self.predicate = predicate
        self.source = source
        self.fetchedProperty = fetchedProperty
        self.mayBeEmpty = mayBeEmpty
        self.expected = expected
    }

    var testDescription: String { "\(entity): \(predicate)" }
}

private let ci: String.CompareOptions = [.caseInsensitive]
private let di: String.CompareOptions = [.diacriticInsensitive]
private let cdi: String.CompareOptions = [.caseInsensitive, .diacriticInsensitive]

private let rows: [Row] = [
    // Comparison operators and their spellings, on integers.
    Row("Employee", "level == 5") { r, o in try r.int(o, "level") == 5 },
    Row("Employee", "level = 5") { r, o in try r.int(o, "level") == 5 },
    Row("Employee", "level != 5") { r, o in try r.int(o, "level") != 5 },
    Row("Employee", "level <> 5") { r, o in try r.int(o, "level") != 5 },
    Row("Employee", "level < 3") { r, o in try r.int(o, "level")! < 3 },
    Row("Employee", "level <= 3") { r, o in try r.int(o, "level")! <= 3 },
    Row("Employee", "level =< 3") { r, o in try r.int(o, "level")! <= 3 },
    Row("Employee", "level > 8") { r, o in try r.int(o, "level")! > 8 },
    Row("Employee", "level >= 8") { r, o in try r.int(o, "level")! >= 8 },
    Row("Employee", "level => 8") { r, o in try r.int(o, "level")! >= 8 },
    Row("Employee", "badgeNumber > 4611686018427387904") { r, o in try r.int(o, "badgeNumber")! > 1 << 62 },
    Row("Employee", "badgeNumber > -1") { r, o in try r.int(o, "badgeNumber")! > -1 },
    // Numbers across integer, decimal, double and float.
    Row("Employee", "salary > 100000") { r, o in try r.decimal(o, "salary")! > 100_000 },
    Row("Employee", "salary <= 75000.5") { r, o in try r.number(o, "salary")! <= 75000.5 },
    Row("Employee", "hoursPerWeek == 37.5") { r, o in try r.number(o, "hoursPerWeek") == 37.5 },
    Row("Employee", "hoursPerWeek == 40") { r, o in try r.number(o, "hoursPerWeek") == 40 },
    Row("Employee", "rating >= 2.5") { r, o in try r.number(o, "rating")! >= 2.5 },
    Row("Employee", "level == 5.0") { r, o in try r.int(o, "level") == 5 },
    Row("Department", "budget > 500000") { r, o in try r.decimal(o, "budget").map { $0 > 500_000 } ?? false },
    // Strings, with and without [c], [d], [cd].
    Row("Employee", "firstName == 'Ada'") { r, o in try r.string(o, "firstName") == "Ada" },
    Row("Employee", #"firstName == "Grace""#) { r, o in try r.string(o, "firstName") == "Grace" },
    Row("Employee", "firstName ==[c] 'ada'") { r, o in try r.fold(r.string(o, "firstName")!, ci) == "ada" },
    Row("Employee", "lastName == 'Hopper'") { r, o in try r.string(o, "lastName") == "Hopper" },
    Row("Employee", "lastName ==[d] 'Hopper'") { r, o in try r.fold(r.string(o, "lastName")!, di) == "Hopper" },
    Row("Employee", "lastName ==[cd] 'HOPPÉR'") { r, o in try r.fold(r.string(o, "lastName")!, cdi) == "hopper" },
    Row("Employee", "firstName < 'G'") { r, o in try r.string(o, "firstName")! < "G" },
    Row("Employee", "lastName >=[c] 'turing'") { r, o in try r.fold(r.string(o, "lastName")!, ci) >= "turing" },
    Row("Employee", "firstName BEGINSWITH 'Gr'") { r, o in try r.string(o, "firstName")!.hasPrefix("Gr") },
    Row("Employee", "firstName BEGINSWITH[c] 'gR'") { r, o in try r.fold(r.string(o, "firstName")!, ci).hasPrefix("gr")
    },
    Row("Employee", "lastName ENDSWITH 'son'") { r, o in try r.string(o, "lastName")!.hasSuffix("son") },
    Row("Employee", "lastName CONTAINS 'pp'") { r, o in try r.string(o, "lastName")!.contains("pp") },
    Row("Employee", "lastName CONTAINS[c] 'PP'") { r, o in try r.fold(r.string(o, "lastName")!, ci).contains("pp") },
    Row("Employee", "lastName CONTAINS[d] 'lace'") { r, o in try r.fold(r.string(o, "lastName")!, di).contains("lace")
    },
    Row("Employee", "lastName CONTAINS[cd] 'LACÉ'") { r, o in try r.fold(r.string(o, "lastName")!, cdi).contains("lace")
    },
    Row("Employee", #"homepage CONTAINS "~ada.""#) { r, o in try r.string(o, "homepage")!.contains("~ada.") },
    Row("Employee", "lastName == 'van Rossum'") { r, o in try r.string(o, "lastName") == "van Rossum" },
    // LIKE and MATCHES.
    Row("Employee", "firstName LIKE 'A*'") { r, o in try r.string(o, "firstName")!.hasPrefix("A") },
    Row("Employee", "lastName LIKE '?o*'") { r, o in try Array(r.string(o, "lastName")!).dropFirst().first == "o" },
    Row("Employee", "lastName LIKE[c] '*SON'") { r, o in try r.fold(r.string(o, "lastName")!, ci).hasSuffix("son") },
    Row("Employee", "lastName LIKE[cd] 'lov?lac?'") { r, o in
        let s = Array(try r.fold(r.string(o, "lastName")!, cdi))
        return s.count == 8 && s[0..<3] == ["l", "o", "v"] && s[4..<7] == ["l", "a", "c"]
    },
    Row("Employee", "firstName MATCHES '[A-D].*'") { r, o in try r.wholeMatch(r.string(o, "firstName")!, "[A-D].*") },
    Row("Employee", "lastName MATCHES[c] 'h.*r'") { r, o in
        try r.wholeMatch(r.string(o, "lastName")!, "h.*r", ignoringCase: true)
    },
    Row("Employee", "lastName MATCHES 'Ho|Hopper'") { r, o in try r.string(o, "lastName") == "Hopper" },
    // Key paths through to-one relationships, nil on the way.
    Row("Employee", "department.name BEGINSWITH 'Engineering'") { r, o in
        try r.one(o, "department").map { try r.string($0, "name")!.hasPrefix("Engineering") } ?? false
    },
    Row("Employee", "department.code == 'D00003'") { r, o in
        try r.one(o, "department").map { try r.string($0, "code") == "D00003" } ?? false
    },
    Row("Employee", "manager.firstName == 'Grace'") { r, o in
        try r.one(o, "manager").map { try r.string($0, "firstName") == "Grace" } ?? false
    },
    Row("Employee", "department.budget > 500000") { r, o in
        try r.one(o, "department").map { try r.decimal($0, "budget")! > 500_000 } ?? false
    },
    Row("Employee", "manager.manager.firstName == nil") { r, o in
        guard let m = try r.one(o, "manager"), let mm = try r.one(m, "manager") else { return true }
        return try r.string(mm, "firstName") == nil
    },
    Row("Employee", "manager.level > 0") { r, o in try r.one(o, "manager") != nil },
    // nil.
    Row("Employee", "photo == nil") { r, o in try r.value(o, "photo") == nil },
    Row("Employee", "photo != nil") { r, o in try r.value(o, "photo") != nil },
    Row("Employee", "preferences = NULL") { r, o in try r.value(o, "preferences") == nil },
    Row("Employee", "manager == nil") { r, o in try r.one(o, "manager") == nil },
    Row("Employee", "manager != nil AND manager.manager == nil") { r, o in
        guard let m = try r.one(o, "manager") else { return false }
        return try r.one(m, "manager") == nil
    },
    // Booleans.
    Row("Employee", "isRemote == YES") { r, o in try r.bool(o, "isRemote") == true },
    Row("Employee", "isRemote == 1") { r, o in try r.bool(o, "isRemote") == true },
    Row("Employee", "isRemote = TRUE") { r, o in try r.bool(o, "isRemote") == true },
    Row("Employee", "isRemote == NO") { r, o in try r.bool(o, "isRemote") == false },
    Row("Employee", "isRemote == 0") { r, o in try r.bool(o, "isRemote") == false },
    Row("Employee", "isRemote != false") { r, o in try r.bool(o, "isRemote") == true },
    Row("Project", "isActive == YES") { r, o in try r.bool(o, "isActive") == true },
    Row("Milestone", "done == NO") { r, o in try r.bool(o, "done") == false },
    // Dates: with dates, and with numbers as seconds since 2001.
    Row("Employee", #"birthDate < CAST(-700000000, "NSDate")"#) { r, o in try r.date(o, "birthDate")! < -700_000_000 },
    Row("Employee", "birthDate > -600000000") { r, o in try r.date(o, "birthDate")! > -600_000_000 },
    Row("Milestone", #"dueDate >= CAST(700000000.5, "NSDate")"#) { r, o in try r.date(o, "dueDate")! >= 700_000_000.5 },
    Row("Employee", #"birthDate BETWEEN {CAST(-900000000, "NSDate"), CAST(-500000000, "NSDate")}"#) { r, o in
        try (-900_000_000 ... -500_000_000).contains(r.date(o, "birthDate")!)
    },
    // BETWEEN and IN.
    Row("Employee", "level BETWEEN {3, 5}") { r, o in try (3...5).contains(r.int(o, "level")!) },
    Row("Employee", "hoursPerWeek BETWEEN {32, 40}") { r, o in try (32...40).contains(r.number(o, "hoursPerWeek")!) },
    Row("Employee", "firstName IN {'Ada', 'Grace', 'Alan'}") { r, o in
        try ["Ada", "Grace", "Alan"].contains(r.string(o, "firstName")!)
    },
    Row("Employee", "firstName IN[c] {'ada', 'GRACE'}") { r, o in
        try ["ada", "grace"].contains(r.fold(r.string(o, "firstName")!, ci))
    },
    Row("Employee", "level IN {1, 2.0, 3}") { r, o in try (1...3).contains(r.int(o, "level")!) },
    Row("Project", "$FETCH_SOURCE IN members", source: .employee) { r, o in try r.many(o, "members").contains(r.source!)
    },
    Row("Project", "members CONTAINS $FETCH_SOURCE", source: .employee) { r, o in
        try r.many(o, "members").contains(r.source!)
    },
    // ANY / SOME / ALL / NONE over to-many key paths, @count and aggregates.
    Row("Employee", "ANY projects.name ENDSWITH '-1'") { r, o in
        try r.many(o, "projects").contains { try r.string($0, "name")!.hasSuffix("-1") }
    },
    Row("Employee", "SOME projects.isActive == NO") { r, o in
        try r.many(o, "projects").contains { try r.bool($0, "isActive") == false }
    },
    Row("Employee", "projects.isActive == NO") { r, o in
        try r.many(o, "projects").contains { try r.bool($0, "isActive") == false }
    },
    Row("Employee", "ALL projects.isActive == YES") { r, o in
        try r.many(o, "projects").allSatisfy { try r.bool($0, "isActive") == true }
    },
    Row("Employee", "NONE projects.name ENDSWITH '-4'") { r, o in
        try !r.many(o, "projects").contains { try r.string($0, "name")!.hasSuffix("-4") }
    },
    Row("Department", "ALL projects.budget > 300000") { r, o in
        try r.many(o, "projects").allSatisfy { try r.number($0, "budget")! > 300_000 }
    },
    Row("Department", "ANY employees.level == 10 AND ALL employees.level >= 1") { r, o in
        let levels = try r.many(o, "employees").map { try r.int($0, "level")! }
        return levels.contains(10) && levels.allSatisfy { $0 >= 1 }
    },
    Row("Employee", "ANY projects IN $FETCH_SOURCE.projects", source: .employee) { r, o in
        let theirs = Set(try r.many(r.source!, "projects"))
        return try r.many(o, "projects").contains { theirs.contains($0) }
    },
    Row("Employee", "ALL projects.milestones.done == YES") { r, o in
        try r.many(o, "projects").allSatisfy { p in try r.many(p, "milestones").allSatisfy { try r.bool($0, "done")! } }
    },
    Row("Employee", "projects.@count == 2") { r, o in try r.many(o, "projects").count == 2 },
    Row("Project", "members.@count > 20") { r, o in try r.many(o, "members").count > 20 },
    Row("Department", "employees.@count == 0") { r, o in try r.many(o, "employees").isEmpty },
    Row("Department", "employees.@avg.level > 5.5") { r, o in
        let levels = try r.many(o, "employees").map { try r.int($0, "level")! }
        return !levels.isEmpty && Double(levels.reduce(0, +)) / Double(levels.count) > 5.5
    },
    Row("Department", "employees.@sum.hoursPerWeek > 2920") { r, o in
        try r.many(o, "employees").map { try r.number($0, "hoursPerWeek")! }.reduce(0, +) > 2920
    },
    Row("Department", "projects.@max.budget > 1100000") { r, o in
        try r.many(o, "projects").map { try r.number($0, "budget")! }.max().map { $0 > 1_100_000 } ?? false
    },
    Row("Department", #"projects.@min.startDate < CAST(500000000, "NSDate")"#) { r, o in
        try r.many(o, "projects").map { try r.date($0, "startDate")! }.min().map { $0 < 500_000_000 } ?? false
    },
    // Compounds, precedence, keywords in any case, constants.
    Row("Employee", "level > 5 AND isRemote == YES") { r, o in try r.int(o, "level")! > 5 && r.bool(o, "isRemote")! },
    Row("Employee", "level > 8 OR level < 2") { r, o in
        let l = try r.int(o, "level")!; return l > 8 || l < 2
    },
    Row("Employee", "NOT level > 5") { r, o in try !(r.int(o, "level")! > 5) },
    Row("Employee", "!(level > 5) && isRemote == YES || firstName == 'Ada'") { r, o in
        let l = try r.int(o, "level")!
        return try (!(l > 5) && r.bool(o, "isRemote")!) || r.string(o, "firstName") == "Ada"
    },
    Row("Employee", "level > 5 AND (firstName == 'Ada' OR firstName == 'Alan')") { r, o in
        try r.int(o, "level")! > 5 && ["Ada", "Alan"].contains(r.string(o, "firstName")!)
    },
    Row("Employee", "level > 5 and not isRemote == yes or any projects.name endswith '-2'") { r, o in
        let a = try r.int(o, "level")! > 5 && !r.bool(o, "isRemote")!
        return try a || r.many(o, "projects").contains { try r.string($0, "name")!.hasSuffix("-2") }
    },
    Row("Employee", "TRUEPREDICATE") { _, _ in true },
    Row("Employee", "FALSEPREDICATE OR SELF.level == 3") { r, o in try r.int(o, "level") == 3 },
    Row("Employee", "FALSEPREDICATE", mayBeEmpty: true) { _, _ in false },
    // Variables: $FETCH_SOURCE and $FETCHED_PROPERTY, as the sample model's fetched properties use them.
    Row("Employee", "SELF == $FETCH_SOURCE", source: .employee) { r, o in o == r.source },
    Row("Employee", "department == $FETCH_SOURCE.department AND SELF != $FETCH_SOURCE", source: .employee) { r, o in
        try r.one(o, "department") == r.one(r.source!, "department") && o != r.source
    },
    Row(
        "Employee", "department == $FETCH_SOURCE AND salary > $FETCHED_PROPERTY.userInfo.threshold",
        source: .department, fetchedProperty: "Department.highEarners"
    ) { r, o in try r.one(o, "department") == r.source && r.decimal(o, "salary")! > 100_000 },
    Row("Employee", "salary > $FETCHED_PROPERTY.userInfo.threshold", fetchedProperty: "Department.highEarners") {
        r, o in
        try r.decimal(o, "salary")! > 100_000
    }
]

@Suite struct PredicateTests {
    // MARK: - Evaluating over the sample

    @Test(arguments: rows)
    fileprivate func evaluatorMatchesPlainSwift(_ row: Row) throws {
        let fixture = try sharedFixture.get()
        let context = fixture.context
        let model = context.model
        let source: ObjectID? =
            switch row.source {
            case .none: nil
            case .employee: fixture.employee
            case .department: fixture.department
            }
        var fetched: FetchedPropertyDescription?
        if let name = row.fetchedProperty {
            let parts = name.split(separator: ".").map(String.init)
            fetched = try #require(model.entity(named: parts[0])?.fetchedProperty(named: parts[1]))
        }
        let predicate = try PredicateParser.parse(row.predicate)
        let evaluator = PredicateEvaluator(context: context, source: source, fetchedProperty: fetched)
        let entity = model.id(row.entity)
        let actual = try evaluator.objects(of: entity, matching: predicate)

        let reader = Reader(context: context, source: source)
        let all = try context.objectIDs(of: entity, includingSubentities: true)
        let expected = try all.filter { try row.expected(reader, $0) }
        #expect(actual == expected, "\(actual.count) matched, \(expected.count) expected")
        if !row.mayBeEmpty {
            #expect(!expected.isEmpty, "the row should select something to be meaningful")
        }
        #expect(try PredicateParser.parse(predicate.description) == predicate)
        if let first = all.first {
            #expect(try evaluator.evaluate(predicate, on: first) == row.expected(reader, first))
        }
    }

    @Test func sampleFetchedPropertiesSelectTheirObjects() throws {
        let fixture = try sharedFixture.get()
        let context = fixture.context
        let model = context.model
        let colleagues = try #require(model.entity(named: "Employee")?.fetchedProperty(named: "colleagues"))
        let evaluator = PredicateEvaluator(context: context, source: fixture.employee, fetchedProperty: colleagues)
        let found = try evaluator.objects(
            of: model.id(colleagues.destinationEntityName), matching: PredicateParser.parse(colleagues.predicateString))
        let department = try #require(try context.destination(of: "department", for: fixture.employee))
        let expected = try context.destinations(of: "employees", for: department).filter { $0 != fixture.employee }
        #expect(Set(found) == Set(expected))
        #expect(found.count == 84, "80 employees and 5 managers per department, less the source")
    }

    @Test func unknownKeysNameTheKeyAndTheEntity() throws {
        let fixture = try sharedFixture.get()
        let evaluator = PredicateEvaluator(context: fixture.context, source: nil, fetchedProperty: nil)
        let predicate = try PredicateParser.parse("department.nmae == 'x'")
        #expect {
            try evaluator.evaluate(predicate, on: fixture.employee)
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == .notFound && error.message.contains("nmae") && error.message.contains("Department")
        }
        #expect {
            try evaluator.objects(
                of: fixture.context.model.id("Employee"), matching: PredicateParser.parse("title == 'x'"))
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == .notFound && error.message.contains("title") && error.message.contains("Employee")
        }
    }

    @Test func variablesWithoutValuesAreErrors() throws {
        let fixture = try sharedFixture.get()
        let evaluator = PredicateEvaluator(context: fixture.context, source: nil, fetchedProperty: nil)
        for text in ["SELF == $FETCH_SOURCE", "level > $FETCHED_PROPERTY.userInfo.threshold", "firstName == $name"] {
            #expect(throws: ObjectGraphError.self, "\(text)") {
                try evaluator.evaluate(PredicateParser.parse(text), on: fixture.employee)
            }
        }
        let bound = PredicateEvaluator(
            context: fixture.context, source: nil, fetchedProperty: nil, variables: ["name": .string("Ada")])
        let name = try fixture.context.value(of: "firstName", for: fixture.employee)
        #expect(
            try bound.evaluate(PredicateParser.parse("firstName == $name"), on: fixture.employee)
                == (name == .string("Ada")))
    }

    @Test func userInfoStringsThatAreNotNumbersMatchNothing() throws {
        let fixture = try sharedFixture.get()
        let property = FetchedPropertyDescription(
            name: "p", destinationEntityName: "Employee", predicateString: "", userInfo: ["threshold": "lots"])
        let evaluator = PredicateEvaluator(context: fixture.context, source: nil, fetchedProperty: property)
        #expect(
            try !evaluator.evaluate(
                PredicateParser.parse("salary > $FETCHED_PROPERTY.userInfo.threshold"), on: fixture.employee))
        #expect(
            try !evaluator.evaluate(
                PredicateParser.parse("salary < $FETCHED_PROPERTY.userInfo.threshold"), on: fixture.employee))
        #expect(
            try evaluator.evaluate(
                PredicateParser.parse("salary != $FETCHED_PROPERTY.userInfo.threshold"), on: fixture.employee))
        #expect(
            try evaluator.evaluate(
                PredicateParser.parse("$FETCHED_PROPERTY.userInfo.missing == nil"), on: fixture.employee))
    }

    @Test func allIsTrueAndAnyFalseForAnEmptyCollection() throws {
        let fixture = try sharedFixture.get()
        let evaluator = PredicateEvaluator(context: fixture.context, source: nil, fetchedProperty: nil)
        let empty = fixture.emptyDepartment
        #expect(try evaluator.evaluate(PredicateParser.parse("ALL employees.level > 100"), on: empty))
        #expect(try !evaluator.evaluate(PredicateParser.parse("ANY employees.level > 0"), on: empty))
        #expect(try evaluator.evaluate(PredicateParser.parse("NONE employees.level > 0"), on: empty))
        #expect(try evaluator.evaluate(PredicateParser.parse("employees.@sum.level == 0"), on: empty))
        #expect(try evaluator.evaluate(PredicateParser.parse("employees.@avg.level == nil"), on: empty))
        #expect(try evaluator.evaluate(PredicateParser.parse("head == nil AND head.firstName == nil"), on: empty))
    }

    // MARK: - Parsing

    @Test func everyCorpusPredicateParsesAndRoundTrips() throws {
        let found = try corpusPredicateStrings()
        #expect(found.count >= 10, "corpus at \(predicateCorpusDirectory.path)")
        for (file, text) in found {
            let predicate = try PredicateParser.parse(text)
            #expect(try PredicateParser.parse(predicate.description) == predicate, "\(file): \(text)")
        }
    }

    /// A control character printed as `\u000b` followed by a combining mark: read as characters,
    /// the escape's last digit joined the mark and the printed predicate no longer parsed.
    @Test(arguments: ["\u{0B}\u{32E}", "\"\u{301}", "\\\u{301}", "e\u{301}", "\u{0}\u{0}x"])
    func stringsWithCombiningMarksPrintAsTheyParse(value: String) throws {
        let predicate = try PredicateParser.parse("title == " + Expression.Literal.string(value).description)
        #expect(try PredicateParser.parse(predicate.description) == predicate)
        let name = try PredicateParser.parse("caf\u{E9}\u{301}s == 1")
        #expect(try PredicateParser.parse(name.description) == name)
    }

    @Test func sampleModelPredicatesParse() throws {
        let model = SampleModel.make()
        var texts = model.fetchRequestTemplates.compactMap(\.predicateString)
        texts += model.entities.flatMap(\.fetchedProperties).map(\.predicateString)
        #expect(texts.count == 3)
        for text in texts {
            let predicate = try PredicateParser.parse(text)
            #expect(try PredicateParser.parse(predicate.description) == predicate, "\(text)")
        }
    }

    @Test func parsesTheSyntaxTree() throws {
        let highEarners = try PredicateParser.parse(
            "department == $FETCH_SOURCE AND salary > $FETCHED_PROPERTY.userInfo.threshold")
        #expect(
            highEarners
                == .and([
                    .comparison(lhs: .keyPath(["department"]), op: .equal, rhs: .variable("FETCH_SOURCE", keyPath: [])),
                    .comparison(
                        lhs: .keyPath(["salary"]), op: .greater,
                        rhs: .variable("FETCHED_PROPERTY", keyPath: ["userInfo", "threshold"]))
                ]))
        #expect(
            try PredicateParser.parse("a == 1 OR b == 2 AND NOT c == 3")
                == .or([
                    .comparison(lhs: .keyPath(["a"]), op: .equal, rhs: .constant(.integer(1))),
                    .and([
                        .comparison(lhs: .keyPath(["b"]), op: .equal, rhs: .constant(.integer(2))),
                        .not(.comparison(lhs: .keyPath(["c"]), op: .equal, rhs: .constant(.integer(3))))
                    ])
                ]))
        #expect(
            try PredicateParser.parse("(a == 1 || b == 2) && !c == 3")
                == .and([
                    .or([
                        .comparison(lhs: .keyPath(["a"]), op: .equal, rhs: .constant(.integer(1))),
                        .comparison(lhs: .keyPath(["b"]), op: .equal, rhs: .constant(.integer(2)))
                    ]),
                    .not(.comparison(lhs: .keyPath(["c"]), op: .equal, rhs: .constant(.integer(3))))
                ]))
        #expect(
            try PredicateParser.parse("any employees.name like[cd] 'a*'")
                == .comparison(
                    lhs: .keyPath(["employees", "name"]), op: .like, rhs: .constant(.string("a*")),
                    options: [.caseInsensitive, .diacriticInsensitive], modifier: .any))
        #expect(
            try PredicateParser.parse("employees.@count BETWEEN {-1, 2.5}")
                == .comparison(
                    lhs: .keyPath(["employees", "@count"]), op: .between,
                    rhs: .aggregate([.constant(.integer(-1)), .constant(.double(2.5))])))
        #expect(
            try PredicateParser.parse(#"SELF != nil AND x IN {YES, no, TRUE, false, NULL, "s"}"#)
                == .and([
                    .comparison(lhs: OGExpression.evaluatedObject, op: .notEqual, rhs: .constant(.null)),
                    .comparison(
                        lhs: .keyPath(["x"]), op: .in,
                        rhs: .aggregate([
                            .constant(.boolean(true)), .constant(.boolean(false)), .constant(.boolean(true)),
                            .constant(.boolean(false)), .constant(.null), .constant(.string("s"))
                        ]))
                ]))
    }

    @Test func operatorSpellingsAndLiterals() throws {
        let spellings: [(String, ComparisonOperator)] = [
            ("==", .equal), ("=", .equal), ("!=", .notEqual), ("<>", .notEqual), ("<", .less), ("<=", .lessOrEqual),
            ("=<", .lessOrEqual), (">", .greater), (">=", .greaterOrEqual), ("=>", .greaterOrEqual),
            ("LIKE", .like), ("contains", .contains), ("BeginsWith", .beginsWith), ("ENDSWITH", .endsWith),
            ("MATCHES", .matches), ("in", .in)
        ]
        for (spelling, op) in spellings {
            #expect(
                try PredicateParser.parse("a \(spelling) 1")
                    == .comparison(lhs: .keyPath(["a"]), op: op, rhs: .constant(.integer(1))),
                "\(spelling)")
        }
        let literals: [(String, OGExpression.Literal)] = [
            ("-5", .integer(-5)), ("2.5", .double(2.5)), ("-1.5e3", .double(-1500)), ("1E2", .double(100)),
            ("'it\\'s'", .string("it's")), (#""say \"hi\"\n\t\\ \u00e9""#, .string("say \"hi\"\n\t\\ é")),
            ("''", .string("")), (#"CAST(599443200.5, "NSDate")"#, .date(599_443_200.5)),
            ("99999999999999999999", .double(1e20))
        ]
        for (text, literal) in literals {
            let predicate = try PredicateParser.parse("a == \(text)")
            #expect(predicate == .comparison(lhs: .keyPath(["a"]), op: .equal, rhs: .constant(literal)), "\(text)")
            #expect(try PredicateParser.parse(predicate.description) == predicate, "\(text)")
        }
    }

    @Test func descriptionsRoundTrip() throws {
        let texts = [
            "a == 1 AND b == 2 AND c == 3", "(a == 1 AND b == 2) AND c == 3", "a == 1 AND (b == 2 AND c == 3)",
            "NOT (a == 1 OR b == 2)", "NOT NOT a == 1", "!(TRUEPREDICATE)", "ALL x.y >=[c] 'q'",
            "NONE #in.b == $V.w.@count", "#and == 1", "SELF IN {$FETCH_SOURCE, nil}", "x.@avg.y > 0.1",
            "name MATCHES[cd] '^[a-z]+\\\\d$'", "SOME a.b == 'x'", "SELF.name.first == 1"
        ]
        for text in texts {
            let predicate = try PredicateParser.parse(text)
            #expect(try PredicateParser.parse(predicate.description) == predicate, "\(text) → \(predicate)")
        }
        for row in rows {
            let predicate = try PredicateParser.parse(row.predicate)
            #expect(try PredicateParser.parse(predicate.description) == predicate, "\(row.predicate)")
        }
        let built: OGPredicate = .or([
            .and([.constant(true), .not(.or([.constant(false), .constant(true)]))]),
            .comparison(
                lhs: .keyPath(["or"]), op: .contains, rhs: .constant(.string("\"\u{1}")), options: .caseInsensitive)
        ])
        #expect(try PredicateParser.parse(built.description) == built, "\(built)")
    }

    @Test(arguments: [
        ("age >", 6), ("name == 'unterminated", 9), ("(a == 1", 8), ("a ==== 1", 5), ("ANY", 4),
        ("name LIKE", 10), ("%@ == 1", 1), ("a == 1 AND", 11), ("a == 1 b == 2", 8), ("name", 5),
        ("a ==[x] 1", 6), ("a == {1, 2", 11), ("SUBQUERY(x, $y, $y == 1).@count > 0", 1),
        ("a BETWEEN {1}", 3), ("a == 1)", 7), ("a == @", 7)
    ])
    func malformedPredicatesSayWhereAndWhat(_ text: String, _ position: Int) {
        #expect {
            try PredicateParser.parse(text)
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == .invalidModel && error.message.contains("position \(position):")
                && error.message.contains("expected") && error.message.contains(text)
        }
    }

    @Test func messageQuotesThePredicate() {
        #expect(
            throws: ObjectGraphError(.invalidModel, "predicate \"age >\" at position 6: expected a value after \">\"")
        ) {
            try PredicateParser.parse("age >")
        }
    }
}
