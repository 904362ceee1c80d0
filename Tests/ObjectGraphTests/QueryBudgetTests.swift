import Foundation
import Synchronization
import Testing

@testable import ObjectGraph

private typealias OGPredicate = ObjectGraph.Predicate

/// Queries are bounded (issue 34): the in-memory evaluator stops at a budget's limits and when the
/// budget is cancelled, with the budget's error; constant IN lists are sets that answer as the
/// evaluator's comparisons do; an object deleted while a query runs matches nothing.
@Suite struct QueryBudgetTests {
    /// The key path of issue 34: each step over a to-many relationship multiplies the values
    /// gathered (1.7 GB and growing from a 2,000-object store, before budgets).
    static let hostile =
        "projects.milestones.project.members.department.employees.projects.members.department.employees.@count > 1"

    /// One sample company in memory, shared by the suite (made once: 600 objects, on which the
    /// hostile path gathers tens of millions of values).
    static let sample: PersistentStoreCoordinator = {
        let coordinator = makeSampleCoordinator()
        try? SampleGenerator(objectCount: 600).populate(coordinator.newContext())
        return coordinator
    }()

    private func hostileCount(_ budget: QueryBudget) throws -> Int {
        let context = Self.sample.newContext()
        let employee = context.model.id("Employee")
        let predicate = try PredicateParser.parse(Self.hostile)
        return try budget.run { () throws(ObjectGraphError) in
            try context.objects(matching: predicate, of: employee, strategy: .inMemory).count
        }
    }

