import Foundation
import Synchronization

/// What one query may still spend, and whether it must stop: checked as the query goes by every
/// engine that evaluates it, so a hostile predicate ends with an error instead of the mount.
///
/// One budget per evaluation (a query folder's listing, its `.count`, a page of an export), made
/// from ``QueryLimits``. Whoever evaluates asks it as they go:
/// - the in-memory evaluator (``PredicateEvaluator``) counts each object it tests and each value
///   a key path gathers (``visit(_:)``, ``hold(_:)``);
/// - an SQL engine polls ``shouldStop()`` while its statement runs (SQLite: a progress handler on
///   the statement's own connection) and counts what its predicate functions gather; an engine
///   with a server (PostgreSQL) gives the statement ``remainingTime`` as its `statement_timeout`
///   and registers a cancel request (`PQcancel`) with ``onStop(_:)`` for the duration of the
///   statement, so a stop reaches the server at once.
///
/// A budget stops for the first of: its time passed, too many rows visited, too much memory held,
/// or ``cancel()`` (the FUSE request was interrupted: its reader was killed or gave up). Once
/// stopped it stays stopped, and every check throws ``error``.
///
/// The budget of the evaluation running on a thread is ``current`` (a task-local value, bound by
/// the caller around the evaluation with `QueryBudget.$current.withValue(budget) { ... }`): the
/// engine's layers between the caller and the store (context, store protocol, SQL functions
/// called by SQLite) pass it on without a parameter in every signature. On a thread that runs no
/// task, Swift keeps task-local values per thread, so the binding is seen exactly by the thread
/// that made it; work handed to another thread must bind it there again.
///
/// Threading: safe from any thread; ``cancel()`` is meant to come from another one.
public final class QueryBudget: Sendable {
    /// Why a budget stopped.
    public enum Stop: Int, Sendable {
        case cancelled = 1
        case time = 2
        case rows = 3
        case memory = 4
    }

    /// The budget of the evaluation running on this thread, if it is bounded.
    @TaskLocal public static var current: QueryBudget?

    public let limits: QueryLimits
    /// What is evaluated, for messages (".query/Employee/level > 5").
    public let subject: String
    /// Monotonic nanoseconds at which ``QueryLimits/time`` runs out; UInt64.max for none.
    private let deadline: UInt64
    private let started: UInt64
    private let visited = Atomic<Int>(0)
    private let held = Atomic<Int>(0)
    /// 0 while running, else a ``Stop`` raw value.
    private let stopped = Atomic<Int>(0)
    private let actions = Mutex<(next: Int, registered: [Int: @Sendable () -> Void])>((0, [:]))

    public init(limits: QueryLimits, subject: String) {
        self.limits = limits
        self.subject = subject
        started = Self.now()
        if limits.time.isFinite, limits.time >= 0, limits.time < 1e9 {
            deadline = started &+ UInt64(limits.time * 1e9)
        } else {
            deadline = .max
        }
    }

    // MARK: - Checking

    /// Why the budget stopped; nil while it runs (the time limit is looked at only by checks).
    public var stopReason: Stop? { Stop(rawValue: stopped.load(ordering: .acquiring)) }

    /// Throws ``error`` once the budget stopped or its time passed.
    public func check() throws(ObjectGraphError) {
        if shouldStop() { throw error }
    }

    /// Whether the evaluation must stop now: cheap enough to call every few thousand steps of an
    /// SQL statement (an atomic load and a monotonic clock read).
    public func shouldStop() -> Bool {
        if stopped.load(ordering: .relaxed) != 0 { return true }
        if deadline != .max && Self.now() >= deadline {
            stop(.time)
            return true
        }
        return false
    }

    /// Counts `count` rows or values visited; throws once too many were, or the budget stopped.
    public func visit(_ count: Int = 1) throws(ObjectGraphError) {
        let total = visited.wrappingAdd(max(count, 0), ordering: .relaxed).newValue
        if total > limits.rowsVisited || total < 0 { stop(.rows) }
        // The clock every 1,024 visits (a visit is a few nanoseconds of work).
        if stopped.load(ordering: .relaxed) != 0 || total & 1023 < count { try check() }
    }

