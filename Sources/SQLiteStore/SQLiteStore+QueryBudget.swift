import Foundation
import GRDB
import GRDBSQLite
import ObjectGraph

/// Predicate statements under the evaluation's ``QueryBudget`` (``QueryBudget/current``): SQLite
/// polls it while the statement runs and the predicate functions count what they gather, so a
/// statement that would run for minutes or gather gigabytes stops at the budget's limit, or as
/// soon as its request is interrupted, with the budget's error.
extension SQLiteStore {
    /// SQLite virtual-machine steps between two polls of the budget: a few microseconds of work,
    /// so a stop is seen at once and polling costs nothing measurable.
    static let budgetPollSteps: Int32 = 1000

    /// Runs `body`, the statements of one predicate query on `db` (the connection of this read,
    /// held for the whole of it), under the current budget: a progress handler on this connection
    /// alone interrupts the statement when the budget must stop (no other connection, and so no
    /// other request, is touched), and any error the stop caused becomes the budget's error.
    func bounded<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        guard let budget = QueryBudget.current, let connection = db.sqliteConnection else { return try body() }
        try budget.check()
        sqlite3_progress_handler(
            connection, Self.budgetPollSteps,
            { budget in
                guard let budget else { return 0 }
                return Unmanaged<QueryBudget>.fromOpaque(budget).takeUnretainedValue().shouldStop() ? 1 : 0
            }, Unmanaged.passUnretained(budget).toOpaque())
        // Removed before the connection goes back to the pool: `budget` is not retained by it.
        defer { sqlite3_progress_handler(connection, 0, nil, nil) }
        do {
            let result = try body()
            try budget.check()
            return result
        } catch {
            // SQLITE_INTERRUPT from the handler, or a predicate function's refusal.
            if budget.stopReason != nil { throw budget.error }
            throw error
        }
    }
}
