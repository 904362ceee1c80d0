import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// 10,000 changes through real mounts, followed through a standby and through pgbouncer: a store
/// of 10,000 employees on a primary with a streaming standby and a pgbouncer in transaction mode
/// in front of the primary. Two mounts only read: one from the standby (`host=A,B`, following by
/// reading the history there, since a standby refuses LISTEN), one through the pooler (no
/// `session=`, so it follows by reading the history too: LISTEN does not reach it). Each reads
/// every employee's lastName first, so all are loaded and cached; two other mounts, one on
/// `host=A,B` and one through the pooler, four writer processes, write a new lastName to each
/// employee once (open, write, fsync, close). Both reading mounts then show every new value: a
/// change one missed would leave its old value in place.
@Suite(.serialized) struct StandbyFollowingMountTests {
    typealias URLMount = PostgresMountTests.URLMount
    typealias Stalled = StalledSaveMountTests

    /// Reads FOLDER/NAME/lastName for every NAME in the file LIST until each reads PREFIX+NAME
    /// (or, with PREFIX "-", once); prints how many do not, and the seconds it took.
    static let reader = """
        import sys, time
        folder, names, prefix, limit = sys.argv[1], open(sys.argv[2]).read().split(), sys.argv[3], float(sys.argv[4])
        started = time.monotonic()
        while True:
            wrong = 0
            for name in names:
                with open("%s/%s/lastName" % (folder, name)) as f:
                    if prefix != "-" and f.read().strip() != prefix + name: wrong += 1
            if prefix == "-" or wrong == 0 or time.monotonic() - started > limit: break
            time.sleep(0.2)
        print(wrong, "%.2f" % (time.monotonic() - started))
        """

    /// Writes PREFIX+NAME to FOLDER/NAME/lastName for every NAME in the file LIST (open, write,
    /// fsync, close), PAUSE seconds apart; prints one line per name: NAME, "ok" or the errno's
    /// name, and the seconds the write took.
    static let writer = """
        import errno, os, sys, time
        folder, names, prefix, pause = sys.argv[1], open(sys.argv[2]).read().split(), sys.argv[3], float(sys.argv[4])
        for name in names:
            started = time.monotonic()
            try:
                fd = os.open("%s/%s/lastName" % (folder, name), os.O_WRONLY | os.O_TRUNC)
                try:
                    os.write(fd, (prefix + name + "\\n").encode()); os.fsync(fd)
                finally:
                    os.close(fd)
                answer = "ok"
            except OSError as error:
                answer = errno.errorcode.get(error.errno, str(error.errno))
            print(name, answer, "%.2f" % (time.monotonic() - started), flush=True)
            time.sleep(pause)
        """

