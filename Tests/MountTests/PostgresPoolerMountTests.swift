import Foundation
import ObjectGraph
import PostgresStore
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Mounts of a PostgreSQL store through a real pgbouncer in transaction mode (``PgBouncer``),
/// driven with echo, cat, ls and flock: reads and writes go through the pooler; a mount without a
/// session follows the others by reading the history, one with `session=` by LISTEN; file locks
/// need `session=`; a pgbouncer killed and started again mid-run loses no acknowledged write.
@Suite struct PostgresPoolerMountTests {
    typealias URLMount = PostgresMountTests.URLMount

    func cat(_ path: String) -> String { (try? run("cat", [path]).output) ?? "" }

    /// The schema a sample store's URL names.
    static func schema(of url: URL) throws -> String {
        try #require(
            URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "schema" }?.value)
    }

    /// The `fraction` quantile of `values` (nearest rank).
    static func quantile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return -1 }
        return sorted[min(sorted.count - 1, max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))]
    }

    @Test func mountsThroughPgbouncerReadWriteAndSeeEachOthersCommits() throws {
        let server = try PostgresServer.shared()
        let pooler = try PgBouncer(name: "mounts", in: server, poolSize: 2)
        defer { pooler.remove() }
        let direct = try PostgresMountTests.sampleStore(objects: 200, server: server, name: "pooled")
        let schema = try Self.schema(of: direct)
        // A writes and locks (session= for its locks); B goes through the pooler alone and follows
        // by reading the history; C follows by LISTEN on its session= connection.
        let a = try URLMount(pooler.urlWithSession(schema: schema))
        defer { _ = try? a.unmount() }
        let b = try URLMount(pooler.url(schema: schema))
        defer { _ = try? b.unmount() }
        let c = try URLMount(pooler.urlWithSession(schema: schema))
        defer { _ = try? c.unmount() }

        #expect(try sh("echo Hopper > \(a.path)/Employee/p5/lastName").status == 0)
        #expect(cat(a.path + "/Employee/p5/lastName") == "Hopper\n")
        #expect(try run("mkdir", [a.path + "/Department/p900"]).status == 0)
        #expect(try run("ls", [a.path + "/Department"]).lines.contains("p900"))
        #expect(try run("ls", [b.path + "/Employee"]).lines.count >= 150, "B lists the store through the pooler")
        let seen = PostgresMountTests.seconds(
            until: {
                cat(b.path + "/Employee/p5/lastName") == "Hopper\n"
                    && ((try? run("ls", [b.path + "/Department"]).lines) ?? []).contains("p900")
            }, limit: 10)
        #expect(seen != nil, "B sees A's echo and mkdir")

        // Visibility: A writes, B and C (their caches full) are watched until they show it.
        let keys = Array(10..<50)
        for key in keys {
            _ = cat(b.path + "/Employee/p\(key)/lastName")
            _ = cat(c.path + "/Employee/p\(key)/lastName")
        }
        var throughPooler: [Double] = []
        var withSession: [Double] = []
        for key in keys {
            let value = "Seen\(key)\n"
            #expect(try sh("echo Seen\(key) > \(a.path)/Employee/p\(key)/lastName").status == 0)
            let written = Date()
            var pooled: Double?
            var session: Double?
            while Date().timeIntervalSince(written) < 5 && (pooled == nil || session == nil) {
                if pooled == nil && cat(b.path + "/Employee/p\(key)/lastName") == value {
                    pooled = Date().timeIntervalSince(written)
                }
                if session == nil && cat(c.path + "/Employee/p\(key)/lastName") == value {
                    session = Date().timeIntervalSince(written)
                }
                usleep(5_000)
            }
            #expect(pooled != nil && session != nil, "p\(key): B \(pooled ?? -1) s, C \(session ?? -1) s")
            throughPooler.append(pooled ?? 5)
            withSession.append(session ?? 5)
        }
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first ?? "?"
        print(
            String(
                format:
                    "pgbouncer transaction mode (pool 2), %d commits of echo > through mount A: seen by mount B (pooler only, history every 200 ms) p50 %.3f s p99 %.3f s; by mount C (session=, LISTEN) p50 %.3f s p99 %.3f s; load %@",
                keys.count, Self.quantile(throughPooler, 0.5), Self.quantile(throughPooler, 0.99),
                Self.quantile(withSession, 0.5), Self.quantile(withSession, 0.99), String(load)))
        #expect(Self.quantile(throughPooler, 0.99) < 1, "B sees a commit within 1 s (p99)")
        #expect(b.logText.contains("by reading its history"), "B says how it follows: \(b.logText.suffix(2000))")
        #expect(c.logText.contains("by LISTEN"), "C says how it follows")

        // flock: through session= a lock in the server; through the pooler alone refused, saying why.
        #expect(try run("flock", ["-n", "-x", a.path + "/Employee/p5/lastName", "true"]).status == 0)
        let refused = try run("flock", ["-n", "-x", b.path + "/Employee/p6/lastName", "true"])
        #expect(refused.status != 0, "a lock through a transaction pooler is refused")
        #expect(b.logText.contains("session="), "B's log says what the lock needs")
        #expect(try pooler.serverConnections() <= 2)
        #expect(try a.unmount().status == 0 && b.unmount().status == 0 && c.unmount().status == 0)
    }

    /// pgbouncer killed and started again while a mount writes through it: every write that
    /// answered ok is in the server; one that failed answered an error and is not there; the
    /// mount goes on writing after.
    @Test func aPgbouncerRestartMidRunLosesNoAcknowledgedWrite() throws {
        let server = try PostgresServer.shared()
        let pooler = try PgBouncer(name: "restart", in: server, poolSize: 2)
        defer { pooler.remove() }
        let direct = try PostgresMountTests.sampleStore(objects: 400, server: server, name: "poolrestart")
        let schema = try Self.schema(of: direct)
        let mount = try URLMount(pooler.url(schema: schema))
        defer { _ = try? mount.unmount() }
        /// Writes `value` to p`key`'s lastName and fsyncs it; the errno name, or "ok".
        let root = mount.path
        @Sendable func write(_ key: Int, _ value: String) -> String {
            let script = """
                import errno, os, sys
                try:
                    f = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC); os.write(f, sys.argv[2].encode() + b"\\n"); os.fsync(f); os.close(f); print("ok")
                except OSError as e:
                    print(errno.errorcode[e.errno])
                """
            return
                ((try? run("timeout", ["60", "python3", "-c", script, "\(root)/Employee/p\(key)/lastName", value])
                .output) ?? "no answer").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let answers = Mutex<[Int: String]>([:])
        let listed = try run("ls", [mount.path + "/Employee"]).lines.compactMap { Int($0.dropFirst()) }.sorted()
        try #require(listed.count > 101, "the sample store has employees: \(listed.count)")
        let keys = Array(listed.prefix(100))
        let after = listed[100]
        let writer = Thread {
            for key in keys {
                let answer = write(key, "W\(key)")
                answers.withLock { $0[key] = answer }
                usleep(20_000)
            }
        }
        writer.start()
        while answers.withLock({ $0.count }) < 20 { usleep(10_000) }
        try pooler.kill()
        let killedAt = answers.withLock { $0.count }
        usleep(1_500_000)
        try pooler.start()
        let deadline = Date().addingTimeInterval(240)
        while answers.withLock({ $0.count }) < keys.count && Date() < deadline { usleep(50_000) }
        let all = answers.withLock { $0 }
        #expect(all.count == keys.count, "every write answered (\(all.count) of \(keys.count))")
        // Read back directly from the server, not through the pooler or the mount.
        let store = try PersistentStoreCoordinator.open(
            at: direct, types: [PostgresStoreType()], options: StoreOptions(readOnly: true))
        defer { store.close() }
        let context = store.newContext()
        let employee = try #require(store.model.entityID(named: "Employee"))
        var stored: [Int: String] = [:]
        for key in keys {
            // Employee/pN may be a manager (a subentity): its key is the same.
            let id = try #require(try context.objectID(forKey: PrimaryKey(Int64(key)), in: employee))
            if case .string(let value)? = try context.value(of: "lastName", for: id) { stored[key] = value }
        }
        var acknowledged = 0
        var failed: [String: Int] = [:]
        for key in keys {
            let answer = all[key] ?? "no answer"
            if answer == "ok" {
                acknowledged += 1
                #expect(stored[key] == "W\(key)", "acknowledged write p\(key) is in the server")
            } else {
                failed[answer, default: 0] += 1
                #expect(answer == "EIO", "p\(key): a failed write answers EIO, got \(answer)")
                #expect(stored[key] != "W\(key)", "p\(key) answered \(answer) and was not saved")
            }
        }
        print(
            "pgbouncer killed (SIGKILL) after \(killedAt) writes and started 1.5 s later: \(acknowledged) of \(keys.count) writes acknowledged (all in the server), failed: \(failed)"
        )
        // The mount goes on.
        #expect(write(after, "AfterRestart") == "ok", "the mount reconnects through the pooler by itself")
        #expect(cat(mount.path + "/Employee/p\(after)/lastName") == "AfterRestart\n")
        #expect(try run("ls", [mount.path + "/Employee"]).lines.count >= 100)
        #expect(try mount.unmount().status == 0)
    }
}
