import Synchronization

/// What Core Data's trigger hooks reported during one write transaction: the rows triggers
/// changed (a derived count, a Photos counter), so that the objects they belong to are read
/// afresh once the transaction commits.
///
/// Threading: safe from any thread. Only the writer connection runs triggers, and GRDB runs one
/// write at a time, so a save brackets its statements with ``begin()`` and ``drain()`` inside
/// its write transaction and gets exactly its own reports.
final class TriggerEffects: Sendable {
    /// A row a trigger changed: its Z_ENT and Z_PK, and the property or column it reported.
    struct Report: Hashable, Sendable {
        var zent: Int64
        var key: Int64
        var name: String
    }

    private struct State {
        var reports: Set<Report> = []
        var overflowed = false
        var malformed: [String: Int] = [:]
    }

    /// More distinct rows than this in one transaction are counted but not kept: the save then
    /// refreshes everything (see ``drain()``). A bound, because a trigger may touch any number.
    static let limit = 100_000

    private let state = Mutex(State())

    /// Starts a transaction's collection, dropping what a transaction that failed left.
    func begin() {
        state.withLock { $0 = State() }
    }

    func record(table: String, zent: Int64, key: Int64, name: String) {
        state.withLock { state in
            let report = Report(zent: zent, key: key, name: name)
            if state.reports.count < Self.limit {
                state.reports.insert(report)
            } else if !state.reports.contains(report) {
                state.overflowed = true
            }
        }
    }

    func recordMalformed(_ function: String) {
        state.withLock { $0.malformed[function, default: 0] += 1 }
    }

    /// This transaction's reports (one per row and name, however often a trigger reported it),
    /// whether some were left out past ``limit``, and the calls with unexpected arguments.
    func drain() -> (reports: Set<Report>, overflowed: Bool, malformed: [String: Int]) {
        state.withLock { state in
            let result = (state.reports, state.overflowed, state.malformed)
            state = State()
            return result
        }
    }
}