    @Test func mountsFollowingThroughAStandbyAndThroughPgbouncerSeeEachOfTenThousandChanges() throws {
        let primary = try PostgresServer(name: "primary")
        defer { primary.remove() }
        let folder = try ScratchSpace.folder("pg10k")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = folder.appendingPathComponent("Company.sqlite")
        #expect(try run(try storefsBinary(), ["sample", "--objects", "12600", sqlite.path]).status == 0)
        // The standby first: a base backup of a primary with much unwritten data waits for a spread
        // checkpoint (over 90 s once here); the store then reaches the standby by streaming.
        let standby = try PostgresServer(name: "standby", standbyOf: primary)
        defer { standby.remove() }
        let schema = PostgresServer.uniqueSchema("tenthousand")
        let migrated = try run(
            try storefsBinary(), ["migrate", sqlite.path, primary.url(schema: schema).absoluteString])
        try #require(migrated.status == 0, "\(migrated.error)")
        try standby.waitForReplay(of: primary)
        let url = PostgresServer.url(schema: schema, servers: [primary, standby])
        // Two server connections: the pooled writer's two processes and the pooled follower's
        // reads and polls share them, transaction by transaction.
        let pooler = try PgBouncer(name: "tenthousand", in: primary, poolSize: 2)
        defer { pooler.remove() }
        let pooledURL = pooler.url(schema: schema)

        let follower = try URLMount(url)
        defer { _ = try? follower.unmount() }
        let pooledFollower = try URLMount(pooledURL)
        defer { _ = try? pooledFollower.unmount() }
        let employees = Array(
            try Stalled.objects(follower.path, "Employee").filter { $0.hasPrefix("p") }.prefix(10_000))
        try #require(employees.count == 10_000, "the sample has 10,000 employees: \(employees.count)")
        let all = folder.appendingPathComponent("all.txt")
        try employees.joined(separator: "\n").write(to: all, atomically: true, encoding: .utf8)
        let bases = ["\(follower.path)/Employee", "\(pooledFollower.path)/Employee"]
        for base in bases {
            let loaded = try run("timeout", ["600", "python3", "-c", Self.reader, base, all.path, "-", "0"])
            #expect(loaded.status == 0, "the follower reads every value first (\(base)): \(loaded)")
        }
        #expect(try standby.storefsConnections() >= 1, "the follower reads on the standby")
        #expect(try pooler.serverConnections() >= 1, "the pooled follower reads through pgbouncer")

        let writerMounts = [try URLMount(url), try URLMount(pooledURL)]
        defer { for mount in writerMounts { _ = try? mount.unmount() } }
        let started = Date()
        let writers = try (0..<4).map { index in
            let list = folder.appendingPathComponent("writer\(index).txt")
            try employees[(index * 2500)..<((index + 1) * 2500)].joined(separator: "\n")
                .write(to: list, atomically: true, encoding: .utf8)
            return BackgroundTool(
                "timeout",
                ["900", "python3", "-c", Self.writer, "\(writerMounts[index % 2].path)/Employee", list.path, "c", "0"],
                timeout: 960)
        }
        var acknowledged = 0
        for (index, writer) in writers.enumerated() {
            let outcome = writer.wait(seconds: 960)
            let answers = (outcome?.output.split(separator: "\n") ?? []).map { $0.split(separator: " ") }
            acknowledged += answers.filter { $0.count == 3 && $0[1] == "ok" }.count
            let errors = answers.filter { $0.count != 3 || $0[1] != "ok" }
            #expect(
                answers.count == 2500 && errors.isEmpty,
                "writer \(index) had no errors: \(errors.prefix(3)) \(outcome.map { "\($0.status) \($0.error)" } ?? "no answer")"
            )
        }
        let wrote = Date().timeIntervalSince(started)
        #expect(acknowledged == 10_000, "every change acknowledged")

        // Each follower shows every change: none missed (a missed one keeps its loaded old value).
        // Both are watched at once, so each one's time counts from the last acknowledgement.
        let watchers = bases.map { base in
            BackgroundTool(
                "timeout", ["300", "python3", "-c", Self.reader, base, all.path, "c", "120"], timeout: 320)
        }
        let seconds = zip(["the standby", "pgbouncer"], zip(watchers, [follower, pooledFollower])).map {
            way, watch in
            let (watcher, mount) = watch
            let followed = watcher.wait(seconds: 330)
            let answer = followed?.output.split(separator: " ") ?? []
            #expect(
                answer.first == "0",
                "every change seen through \(way): \(followed.map { "\($0)" } ?? "no answer")\n\(mount.logText.suffix(2000))"
            )
            return answer.count > 1 ? String(answer[1]).trimmingCharacters(in: .whitespacesAndNewlines) : "?"
        }
        #expect(
            pooledFollower.logText.contains("by reading its history"),
            "the pooled follower says it follows the history: \(pooledFollower.logText.suffix(2000))")
        // And the primary and the standby hold exactly what was acknowledged.
        let query =
            "SELECT count(*) FROM \(schema).\"ZPERSON\" WHERE \"ZLASTNAME\" = 'cp' || \"Z_PK\"::text"
        #expect(try primary.value(query) == "10000")
        try standby.waitForReplay(of: primary)
        #expect(try standby.value(query) == "10000")
        print(
            "10,000 changes through 2 mounts (4 writers; one mount direct, one through pgbouncer) in "
                + "\(String(format: "%.1f", wrote)) s (\(String(format: "%.0f", 10_000 / wrote)) commits/s); "
                + "the mounts following through the standby and through pgbouncer showed them all within "
                + "\(seconds[0]) s and \(seconds[1]) s of the last acknowledgement (a pass over the 10,000 files included)"
        )
    }
}
