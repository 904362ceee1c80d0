import ArgumentParser
import Foundation

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a mount's activity, refreshed every second (as iostat 1 or juicefs stats).",
        discussion: """
            Reads the mount's counters (the extended attribute user.storefs.stats of its root) every \
            interval and prints a line of rates: FUSE requests per second, in all and by kind, \
            errors, commits per second and their mean latency, failed commits, the row cache \
            (objects, MiB, hit ratio) and kernel invalidations. The one read per interval that \
            stats itself makes is left out. --once --json prints one sample for scripts: the \
            totals and the rates over one interval. Works for every mount, with or without \
            --metrics.
            """)

    @Argument(help: "The mount point of a storefs mount.")
    var mountPoint: String

    @Option(name: .long, help: ArgumentHelp("Seconds between samples (0.1 to 3600).", valueName: "SECONDS"))
    var interval: Double = 1

    @Option(name: .long, help: ArgumentHelp("Stop after N lines.", valueName: "N"))
    var count: Int?

    @Flag(name: .long, help: "Print one sample (the rates over one interval) and exit.")
    var once = false

    @Flag(name: .long, help: "Print JSON (with --once: one object; else one object per line).")
    var json = false

    /// Request kinds with a column of their own; the rest add up in `other`.
    static let columns = ["lookup", "getattr", "read", "write", "readdirplus"]
    /// Lines between repeated headers.
    static let headerEvery = 20

    func validate() throws {
        guard interval.isFinite, interval >= 0.1, interval <= 3600 else {
            throw ValidationError("--interval takes 0.1 to 3600 seconds")
        }
        if let count, count < 1 { throw ValidationError("--count takes 1 or more") }
    }

    func run() throws {
        var previous = try sample()
        var lines = 0
        while true {
            Thread.sleep(forTimeInterval: interval)
            let current = try sample()
            let rates = Rates(from: previous, to: current)
            // Each line written at once (not held in stdio's buffer when the output is a pipe).
            var text = ""
            if json {
                let data = try JSONSerialization.data(
                    withJSONObject: rates.json(mountPoint: mountPoint, totals: current.raw),
                    options: once ? [.prettyPrinted, .sortedKeys] : [.sortedKeys])
                text = String(decoding: data, as: UTF8.self) + "\n"
            } else {
                if lines % Self.headerEvery == 0 { text += Rates.header + "\n" }
                text += rates.line + "\n"
            }
            try FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
            lines += 1
            if once || lines >= (count ?? Int.max) { return }
            previous = current
        }
    }

    /// The mount's counters now.
    private func sample() throws -> Sample {
        switch ExtendedAttribute.value("user.storefs.stats", at: mountPoint) {
        case .success(let data):
            guard let raw = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                printError("storefs stats: \(mountPoint): user.storefs.stats is not the counters of a storefs mount")
                throw ExitCode(1)
            }
            return Sample(time: Date(), raw: raw)
        case .failure(let error):
            printError(
                "storefs stats: \(mountPoint) is not a storefs mount (reading user.storefs.stats: \(error.localizedDescription))"
            )
            throw ExitCode(1)
        }
    }

    struct Sample {
        var time: Date
        var raw: [String: Any]

        func integer(_ key: String) -> Int { (raw[key] as? NSNumber)?.intValue ?? 0 }
        var requests: [String: Int] {
            ((raw["fuse"] as? [String: Any]) ?? [:]).compactMapValues { ($0 as? NSNumber)?.intValue }
        }
        var saves: [String: Any] { (raw["saves"] as? [String: Any]) ?? [:] }
        func save(_ key: String) -> Double { (saves[key] as? NSNumber)?.doubleValue ?? 0 }
    }

    /// Rates between two samples.
    struct Rates {
        var time: Date
        var seconds: Double
        var requests: Double
        var byKind: [String: Double]
        var errors: Double
        var commits: Double
        var commitLatency: Double?
        var failedCommits: Double
        var invalidations: Double
        var cachedObjects: Int
        var cacheBytes: Int
        var hitRatio: Double?

        /// Counts that are events, not requests.
        static let events: Set<String> = ["errors", "invalidations", "invalidationFailures", "preloads"]

        init(from old: Sample, to new: Sample) {
            time = new.time
            seconds = max(new.time.timeIntervalSince(old.time), 0.001)
            var kinds: [String: Double] = [:]
            var total = 0.0
            let before = old.requests
            for (kind, count) in new.requests where !Self.events.contains(kind) {
                // stats's own read of the counters: one GETXATTR per sample.
                let grown = max(0, count - (before[kind] ?? 0) - (kind == "getxattr" ? 1 : 0))
                kinds[kind] = Double(grown) / seconds
                total += Double(grown)
            }
            byKind = kinds
            requests = total / seconds
            errors = Double(max(0, (new.requests["errors"] ?? 0) - (before["errors"] ?? 0))) / seconds
            invalidations =
                Double(max(0, (new.requests["invalidations"] ?? 0) - (before["invalidations"] ?? 0))) / seconds
            let saved = max(0, new.save("count") - old.save("count"))
            commits = saved / seconds
            commitLatency = saved > 0 ? max(0, new.save("seconds") - old.save("seconds")) / saved : nil
            failedCommits = max(0, new.save("failed") - old.save("failed")) / seconds
            cachedObjects = new.integer("cachedObjects")
            cacheBytes = new.integer("cacheBytes")
            let hits = new.integer("cacheHits") - old.integer("cacheHits")
            let misses = new.integer("cacheMisses") - old.integer("cacheMisses")
            hitRatio = hits + misses > 0 ? Double(hits) / Double(hits + misses) : nil
        }

        static let header =
            "time      req/s  lookup getattr    read   write  readdir   other  err/s  commit/s  commit-ms  fail/s  objects  cache-MiB  hit%  inval/s"

        var line: String {
            let clock = DateFormatter()
            clock.dateFormat = "HH:mm:ss"
            let other = byKind.filter { !Stats.columns.contains($0.key) }.values.reduce(0, +)
            func n(_ value: Double, _ width: Int) -> String {
                let text = value >= 100 || value == 0 ? String(Int(value.rounded())) : String(format: "%.1f", value)
                return String(repeating: " ", count: max(0, width - text.count)) + text
            }
            var parts = [clock.string(from: time), n(requests, 6)]
            parts += Stats.columns.map { n(byKind[$0] ?? 0, $0 == "readdirplus" ? 8 : 7) }
            parts += [
                n(other, 7), n(errors, 6), n(commits, 9), n((commitLatency ?? 0) * 1000, 10), n(failedCommits, 7),
                n(Double(cachedObjects), 8), n(Double(cacheBytes) / 1_048_576, 10), n((hitRatio ?? 0) * 100, 5),
                n(invalidations, 8)
            ]
            return parts.joined(separator: " ")
        }

        func json(mountPoint: String, totals: [String: Any]) -> [String: Any] {
            var rates: [String: Any] = [
                "requests": requests, "byKind": byKind, "errors": errors, "commits": commits,
                "failedCommits": failedCommits, "invalidations": invalidations
            ]
            rates["commitLatencySeconds"] = commitLatency ?? NSNull()
            return [
                "mountPoint": mountPoint, "interval": seconds, "time": ISO8601DateFormatter().string(from: time),
                "rates": rates,
                "cache": [
                    "objects": cachedObjects, "bytes": cacheBytes, "hitRatio": hitRatio.map { $0 as Any } ?? NSNull()
                ] as [String: Any],
                "totals": totals
            ]
        }
    }
}
