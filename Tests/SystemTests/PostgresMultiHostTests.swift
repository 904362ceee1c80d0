import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Several machines on one PostgreSQL store, for real: scripts/pg-multihost makes a server host
/// and three client hosts in network namespaces, mounts the store on each client, and runs
/// writers of shared counters and a reader on every host through a server killed and restarted,
/// a client's link down for 5 s and a mount killed with -9. The CI run is small (2 writers per
/// mount × 100 increments); docs/RELIABILITY.md has the long run (8 × 200) and its figures.
///
/// The faults come at a third and two thirds of the increments, and each also waits until 10
/// commits since the start (or since the previous fault's window) are outside its own window, so
/// commits outside the windows are always checked however fast or slow the writers are (with 40
/// increments each, CI once checked none: every commit fell within 2 s of a fault).
///
/// Seen within 5 s, not 1: the product's aim is 1 s (the script prints how many took longer), but
/// how long a reader waits also depends on the machine's load. A reader of a mount waits behind
/// that mount's save, and a save may wait up to `lock_timeout` (3 s, PostgresConnection.lockTimeout)
/// for another host's rows; 5 s is that wait plus 2 s, and a commit later than that is a bug under
/// any load (a missed announcement, a cache not dropped), not slowness.
@Suite(.serialized) struct PostgresMultiHostTests {
    /// Runs scripts/pg-multihost with 3 client hosts × 2 writers, 6 counters, the 5 s bound and
    /// `arguments`; expects it to pass and returns its summary line.
    func multiHost(_ arguments: [String]) throws -> String {
        guard getuid() == 0 else { throw SystemTestError("this test makes network namespaces and needs root") }
        _ = try tool("ip", package: "iproute2")
        _ = try tool("nsenter", package: "util-linux")
        _ = try tool("python3", package: "python3")
        _ = try tool("sqlite3", package: "sqlite3")
        let result = try run(
            "timeout",
            [
                "600", packageRoot.appendingPathComponent("scripts/pg-multihost").path, "--clients", "3", "--writers",
                "2", "--counters", "6", "--timeout", "480", "--bound", "5", "--storefs", try storefsBinary()
            ] + arguments)
        let summary =
            result.output.split(separator: "\n").first { $0.hasPrefix("pg-multihost:") }.map(String.init) ?? ""
        print(summary)
        #expect(
            result.succeeded, "pg-multihost failed:\n\(result.output.suffix(3000))\(result.errorOutput.suffix(3000))")
        return summary
    }

    @Test func threeHostsCountExactlyAndSeeEachOtherWithinASecondThroughFaults() throws {
        let summary = try multiHost(["--increments", "100"])
        #expect(summary.contains("600 acknowledged of 600; counters exact 6/6, duplicates 0"), "\(summary)")
        #expect(summary.contains("over the 5 s bound 0, unseen 0"), "\(summary)")
        #expect(
            summary.contains("server killed and restarted, client 2 link down 5 s; client 3's storefs killed -9"),
            "\(summary)")
        #expect(
            !summary.contains("visibility: 0 commits checked"), "commits outside the faults were checked: \(summary)")
    }

    /// A primary and a synchronous streaming standby on hosts of their own, three client hosts
    /// mounting a URL that names both (reads from the standby, writes to the primary): the
    /// standby's replay paused for 3 s (each mount still reads its own writes and, after a
    /// conflict, the commit it conflicted with), then the primary killed with -9 and the standby
    /// promoted while the writers write, then a client's link down for 5 s and a storefs killed
    /// -9. Every acknowledged increment is on the promoted standby exactly once, storefs read on
    /// the standby (its connections there are counted), and every commit outside the faults is
    /// seen by the other hosts within the 5 s bound (see above; the figures are in
    /// docs/RELIABILITY.md). 250 increments per writer, so the faults come while they write.
    @Test func aStandbyTakesReadsAndTheWritesAfterThePrimaryIsKilledAndItIsPromoted() throws {
        let summary = try multiHost(["--increments", "250", "--standby", "sync"])
        #expect(summary.contains("1500 acknowledged of 1500; counters exact 6/6, duplicates 0"), "\(summary)")
        #expect(summary.contains("over the 5 s bound 0, unseen 0"), "\(summary)")
        #expect(
            summary.contains(
                "standby replay paused 3 s, primary killed -9 and standby promoted, client 2 link down 5 s"),
            "\(summary)")
        #expect(
            !summary.contains("storefs connections on it before the failover 0,"),
            "reads went to the standby: \(summary)")
        #expect(
            !summary.contains("after the promotion) none"), "writes went on after the failover: \(summary)")
    }
}
