import CoreMetrics
import Dispatch
import ObjectGraph
import Synchronization

/// The commits of a mount: how many, how long they took, and why some failed. Always counted
/// (`user.storefs.stats`, `storefs stats`); recorded through swift-metrics as well when a factory
/// is given (`storefs mount --metrics`: `storefs_commits_total`, `storefs_commit_seconds`,
/// `storefs_commit_failures_total{reason}`).
///
/// A commit is one save the mount asks of the store (the changes of a quiet spell, an fsync, a
/// close on a store that several machines write, the unmount). It fails for a reason when a
/// change of it is not saved: `conflict` (another writer changed the object), the code of the
/// store's or the object's error otherwise (`validation_failed`, `io_error`, `in_use`, ...).
///
/// Threading: safe from any thread.
public final class CommitStatistics: Sendable {
    private struct State {
        var commits = 0
        var nanoseconds: UInt64 = 0
        var failures: [String: Int] = [:]
        var failed = 0
        /// swift-metrics counters of failures, made for each reason when it first occurs.
        var failureCounters: [String: Counter] = [:]
    }

    private let state = Mutex(State())
    private let metrics: Metrics?

    private struct Metrics: Sendable {
        let factory: any MetricsFactory
        let commits: Counter
        let seconds: CoreMetrics.Timer
    }

    /// Every reason a commit can fail for: their counters exist from the start at 0, so a rate
    /// or an alert on one works before its first failure.
    static let reasons: [ObjectGraphError.Code] = [
        .conflict, .validation, .deleteDenied, .notFound, .corruptStore, .unsupported, .readOnly, .io, .exists,
        .busy, .notPermitted, .invalidModel
    ]

    /// `factory`: also record through swift-metrics (names above).
    public init(metrics factory: (any MetricsFactory)? = nil) {
        metrics = factory.map {
            Metrics(
                factory: $0, commits: Counter(label: "storefs_commits_total", factory: $0),
                seconds: CoreMetrics.Timer(
                    label: "storefs_commit_seconds", preferredDisplayUnit: .seconds, factory: $0))
        }
        if let factory {
            state.withLock { state in
                for code in Self.reasons {
                    let reason = Self.reason(code)
                    state.failureCounters[reason] = Counter(
                        label: "storefs_commit_failures_total", dimensions: [("reason", reason)], factory: factory)
                }
            }
        }
    }

    /// The monotonic clock, for ``record(since:outcome:)``.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Records a commit that began at `start` and ended with `outcome`.
    func record(since start: UInt64, outcome: SaveOutcome) {
        let elapsed = Self.now() &- start
        var reasons = Set<String>()
        if let error = outcome.storeError { reasons.insert(Self.reason(error.code)) }
        for error in outcome.failed.values { reasons.insert(Self.reason(error.code)) }
        if !outcome.conflicts.isEmpty { reasons.insert(Self.reason(.conflict)) }
        state.withLock { state in
            state.commits += 1
            state.nanoseconds &+= elapsed
            if !reasons.isEmpty { state.failed += 1 }
            for reason in reasons { state.failures[reason, default: 0] += 1 }
        }
        guard let metrics else { return }
        metrics.commits.increment()
        metrics.seconds.recordNanoseconds(Int64(clamping: elapsed))
        for reason in reasons.sorted() {
            let counter = state.withLock { state in
                if let known = state.failureCounters[reason] { return known }
                let made = Counter(
                    label: "storefs_commit_failures_total", dimensions: [("reason", reason)], factory: metrics.factory)
                state.failureCounters[reason] = made
                return made
            }
            counter.increment()
        }
    }

    /// `validation_failed` for "validation failed", `io_error` for "i/o error": an error code as a
    /// Prometheus label value.
    static func reason(_ code: ObjectGraphError.Code) -> String {
        String(
            code.rawValue.lowercased().compactMap { character -> Character? in
                if character.isLetter || character.isNumber { return character }
                return character == " " || character == "-" ? "_" : nil
            })
    }

    /// What was counted so far.
    public struct Snapshot: Sendable, Hashable {
        public var commits: Int
        /// Commits with at least one failure.
        public var failed: Int
        public var seconds: Double
        public var failures: [String: Int]
    }

    public var snapshot: Snapshot {
        state.withLock {
            Snapshot(
                commits: $0.commits, failed: $0.failed, seconds: Double($0.nanoseconds) / 1e9, failures: $0.failures)
        }
    }
}
