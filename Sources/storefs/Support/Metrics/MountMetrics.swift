import CoreMetrics
import FuseKit
import Foundation
import ObjectGraph
import Prometheus
import StoreFS
import Synchronization

/// A mount's metrics (`storefs mount --metrics`), as Prometheus text: what FuseKit and StoreFS
/// record through swift-metrics (request and commit durations, commits and their failures) into a
/// swift-prometheus registry, and what the mount counts anyway (requests, invalidations, the row
/// cache, a PostgreSQL store's connections), read when Prometheus scrapes. docs/PRODUCTION.md lists
/// every metric.
///
/// Counts kept elsewhere (``OperationCounters``, the row cache's, the store's) are mirrored into
/// Prometheus counters at each scrape by what they grew since the last one: the hot paths keep
/// their one atomic add, and a counter never goes down.
///
/// Threading: ``exposition()`` runs on the metrics server's thread; the rest is set up before the
/// mount and read-only after (``attach(_:)`` once).
final class MountMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    let factory: PrometheusMetricsFactory
    /// Requests counted, and timed (``RequestTimings``), for the FUSE session.
    let counters: OperationCounters
    let commits: CommitStatistics
    private let coordinators = Mutex<(@Sendable () -> [PersistentStoreCoordinator])?>(nil)
    /// Values of mirrored counts at the last scrape, by metric and label.
    private let mirrored = Mutex<[String: Int]>([:])
    private let isPostgres: Bool

    /// Durations of FUSE requests: most take tens of microseconds, a cold directory page or a
    /// commit waited on by fsync milliseconds to seconds.
    static let requestBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
        .seconds(10)
    ]
    /// Durations of commits: one transaction of a few objects to a migration's thousands.
    static let commitBuckets: [Duration] = [
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30)
    ]

    init(source: String, storeType: String, version: String) {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            "storefs_fuse_request_seconds": Self.requestBuckets, "storefs_commit_seconds": Self.commitBuckets
        ]
        self.factory = factory
        counters = OperationCounters(
            timings: RequestTimings(label: "storefs_fuse_request_seconds", factory: factory))
        commits = CommitStatistics(metrics: factory)
        isPostgres = storeType == "PostgreSQL"
        registry.makeGauge(
            descriptor: Self.name(
                "storefs_mount_info",
                help: "The mounted store (its path or URL without password), its type and storefs's version; always 1."),
            labels: [("store", source), ("type", storeType), ("version", version)]
        ).set(to: 1)
    }

    /// Where the mount's row caches and store are found at each scrape: a store mount's one
    /// coordinator, a folder mount's open ones.
    func attach(_ coordinators: @escaping @Sendable () -> [PersistentStoreCoordinator]) {
        self.coordinators.withLock { $0 = coordinators }
    }

    // MARK: - Exposition

    /// The Prometheus text of every metric, read now.
    func exposition() -> [UInt8] {
        collect()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(32 << 10)
        registry.emit(into: &buffer)
        return buffer
    }

    private func collect() {
        for operation in OperationCounters.Operation.requests {
            mirror(
                "storefs_fuse_requests_total", labels: [("op", operation.rawValue)],
                help: "FUSE requests served, by kind (op: lookup, getattr, read, write, readdirplus, ...).",
                to: counters.count(of: operation))
        }
        mirror(
            "storefs_fuse_errors_total", help: "FUSE requests answered with an error (any errno, ENOENT included).",
            to: counters.count(of: .errors))
        mirror(
            "storefs_kernel_invalidations_total",
            help:
                "Cache invalidations sent to the kernel (entries, attributes, pages) and pages stored into its cache.",
            to: counters.count(of: .invalidations))
        mirror(
            "storefs_kernel_invalidation_failures_total",
            help: "Invalidations the kernel refused (it had nothing cached for them).",
            to: counters.count(of: .invalidationFailures))
        let coordinators = self.coordinators.withLock { $0 }?() ?? []
        var objects = 0
        var bytes = 0
        var hits = 0
        var misses = 0
        var storeRequests = 0
        var connections = ConnectionStatistics()
        for coordinator in coordinators {
            let cache = coordinator.rowCache.statistics
            objects += cache.snapshots
            bytes += cache.bytes
            hits += cache.hits
            misses += cache.misses
            storeRequests += coordinator.store.requestCount
            if let reporting = coordinator.store as? any ConnectionReportingStore {
                let statistics = reporting.connectionStatistics
                connections.connections += statistics.connections
                connections.reconnects += statistics.reconnects
                connections.announcements += statistics.announcements
                connections.announcementLag = statistics.announcementLag ?? connections.announcementLag
            }
        }
        registry.makeGauge(
            descriptor: Self.name("storefs_cache_objects", help: "Objects whose rows the row cache holds.")
        ).set(
            to: Double(objects))
        registry.makeGauge(
            descriptor: Self.name("storefs_cache_bytes", help: "Bytes the row cache holds (its estimate).")
        ).set(
            to: Double(bytes))
        mirror("storefs_cache_hits_total", help: "Rows found in the row cache.", to: hits)
        mirror("storefs_cache_misses_total", help: "Rows the row cache did not hold (read from the store).", to: misses)
        mirror(
            "storefs_store_requests_total", help: "Requests made of the store (SQL statements).", to: storeRequests)
        guard isPostgres else { return }
        registry.makeGauge(
            descriptor: Self.name(
                "storefs_postgres_connections",
                help: "Connections open to the PostgreSQL server (reads, saves, listener).")
        ).set(to: Double(connections.connections))
        mirror(
            "storefs_postgres_reconnects_total",
            help: "Connections made again after one failed (the listener's; the readers' after an error).",
            to: connections.reconnects)
        mirror(
            "storefs_postgres_announcements_total", help: "Announcements of other writers' commits heard.",
            to: connections.announcements)
        registry.makeGauge(
            descriptor: Self.name(
                "storefs_postgres_announcement_lag_seconds",
                help:
                    "Seconds from the last announced commit (the writer's clock) to its arrival here; -1 before the first."
            )
        ).set(to: connections.announcementLag ?? -1)
    }

    /// swift-prometheus names a metric by its parts; storefs's names are whole (docs/PRODUCTION.md),
    /// so the part after the last `_` is given as the unit and the parts join back to the name.
    static func name(_ name: String, help: String) -> MetricNameDescriptor {
        guard let cut = name.lastIndex(of: "_"), cut != name.startIndex else {
            return MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
        }
        return MetricNameDescriptor(
            metricName: String(name[..<cut]), unitName: String(name[name.index(after: cut)...]), helpText: help)
    }

    /// Raises counter `name` by what `value` grew since the last scrape.
    private func mirror(_ name: String, labels: [(String, String)] = [], help: String, to value: Int) {
        let key = name + labels.map { "|\($0.0)=\($0.1)" }.joined()
        let grown = mirrored.withLock { last -> Int in
            defer { last[key] = max(last[key] ?? 0, value) }
            return value - (last[key] ?? 0)
        }
        let counter = registry.makeCounter(descriptor: Self.name(name, help: help), labels: labels)
        if grown > 0 { counter.increment(by: Int64(grown)) }
    }
}
