import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// pgbouncer on a host of its own: the PostgreSQL server on one network namespace, Debian's
/// pgbouncer (transaction mode) on a second, the mount on a third that reaches the pooler through
/// the server's host (``HostPair/route(between:)``). Mid-run the pooler's cable is pulled for 5 s,
/// which cuts both the mounts' path to the pooler and the pooler's to the server. Two mounts
/// write: a patient one (a request may wait 10 s: its writes wait through the cut) and an
/// impatient one (2 s: a write during the cut was refused in 5 runs of 7; in the others it
/// waited out the cut, 5.04 s once, and was saved: docs/RELIABILITY.md 36g). Every write answered
/// ok at fsync is on the server, every one refused is refused with EIO, and both mounts go on once
/// the cable is back. The writers are StandbyFollowingMountTests.writer, 30 ms apart.
@Suite(.serialized) struct PoolerHostMountTests {
    typealias URLMount = PostgresMountTests.URLMount

    @Test func writesThroughAPoolerWhoseLinkIsCutAreKeptOrRefusedWithEIO() throws {
        let hosts = try HostPair()
        defer { hosts.remove() }
        let server = try PostgresServer(name: "poolerhost", on: hosts)
        defer { server.remove() }
        // The pooler on the pair's client host; the mounts on a host of their own.
        let pooler = try PgBouncer(
            name: "onhost", in: server, poolSize: 2,
            on: PgBouncer.Host(
                namespace: hosts.clientNamespace, listenAddress: hosts.clientAddress,
                serverAddress: hosts.serverAddress))
        defer { pooler.remove() }
        let mounts = try hosts.addClient()
        try hosts.route(between: mounts)
        let folder = try ScratchSpace.folder("pgpoolerhost")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = folder.appendingPathComponent("Company.sqlite")
        #expect(try run(try storefsBinary(), ["sample", "--objects", "520", sqlite.path]).status == 0)
        let schema = PostgresServer.uniqueSchema("poolerhost")
        let migrated = try run(
            try storefsBinary(), ["migrate", sqlite.path, server.url(schema: schema).absoluteString])
        try #require(migrated.status == 0, "\(migrated.error)")
        // The statement timeout: what one request may wait in an outage, longer and shorter than
        // the cut.
        let pooled = try #require(pooler.networkURL(schema: schema)).absoluteString
        let patient = try URLMount(URL(string: pooled + "&timeout=10")!, inside: mounts.namespace)
        defer { _ = try? patient.unmount() }
        let impatient = try URLMount(URL(string: pooled + "&timeout=2")!, inside: mounts.namespace)
        defer { _ = try? impatient.unmount() }
        let employees = Array(
            try StalledSaveMountTests.objects(patient.path, "Employee").filter { $0.hasPrefix("p") }.prefix(400))
        try #require(employees.count == 400, "the sample has 400 employees: \(employees.count)")
        let fromPooler = try server.value(
            "SELECT count(*) FROM pg_stat_activity WHERE host(client_addr) = '\(hosts.clientAddress)'")
        #expect((Int(fromPooler) ?? 0) >= 1, "the server's clients are the pooler's host: \(fromPooler)")

        let writing = try [patient, impatient].enumerated().map { index, mount in
            let list = folder.appendingPathComponent("names\(index).txt")
            try employees[(index * 200)..<((index + 1) * 200)].joined(separator: "\n")
                .write(to: list, atomically: true, encoding: .utf8)
            return BackgroundTool(
                "timeout",
                [
                    "300", "python3", "-c", StandbyFollowingMountTests.writer, "\(mount.path)/Employee", list.path,
                    "cut", "0.03"
                ],
                timeout: 320)
        }
        Thread.sleep(forTimeInterval: 2)
        try hosts.cut()
        var cut = true
        defer { if cut { try? hosts.restore() } }
        Thread.sleep(forTimeInterval: 5)
        try hosts.restore()
        cut = false
        let answers = try writing.map { writer in
            let outcome = try #require(writer.wait(seconds: 330), "the writer ends")
            let lines = outcome.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            try #require(lines.count == 200 && lines.allSatisfy { $0.count == 3 }, "one answer per write: \(outcome)")
            return lines
        }
        let lines = answers.flatMap { $0 }
        let acknowledged = Set(lines.filter { $0[1] == "ok" }.map { $0[0] })
        let refused = lines.filter { $0[1] != "ok" }
        #expect(refused.allSatisfy { $0[1] == "EIO" }, "a refused write says EIO: \(refused.prefix(5))")
        let longest = answers[0].compactMap { Double($0[2]) }.max() ?? 0
        #expect(longest >= 3, "the patient mount's write waited through the cut (longest \(longest) s)")
        let impatientRefused = answers[1].filter { $0[1] != "ok" }.count
        let impatientLongest = answers[1].compactMap { Double($0[2]) }.max() ?? 0

        // Every write answered ok is on the server; nothing is there that no writer sent.
        let stored = Set(
            try server.value(
                "SELECT string_agg('p' || \"Z_PK\", ' ') FROM \(schema).\"ZPERSON\" WHERE \"ZLASTNAME\" = 'cutp' || \"Z_PK\"::text"
            ).split(separator: " ").map(String.init))
        #expect(acknowledged.isSubset(of: stored), "acknowledged but not stored: \(acknowledged.subtracting(stored))")
        #expect(stored.isSubset(of: Set(employees)), "stored values were all written")

        // The mounts go on: a write after the cut is saved, and a listing answers.
        for (mount, after) in [(patient, employees[0]), (impatient, employees[200])] {
            let written = try sh("echo After > \(mount.path)/Employee/\(after)/lastName")
            #expect(written.status == 0, "a write after the cut: \(written)\n\(mount.logText.suffix(2000))")
            #expect(
                try server.value(
                    "SELECT \"ZLASTNAME\" FROM \(schema).\"ZPERSON\" WHERE 'p' || \"Z_PK\" = '\(after)'") == "After")
            #expect(try run("ls", [mount.path + "/Employee"]).lines.count >= 400)
        }
        print(
            "pooler on its own host, its link cut 5 s during 2 × 200 fsync'd writes: patient mount (timeout=10) "
                + "\(200 - (refused.count - impatientRefused)) ok, longest write \(String(format: "%.2f", longest)) s; "
                + "impatient mount (timeout=2) \(200 - impatientRefused) ok, \(impatientRefused) refused (EIO), longest write "
                + "\(String(format: "%.2f", impatientLongest)) s; "
                + "every ok write on the server; both mounts wrote on after the cut")
    }
}