    private func expectStop(_ code: ObjectGraphError.Code, _ text: String, _ body: () throws -> Void) {
        #expect {
            try body()
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == code && error.message.contains(text)
        }
    }

    @Test func theHostileKeyPathStopsAtTheRowsLimit() {
        let budget = QueryBudget(limits: QueryLimits(rowsVisited: 200_000), subject: "the hostile path")
        expectStop(.limitExceeded, "the hostile path: stopped after visiting 200000 rows") {
            _ = try hostileCount(budget)
        }
        #expect(budget.stopReason == .rows)
        #expect(budget.rowsVisited < 400_000, "stopped soon after the limit, not after gathering everything")
    }

    @Test func theHostileKeyPathStopsAtTheMemoryLimit() {
        let budget = QueryBudget(limits: QueryLimits(memory: 4 << 20), subject: "the hostile path")
        expectStop(.limitExceeded, "more than 4 MiB") { _ = try hostileCount(budget) }
        #expect(budget.stopReason == .memory)
    }

    @Test func theHostileKeyPathStopsAtTheTimeLimit() {
        let budget = QueryBudget(limits: QueryLimits(time: 0.3), subject: "the hostile path")
        let start = Date()
        expectStop(.timedOut, "stopped after 0.3 s") { _ = try hostileCount(budget) }
        #expect(Date().timeIntervalSince(start) < 10, "the time limit ends it, not the work")
    }

    @Test func aCancelFromAnotherThreadStopsItAtOnce() {
        let budget = QueryBudget(limits: QueryLimits(time: 600), subject: "the hostile path")
        let cancelled = Atomic<Bool>(false)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.3)
            cancelled.store(true, ordering: .releasing)
            budget.cancel()
        }
        let start = Date()
        expectStop(.cancelled, "cancelled") { _ = try hostileCount(budget) }
        let wasCancelled = cancelled.load(ordering: .acquiring)
        #expect(wasCancelled)
        #expect(Date().timeIntervalSince(start) < 10)
    }

    @Test func stopActionsRunOnceAndNotAfterRemoval() {
        let budget = QueryBudget(limits: QueryLimits(), subject: "s")
        let ran = Atomic<Int>(0)
        let kept = budget.onStop { ran.add(1, ordering: .relaxed) }
        let removed = budget.onStop { ran.add(100, ordering: .relaxed) }
        budget.removeStopAction(removed)
        budget.cancel()
        budget.cancel()
        let once = ran.load(ordering: .relaxed)
        #expect(kept != 0 && once == 1)
        // Registered after the stop: runs at once.
        _ = budget.onStop { ran.add(10, ordering: .relaxed) }
        let after = ran.load(ordering: .relaxed)
        #expect(after == 11)
        #expect(budget.remainingTime > 0 && budget.stopReason == .cancelled)
    }

    @Test func anOrdinaryQueryUnderTheDefaultLimitsIsAnswered() throws {
        let context = Self.sample.newContext()
        let predicate = try PredicateParser.parse(
            "ANY projects.milestones.done == NO AND department.employees.@count > 3")
        let employee = context.model.id("Employee")
        let bounded = try QueryBudget(limits: QueryLimits(), subject: "s").run { () throws(ObjectGraphError) in
            try context.objects(matching: predicate, of: employee, strategy: .inMemory)
        }
        #expect(!bounded.isEmpty)
        #expect(bounded == (try context.objects(matching: predicate, of: employee, strategy: .inMemory)))
    }

    // MARK: - IN lists

    /// Values of every kind the evaluator compares, for lists and for what is looked up in them.
    static let values: [PredicateEvaluator.Value] = [
        .null, .integer(0), .integer(5), .integer(-3), .integer(Int64.max), .integer(1 << 53 + 1), .double(5),
        .double(5.5), .double(Double(1 << 53)), .decimal(5), .decimal(Decimal(string: "5.5")!), .boolean(true),
        .boolean(false), .date(5), .string("5"), .string(" 5 "), .string("x"), .string("é"), .string("e\u{301}"),
        .string("É"), .string(""), .uuid(UUID(uuidString: "7E5A9E55-6C5B-4D0E-9C3E-2B9F1C2E3D4F")!),
        .string("7E5A9E55-6C5B-4D0E-9C3E-2B9F1C2E3D4F"), .data(Data([1])),
        .object(ObjectID(entity: EntityID(1), key: PrimaryKey(5))),
        .object(ObjectID(entity: EntityID(2), key: PrimaryKey(5))), .list([.integer(5)])
    ]

    @Test(arguments: [ComparisonOptions(), .caseInsensitive, [.caseInsensitive, .diacriticInsensitive]])
    func aMembershipSetAnswersAsTheEvaluatorsComparisons(_ options: ComparisonOptions) {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let count = Int.random(in: 0...40, using: &random)
            let list = (0..<count).map { _ in Self.values.randomElement(using: &random)! }
            let set = MembershipSet(list)
            for value in Self.values {
                let expected = list.contains { PredicateEvaluator.equal(value, $0, options) }
                #expect(set.contains(value, options) == expected, "\(value) in \(list) with \(options)")
            }
        }
    }

    @Test func aLargeInListSelectsWhatAnOrOfEqualitiesSelects() throws {
        let context = Self.sample.newContext()
        let employee = context.model.id("Employee")
        let numbers = (0..<6000).filter { $0 % 3 != 1 }.map(String.init).joined(separator: ", ")
        let inList = try context.objects(
            matching: try PredicateParser.parse("employeeID IN {\(numbers)}"), of: employee, strategy: .inMemory)
        // The same objects another way (employee IDs are below 6,000 in the sample).
        let everyOther = try context.objects(
            matching: try PredicateParser.parse("employeeID < 6000"), of: employee, strategy: .inMemory
        ).filter {
            guard case .integer(let id)? = try context.value(of: "employeeID", for: $0) else { return false }
            return id % 3 != 1
        }
        #expect(!inList.isEmpty && inList == everyOther)
        let ors = (0..<300).map { "employeeID == \($0)" }.joined(separator: " OR ")
        let small = (0..<300).map(String.init).joined(separator: ", ")
        #expect(
            try context.objects(matching: try PredicateParser.parse(ors), of: employee, strategy: .inMemory)
                == context.objects(
                    matching: try PredicateParser.parse("employeeID IN {\(small)}"), of: employee, strategy: .inMemory))
        let none = try context.objects(
            matching: try PredicateParser.parse(
                "NONE projects.name IN {\((0..<50).map { "'x\($0)'" }.joined(separator: ", "))}"),
            of: employee, strategy: .inMemory)
        #expect(none.count == (try context.objectIDs(of: employee, includingSubentities: true)).count)
    }

    // MARK: - Objects deleted while a query runs

    /// Issue 34: reads of `.count` and `.json` answered ENOENT while another process inserted and
    /// deleted objects, because an object listed by the evaluator was gone when it was read. One
    /// thread inserts and deletes (each delete of an object the other may just have listed) while
    /// another evaluates in memory: every evaluation must answer.
    @Test func objectsDeletedWhileAQueryRunsMatchNothing() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        try SampleGenerator(objectCount: 300).populate(context)
        let employee = context.model.id("Employee")
        let predicate = try PredicateParser.parse("level > 5 OR lastName == 'Doe'")
        let stop = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let writer = Thread {
            var previous: ObjectID?
            while !stop.load(ordering: .relaxed) {
                do {
                    // Pending changes: the evaluator lists inserted objects too, and a delete of
                    // one makes it vanish entirely.
                    let id = try context.insertObject(of: employee)
                    try context.setValue(.string("Doe"), of: "lastName", for: id)
                    if let previous { _ = try context.delete(previous) }
                    previous = id
                } catch {
                    failures.withLock { $0.append("writer: \(error)") }
                    return
                }
            }
        }
        writer.start()
        defer { stop.store(true, ordering: .relaxed) }
        for _ in 0..<100 {
            do {
                _ = try context.objects(matching: predicate, of: employee, strategy: .inMemory)
                _ = try context.count(matching: predicate, of: employee, strategy: .inMemory)
            } catch {
                failures.withLock { $0.append("query: \(error)") }
            }
        }
        stop.store(true, ordering: .relaxed)
        #expect(failures.withLock { $0 } == [])
    }
}
