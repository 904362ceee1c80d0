import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `flock` across machines: one PostgreSQL server on a host of its own and two client hosts
/// (three network namespaces, ``HostPair`` and ``HostPair/addClient()``), each running a mount of
/// the same store over the network. LOCK_EX held through one mount refuses the real `flock`
/// tool's LOCK_EX|LOCK_NB and LOCK_SH|LOCK_NB through the other, `flock -x` through the other
/// waits, and the holder's end lets it in.
@Suite(.serialized) struct NetworkLockMountTests {
    typealias URLMount = PostgresMountTests.URLMount

    @Test func flockThroughAMountOnOneHostExcludesAMountOnAnother() throws {
        let hosts = try HostPair()
        defer { hosts.remove() }
        let server = try PostgresServer(name: "netlocks", on: hosts)
        defer { server.remove() }
        let other = try hosts.addClient()
        try server.allow(other.address)
        let folder = try ScratchSpace.folder("pgnetlocks")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = folder.appendingPathComponent("Company.sqlite")
        #expect(try run(try storefsBinary(), ["sample", "--objects", "20", sqlite.path]).status == 0)
        let schema = PostgresServer.uniqueSchema("netlocks")
        #expect(
            try run(try storefsBinary(), ["migrate", sqlite.path, server.url(schema: schema).absoluteString]).status
                == 0)
        let url = try #require(server.networkURL(schema: schema))
        let a = try URLMount(url, inside: hosts.clientNamespace)
        defer { _ = try? a.unmount() }
        let b = try URLMount(url, inside: other.namespace)
        defer { _ = try? b.unmount() }
        let addresses = try server.value(
            "SELECT string_agg(DISTINCT host(client_addr), ' ' ORDER BY host(client_addr)) FROM pg_stat_activity WHERE application_name LIKE 'storefs%'"
        )
        #expect(addresses == "\(hosts.clientAddress) \(other.address)", "one mount on each client host: \(addresses)")

        let locks = PostgresLockMountTests()
        let employee = try #require(try run("ls", [a.path + "/Employee"]).lines.first)
        let fileA = "\(a.path)/Employee/\(employee)/lastName"
        let fileB = "\(b.path)/Employee/\(employee)/lastName"
        #expect(try locks.tryFlock(fileB) == 0, "nothing holds the file yet")

        // The holder: flock(2) LOCK_EX from a process that is killed (PostgresLockMountTests.Holder).
        let holder = try PostgresLockMountTests.Holder(fileA)
        defer { holder.kill() }
        #expect(holder.holds(), "flock -x through the first host's mount")
        #expect(try locks.tryFlock(fileB) == 75, "LOCK_EX|LOCK_NB through the other host is refused")
        #expect(try locks.tryFlock(fileB, shared: true) == 75, "and LOCK_SH|LOCK_NB")
        #expect(try server.value("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted") == "1")

        // A blocking LOCK_EX through the other host waits for the holder, and gets in once it goes.
        let waiter = BackgroundTool("timeout", ["60", "flock", "-x", fileB, "-c", "echo got"], timeout: 90)
        #expect(waiter.wait(seconds: 1) == nil, "LOCK_EX through the other host waits while the first holds it")
        let released = Date()
        holder.kill()
        let outcome = waiter.wait(seconds: 30)
        let granted = Date().timeIntervalSince(released)
        #expect(
            outcome?.status == 0 && outcome?.output == "got\n",
            "the waiter got the lock once it was let go: \(outcome.map { "\($0)" } ?? "still waiting")\n\(b.logText.suffix(2000))\n\(a.logText.suffix(2000))"
        )
        #expect(try locks.tryFlock(fileA) == 0, "and let it go: the first host's mount takes it again")
        print(
            "flock across hosts: a blocked LOCK_EX on the other host got the lock "
                + "\(String(format: "%.2f", granted)) s after the holder ended")
        #expect(try a.unmount().status == 0)
        #expect(try b.unmount().status == 0)
    }
}
