import Foundation
import ObjectGraph
import PostgresStore
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A query answered in SQL on PostgreSQL stays within its ``QueryBudget``: the time limit and an
/// interrupt end the wait for the server (nothing in the server polls the budget), even when the
/// server does not answer at all (stopped with SIGSTOP), long before the statement timeout.
@Suite(.serialized) struct PostgresQueryBudgetTests {
    @Test func aQueryOnAStoppedServerEndsAtItsTimeLimitOrWhenCancelled() throws {
        let server = try PostgresServer(name: "budget")
        defer { server.remove() }
        // A statement timeout of 60 s: what the budget must beat.
        let url = URL(string: server.url(schema: "budget").absoluteString + "&timeout=60")!
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [PostgresStoreType()], model: SampleModel.make(),
            options: StoreOptions(createIfMissing: true))
        defer { coordinator.close() }
        try SampleGenerator(objectCount: 200, seed: 5).populate(coordinator.newContext())
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        let predicate = try PredicateParser.parse("salary > 1000 AND level < 3")
        let expected = try coordinator.newContext().count(matching: predicate, of: employee, strategy: .inMemory)
        #expect(try coordinator.store.count(matching: predicate, of: employee, includingSubentities: true) == expected)

        try server.signalAll(SIGSTOP)
        var stopped = true
        defer { if stopped { try? server.signalAll(SIGCONT) } }

        // The time limit: 1.5 s.
        let timed = QueryBudget(limits: QueryLimits(time: 1.5), subject: "a count")
        var started = Date()
        var failure: ObjectGraphError?
        do {
            _ = try timed.run { () throws(ObjectGraphError) in
                try coordinator.store.count(matching: predicate, of: employee, includingSubentities: true)
            }
        } catch { failure = error }
        var waited = Date().timeIntervalSince(started)
        #expect(failure != nil && timed.stopReason == .time, "\(String(describing: failure))")
        #expect(failure?.code == timed.error.code, "the budget's error: \(String(describing: failure))")
        #expect(waited < 10, "ended at the time limit, not the statement timeout: \(waited) s")

        // An interrupt from another thread, without a time limit.
        let interrupted = QueryBudget(limits: QueryLimits(time: .infinity), subject: "a listing")
        let canceller = Thread {
            Thread.sleep(forTimeInterval: 1)
            interrupted.cancel()
        }
        started = Date()
        canceller.start()
        failure = nil
        do {
            _ = try interrupted.run { () throws(ObjectGraphError) in
                try coordinator.store.objectIDs(matching: predicate, of: employee, includingSubentities: true)
            }
        } catch { failure = error }
        waited = Date().timeIntervalSince(started)
        #expect(failure != nil && interrupted.stopReason == .cancelled, "\(String(describing: failure))")
        #expect(waited < 10, "ended when cancelled: \(waited) s")

        // The server back: the store answers again on a new connection.
        try server.signalAll(SIGCONT)
        stopped = false
        #expect(try coordinator.store.count(matching: predicate, of: employee, includingSubentities: true) == expected)
    }
}
