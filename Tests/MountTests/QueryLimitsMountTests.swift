import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 34 through the kernel: a query cannot take the mount down (its reader killed goes at
/// once, other requests from the same CPU are not held behind it, it stops at its time limit
/// with the reason in `user.storefs.error`), queries answer while another process inserts and
/// deletes, and damaged history does not end a read-only mount.
@Suite(.serialized) struct QueryLimitsMountTests {
    static let hostile =
        "projects.milestones.project.members.department.employees.projects.members.department.employees.@count > 1"

    /// The server's process: `storefs mount STORE …` (the auto-unmount watcher's command line is
    /// not the server's).
    func serverPID(_ mount: MountedStore) throws -> Int32 {
        let found = try run("pgrep", ["-f", "mount \(mount.store.path) "]).lines.compactMap { Int32($0) }
        return try #require(found.first, "the server of \(mount.store.path) runs")
    }

    /// User and system CPU time of `pid`, in seconds (/proc/PID/stat fields 14 and 15).
    func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        return ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func residentMiB(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return (Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0) / 1024
    }

    /// Seconds `command` (a shell command line) took, and how it ended.
    func timed(_ command: String) throws -> (seconds: Double, result: ToolResult) {
        let start = Date()
        let result = try sh(command)
        return (Date().timeIntervalSince(start), result)
    }

    @Test func aHostileQueryStopsAtItsTimeLimitWithItsReason() throws {
        let mount = try MountedStore(objects: 2_000, options: ["query_time=2"])
        defer { try? mount.unmount() }
        let folder = "\(mount.path)/.query/Employee/\(Self.hostile)"
        let server = try serverPID(mount)
        let (seconds, result) = try timed("cat '\(folder)/.count'")
        #expect(result.status != 0 && result.error.contains("Connection timed out"), "\(result.error)")
        #expect(seconds < 15, "stopped by query_time=2, after \(seconds) s")
        let reason = try run("getfattr", ["--only-values", "-n", "user.storefs.error", folder]).output
        #expect(reason.contains("stopped after 2 s") && reason.contains("query_time"), "\(reason)")
        #expect(try residentMiB(server) < 600, "the server stayed small")
        #expect(try run("cat", ["\(mount.path)/.query/Employee/level > 5/.count"]).status == 0)
    }

    /// The reader killed while its query runs is gone at once (FUSE INTERRUPT stops the query:
    /// before, the `cat` stayed in D state until the server answered, and the query never
    /// ended), and requests from the same CPU meanwhile are answered (over io_uring a CPU's
    /// requests queue behind the one its thread serves).
    @Test func aKilledReaderGoesAtOnceAndOtherRequestsAreNotHeldBehindIt() throws {
        let mount = try MountedStore(objects: 2_000, options: ["query_time=300"])
        defer { try? mount.unmount() }
        let m = mount.path
        let server = try serverPID(mount)
        let started = try sh("taskset -c 0 cat '\(m)/.query/Employee/\(Self.hostile)/.count' >/dev/null 2>&1 & echo $!")
        let reader = try #require(Int32(started.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        Thread.sleep(forTimeInterval: 1)
        #expect(kill(reader, 0) == 0, "the hostile query is still running")
        for command in [
            "taskset -c 0 ls '\(m)/Department'", "taskset -c 0 cat '\(m)/Employee/p20/lastName'",
            "taskset -c 0 cat '\(m)/.query/Employee/level > 5/.count'", "taskset -c 1 ls -l '\(m)/Project'"
        ] {
            let (seconds, result) = try timed(command)
            #expect(result.status == 0 && seconds < 3, "\(command): \(seconds) s, \(result.error)")
        }
        #expect(kill(reader, SIGKILL) == 0)
        let killed = Date()
        while kill(reader, 0) == 0 && Date().timeIntervalSince(killed) < 10 { Thread.sleep(forTimeInterval: 0.02) }
        let gone = Date().timeIntervalSince(killed)
        #expect(kill(reader, 0) != 0 && gone < 3, "the killed reader went after \(gone) s")
        // The query stopped too: the server's CPU time stands still.
        Thread.sleep(forTimeInterval: 0.5)
        let before = try cpuSeconds(server)
        Thread.sleep(forTimeInterval: 1.5)
        let spent = try cpuSeconds(server) - before
        #expect(spent < 0.5, "the server spent \(spent) s of CPU after the reader was killed")
        #expect(!mount.logText.contains("stopped after 300 s"))
    }

    /// Issue 34: 10 of 320 reads of `.count` and `.json` answered ENOENT while another process
    /// inserted and deleted objects. Every read must answer (a result a moment old is fine).
    @Test func queriesAnswerWhileAnotherProcessInsertsAndDeletes() throws {
        let mount = try MountedStore(objects: 1_000)
        defer { try? mount.unmount() }
        let m = mount.path
        let script = """
            (for i in $(seq 1 200); do mkdir '\(m)/Employee/p'$((6000 + i)); echo Doe > '\(m)/Employee/p'$((6000 + i))/lastName; \
            rm -rf '\(m)/Employee/p'$((5999 + i)); done) 2>/dev/null &
            writer=$!
            failed=0
            for i in $(seq 1 160); do
              cat '\(m)/.query/Employee/level > 5/.count' >/dev/null || failed=$((failed + 1))
              cat "\(m)/.query/Employee/lastName == 'Doe'/.json" >/dev/null || failed=$((failed + 1))
            done
            wait $writer
            echo "failed $failed"
            """
        let result = try sh(script)
        #expect(result.output.contains("failed 0"), "\(result.output) \(result.error)")
        #expect(!result.error.contains("No such file or directory"), "\(result.error)")
    }

    /// Issue 34: ZTIMESTAMP 1e20 trapped the server at `ls -l MNT/.history` (a file time no
    /// timespec holds), and a TEXT transaction key made the listing spin forever.
    @Test func damagedHistoryDoesNotEndAReadOnlyMount() throws {
        let source = Corpus.url("sqlite/sergd2005_ResourcesManager_default.store")
        let mount = try MountedStore(copying: source, mount: false)
        defer { try? mount.unmount() }
        let damage = """
            PRAGMA wal_checkpoint(TRUNCATE);
            UPDATE ATRANSACTION SET ZTIMESTAMP = 1e20 WHERE Z_PK = 38;
            UPDATE ATRANSACTION SET ZTIMESTAMP = 9e999 WHERE Z_PK = 37;
            CREATE TABLE T2 AS SELECT * FROM ATRANSACTION; DROP TABLE ATRANSACTION;
            CREATE TABLE ATRANSACTION (Z_PK, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER,
                ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR,
                ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB);
            INSERT INTO ATRANSACTION SELECT * FROM T2; DROP TABLE T2;
            UPDATE ATRANSACTION SET Z_PK = 't' || Z_PK WHERE Z_PK = 5;
            """
        #expect(try run("sqlite3", ["-batch", "-bail", mount.store.path], input: Data(damage.utf8)).status == 0)
        try mount.mount(options: ["ro"])
        let listing = try sh("timeout 20 ls -l --time-style=+%Y-%m-%d '\(mount.path)/.history'")
        #expect(listing.status == 0, "\(listing.error)")
        #expect(listing.lines.count == 38, "37 transactions and the total line")
        #expect(listing.output.contains("2001-01-01 t38") && listing.output.contains("2001-01-01 t37"))
        #expect(try run("cat", ["\(mount.path)/.history/t38/timestamp"]).output == "2001-01-01T00:00:00Z\n")
        #expect(try run("ls", [mount.path]).status == 0, "the mount is alive")
        let history = try sh("timeout 20 '\(try storefsBinary())' history '\(mount.store.path)' | grep -c '^t'")
        #expect(history.output.trimmingCharacters(in: .whitespacesAndNewlines) == "37", "\(history.error)")
    }
}