    /// Counts `bytes` more held by the evaluation; throws once more than the limit are.
    public func hold(_ bytes: Int) throws(ObjectGraphError) {
        let total = held.wrappingAdd(max(bytes, 0), ordering: .relaxed).newValue
        if total > limits.memory || total < 0 { stop(.memory) }
        if stopped.load(ordering: .relaxed) != 0 { throw error }
    }

    /// Rows and values visited so far.
    public var rowsVisited: Int { visited.load(ordering: .relaxed) }
    /// Bytes counted by ``hold(_:)`` so far.
    public var bytesHeld: Int { held.load(ordering: .relaxed) }

    /// Seconds left before the time limit; `.infinity` without one, 0 once passed.
    public var remainingTime: Double {
        guard deadline != .max else { return .infinity }
        let now = Self.now()
        return now >= deadline ? 0 : Double(deadline - now) / 1e9
    }

    /// Runs `body` with this budget as ``current`` (on this thread), and fails with ``error`` if
    /// the budget stopped while it ran, whatever error that made `body` throw.
    public func run<T>(_ body: () throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        let outcome = Self.$current.withValue(self) { () -> Result<T, ObjectGraphError> in
            do throws(ObjectGraphError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }
        if case .failure = outcome, stopReason != nil { throw error }
        return try outcome.get()
    }

    // MARK: - Stopping

    /// Stops the evaluation: its request was interrupted. The engine's stop actions run now.
    public func cancel() { stop(.cancelled) }

    private func stop(_ reason: Stop) {
        guard stopped.compareExchange(expected: 0, desired: reason.rawValue, ordering: .acquiringAndReleasing).exchanged
        else { return }
        // Run under the lock: an engine removing its action after its statement ended then knows
        // no action of it is running or will run (a cancel sent to a connection already reused
        // by another statement would stop that one).
        actions.withLock { state in
            for action in state.registered.values { action() }
            state.registered = [:]
        }
    }

    /// Registers `action` to run once when the budget stops (at once when it already has): an
    /// engine's way to stop a statement it cannot poll (`PQcancel`). Remove it with
    /// ``removeStopAction(_:)`` as soon as the statement ends. Actions must be quick and must not
    /// call back into the budget.
    public func onStop(_ action: @escaping @Sendable () -> Void) -> Int {
        let token: Int? = actions.withLock { state in
            guard stopped.load(ordering: .acquiring) == 0 else { return nil }
            state.next += 1
            state.registered[state.next] = action
            return state.next
        }
        guard let token else {
            action()
            return 0
        }
        return token
    }

    /// Forgets the action ``onStop(_:)`` returned `token` for; once this returns it will not run.
    public func removeStopAction(_ token: Int) {
        actions.withLock { _ = $0.registered.removeValue(forKey: token) }
    }

    // MARK: - The error

    /// The error a stopped evaluation fails with: what was evaluated, which limit stopped it,
    /// and what to do.
    public var error: ObjectGraphError {
        switch stopReason {
        case .cancelled:
            return ObjectGraphError(
                .cancelled, "\(subject): cancelled, its request was interrupted (the reader is gone)")
        case .time, nil:
            return ObjectGraphError(
                .timedOut,
                "\(subject): stopped after \(Self.seconds(limits.time)) s, the time one query may take "
                    + "(query_time); narrow the predicate (key paths over to-many relationships multiply) "
                    + "or raise the limit")
        case .rows:
            return ObjectGraphError(
                .limitExceeded,
                "\(subject): stopped after visiting \(limits.rowsVisited) rows and values, the most one query "
                    + "may visit (query_rows); narrow the predicate (key paths over to-many relationships "
                    + "multiply) or raise the limit")
        case .memory:
            return ObjectGraphError(
                .limitExceeded,
                "\(subject): stopped holding more than \(Self.bytes(limits.memory)) of values, the most one query "
                    + "may hold (query_memory); narrow the predicate or raise the limit")
        }
    }

    private static func bytes(_ value: Int) -> String {
        value >= 1 << 20 && value % (1 << 20) == 0 ? "\(value >> 20) MiB" : "\(value) bytes"
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() && value < 1e15 ? String(Int64(value)) : String(value)
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
