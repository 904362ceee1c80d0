import CoreMetrics
import Dispatch

/// How long the requests a session serves take, per kind, recorded through swift-metrics timers
/// made by the factory given (a Prometheus histogram per kind, with the storefs executable's).
///
/// Optional: a session without timings reads no clock. With them, each request costs two reads of
/// the monotonic clock and one timer record (swift-prometheus: a short lock per kind).
///
/// Threading: immutable after init; timers are thread-safe, so record from any thread.
/// ```swift
/// let timings = RequestTimings(label: "storefs_fuse_request_seconds", factory: factory)
/// let counters = OperationCounters(timings: timings)
/// ```
public final class RequestTimings: Sendable {
    private let timers: [OperationCounters.Operation: CoreMetrics.Timer]

    /// Timers labelled `label` with dimension `op` (the ``OperationCounters/Operation`` raw value)
    /// for every kind of request.
    public init(label: String, factory: any MetricsFactory) {
        var timers: [OperationCounters.Operation: CoreMetrics.Timer] = [:]
        // FORGETs get no reply, so they are counted but not timed.
        for operation in OperationCounters.Operation.requests where operation != .forget && operation != .batchForget {
            timers[operation] = CoreMetrics.Timer(
                label: label, dimensions: [("op", operation.rawValue)], preferredDisplayUnit: .seconds,
                factory: factory)
        }
        self.timers = timers
    }

    /// Now, for ``record(_:since:)``.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Records a request of `operation` that began at `start` (``now()``).
    func record(_ operation: OperationCounters.Operation, since start: UInt64) {
        let end = Self.now()
        timers[operation]?.recordNanoseconds(Int64(clamping: end &- start))
    }
}

extension OperationCounters.Operation {
    /// The kinds that are requests from the kernel (not events such as errors or invalidations).
    public static let requests: [Self] = allCases.filter {
        ![.errors, .invalidations, .invalidationFailures, .preloads].contains($0)
    }
}
