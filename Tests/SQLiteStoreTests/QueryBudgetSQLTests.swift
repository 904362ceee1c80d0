import Foundation
import ObjectGraph
import SQLiteStore
import Synchronization
import TestSupport
import Testing

/// Predicate queries in SQL under a ``QueryBudget`` (issue 34): the statement stops at the
/// budget's time and when it is cancelled (SQLite's progress handler, on the statement's own
/// connection), the predicate functions count what they gather against its rows and memory, and
/// the connection serves the next query unbounded and unharmed.
@Suite(.serialized) struct QueryBudgetSQLTests {
    static let hostile =
        "projects.milestones.project.members.department.employees.projects.members.department.employees.@count > 1"

    /// A 2,000-object sample in SQLite, read-only, made once for the suite.
    static let sample: Result<PersistentStoreCoordinator, any Error> = Result {
        let url = try ScratchSpace.folder("query-budget").appendingPathComponent("Company.sqlite")
        let seed = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true)
        )
        try SampleGenerator(objectCount: 2_000).populate(seed.newContext())
        seed.close()
        return try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
    }

    private func count(_ text: String, _ budget: QueryBudget?) throws -> Int? {
        let coordinator = try Self.sample.get()
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        let predicate = try PredicateParser.parse(text)
        guard let budget else {
            return try coordinator.store.count(matching: predicate, of: employee, includingSubentities: true)
        }
        return try budget.run { () throws(ObjectGraphError) in
            try coordinator.store.count(matching: predicate, of: employee, includingSubentities: true)
        }
    }

    private func stops(_ code: ObjectGraphError.Code, _ budget: QueryBudget) {
        #expect {
            _ = try count(Self.hostile, budget)
        } throws: { error in
            (error as? ObjectGraphError)?.code == code && "\(error)".contains("the hostile path")
        }
    }

    @Test func theHostileKeyPathIsEvaluatedInSQL() throws {
        let coordinator = try Self.sample.get()
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        // Translated (not declined to memory): the budget is then SQLite's to keep.
        let budget = QueryBudget(limits: QueryLimits(time: 0.5), subject: "the hostile path")
        #expect {
            _ = try budget.run { () throws(ObjectGraphError) in
                try coordinator.store.count(
                    matching: try PredicateParser.parse(Self.hostile), of: employee, includingSubentities: true)
            }
        } throws: { ($0 as? ObjectGraphError)?.code == .timedOut }
    }

    @Test func theStatementStopsAtTheTimeLimit() throws {
        let start = Date()
        stops(.timedOut, QueryBudget(limits: QueryLimits(time: 0.5), subject: "the hostile path"))
        #expect(Date().timeIntervalSince(start) < 10)
        // The connection answers the next query, with no budget at all.
        #expect(try count("level > 5", nil) ?? 0 > 0)
    }

    /// What the predicate functions gather counts against rows and memory. (SQLite's own work,
    /// its joins and sorts, is bounded by time: the hostile path above spends its seconds sorting
    /// before the first element is gathered.)
    @Test func gatheringStopsAtTheRowsAndMemoryLimits() throws {
        let heavy = "department.employees.projects.members.department.employees.@count > 1"
        #expect {
            _ = try count(heavy, QueryBudget(limits: QueryLimits(rowsVisited: 100_000), subject: "the heavy path"))
        } throws: { error in
            (error as? ObjectGraphError)?.code == .limitExceeded && "\(error)".contains("visiting 100000 rows")
        }
        #expect {
            _ = try count(heavy, QueryBudget(limits: QueryLimits(memory: 2 << 20), subject: "the heavy path"))
        } throws: { error in
            (error as? ObjectGraphError)?.code == .limitExceeded && "\(error)".contains("more than 2 MiB")
        }
        // Within the default limits a path that gathers is answered as without a budget.
        let gathering = "department.employees.projects.@count > 40"
        let answered = try count(gathering, QueryBudget(limits: QueryLimits(), subject: "gathering"))
        #expect(answered == (try count(gathering, nil)) && answered ?? 0 > 0)
    }

    @Test func aCancelFromAnotherThreadInterruptsTheStatement() throws {
        let budget = QueryBudget(limits: QueryLimits(time: 600), subject: "the hostile path")
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.3)
            budget.cancel()
        }
        let start = Date()
        stops(.cancelled, budget)
        #expect(Date().timeIntervalSince(start) < 10)
        #expect(
            try count("level > 5", QueryBudget(limits: QueryLimits(), subject: "s")) == (try count("level > 5", nil)))
    }

    @Test func otherQueriesRunWhileOneIsStopped() throws {
        // Several readers at once: a hostile one holds its own connection, never the others'.
        let budget = QueryBudget(limits: QueryLimits(time: 600), subject: "the hostile path")
        let finished = Atomic<Bool>(false)
        Thread.detachNewThread {
            _ = try? self.count(Self.hostile, budget)
            finished.store(true, ordering: .releasing)
        }
        Thread.sleep(forTimeInterval: 0.3)
        let start = Date()
        for _ in 0..<5 { #expect(try count("salary > 100000", nil) ?? 0 > 0) }
        #expect(Date().timeIntervalSince(start) < 5, "not queued behind the hostile statement")
        let running = !finished.load(ordering: .acquiring)
        #expect(running, "the hostile statement was still running")
        budget.cancel()
        let deadline = Date().addingTimeInterval(10)
        while !finished.load(ordering: .acquiring) && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let ended = finished.load(ordering: .acquiring)
        #expect(ended)
    }
}
