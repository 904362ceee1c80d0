import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `storefs stats MNT`: a refreshing line of rates per interval, and `--once --json` for scripts,
/// with what a workload running meanwhile did.
@Suite struct StatsCommandTests {
    @Test func statsShowsTheRatesOfAWorkloadRunningMeanwhile() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        #expect(try run(try storefsBinary(), ["mount", scratch.store, scratch.mountPoint]).succeeded)
        defer { _ = try? run(try storefsBinary(), ["unmount", scratch.mountPoint]) }
        // A workload for the whole sampling: listings, reads, writes each committed by fsync.
        let workload = Process()
        workload.executableURL = URL(fileURLWithPath: "/bin/sh")
        let file = quoted(scratch.mountPoint + "/Employee/p3/lastName")
        workload.arguments = [
            "-c",
            "for i in $(seq 1 400); do ls -l \(quoted(scratch.mountPoint + "/Employee")) >/dev/null; "
                + "echo Name$i > \(file); sync \(file); sleep 0.02; done"
        ]
        try workload.run()
        defer {
            kill(workload.processIdentifier, SIGKILL)
            // Killed, it ends at once; the wait is bounded all the same (a test never hangs CI).
            let deadline = Date().addingTimeInterval(30)
            while workload.isRunning && Date() < deadline { usleep(10_000) }
        }
        let lines = try run(try storefsBinary(), ["stats", scratch.mountPoint, "--count", "3", "--interval", "0.5"])
        #expect(lines.succeeded, "\(lines.errorOutput)")
        let printed = lines.output.split(separator: "\n").map(String.init)
        #expect(printed.count == 4, "a header and three lines: \(lines.output)")
        #expect(printed.first?.hasPrefix("time      req/s  lookup getattr") == true)
        let once = try run(try storefsBinary(), ["stats", scratch.mountPoint, "--once", "--json"])
        #expect(once.succeeded, "\(once.errorOutput)")
        let json = try #require((try? JSONSerialization.jsonObject(with: Data(once.output.utf8))) as? [String: Any])
        let rates = try #require(json["rates"] as? [String: Any])
        #expect(((rates["requests"] as? NSNumber)?.doubleValue ?? 0) > 0, "\(rates)")
        #expect(((rates["commits"] as? NSNumber)?.doubleValue ?? 0) > 0, "fsync commits every write: \(rates)")
        #expect(((rates["commitLatencySeconds"] as? NSNumber)?.doubleValue ?? 0) > 0)
        let byKind = rates["byKind"] as? [String: NSNumber] ?? [:]
        #expect((byKind["write"]?.doubleValue ?? 0) > 0)
        let sum = byKind.values.reduce(0) { $0 + $1.doubleValue }
        #expect(
            abs(sum - ((rates["requests"] as? NSNumber)?.doubleValue ?? -1)) < 0.01, "the kinds add up to the total")
        #expect((json["totals"] as? [String: Any])?["saves"] != nil)
        // Not a storefs mount: a clear error.
        let elsewhere = try run(try storefsBinary(), ["stats", scratch.path, "--once"])
        #expect(
            !elsewhere.succeeded && elsewhere.errorOutput.contains("is not a storefs mount"), "\(elsewhere.errorOutput)"
        )
    }
}
