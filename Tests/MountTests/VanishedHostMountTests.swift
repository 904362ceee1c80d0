import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A mount whose URL names a host that vanished first (`host=GONE,SERVER`): the server on a host
/// of its own, the mount on another (``HostPair``), and GONE an address the client still believes
/// is there (``HostPair/vanish(_:)``: its packets leave and are never answered, as those to a
/// primary machine that died). libpq would wait on GONE until TCP gives up; storefs gives each
/// host a deadline of its own (Sources/PostgresStore/HostList.swift, 3 s by default), so the mount
/// comes up, reads and writes within a few seconds, and writes go to the live host.
@Suite(.serialized) struct VanishedHostMountTests {
    typealias Stalled = StalledSaveMountTests

    /// The client's URL for `schema` on `hosts` (addresses, tried in order).
    func url(_ hosts: [String], schema: String, extra: String = "") -> URL {
        URL(
            string:
                "postgresql:///postgres?host=\(hosts.joined(separator: ","))&port=5432&user=postgres&schema=\(schema)"
                + extra)!
    }

    @Test func aVanishedFirstHostCostsOneDeadlineNotAStall() throws {
        let hosts = try HostPair()
        defer { hosts.remove() }
        let server = try PostgresServer(name: "vanished", on: hosts)
        defer { server.remove() }
        let folder = try ScratchSpace.folder("pgvanished")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = folder.appendingPathComponent("Company.sqlite")
        #expect(try run(try storefsBinary(), ["sample", "--objects", "100", sqlite.path]).status == 0)
        let schema = PostgresServer.uniqueSchema("vanished")
        #expect(
            try run(try storefsBinary(), ["migrate", sqlite.path, server.url(schema: schema).absoluteString]).status
                == 0)
        let gone = "10.35.0.9"
        try hosts.vanish(gone)
        // The vanished host swallows a connect: it neither answers nor refuses within 5 s.
        let probe = try run(
            "timeout", ["5"] + HostPair.inside(hosts.clientNamespace, ["bash", "-c", "exec 3<>/dev/tcp/\(gone)/5432"]))
        #expect(probe.status == 124, "a connect to the vanished host waits until killed: \(probe)")

        // Same run, for the ratio: the same mount with only the live host.
        func mountAndRead(_ url: URL) throws -> (mount: PostgresMountTests.URLMount, seconds: Double, listed: [String])
        {
            let started = Date()
            let mount = try PostgresMountTests.URLMount(url, inside: hosts.clientNamespace)
            let listed = try Stalled.objects(mount.path, "Employee").filter { $0.hasPrefix("p") }
            return (mount, Date().timeIntervalSince(started), listed)
        }
        let direct = try mountAndRead(url([hosts.serverAddress], schema: schema))
        #expect(try direct.mount.unmount().status == 0)

        let viaGone = try mountAndRead(url([gone, hosts.serverAddress], schema: schema))
        let mount = viaGone.mount
        defer { _ = try? mount.unmount() }
        #expect(viaGone.listed == direct.listed && viaGone.listed.count > 10, "the mount lists the store's objects")
        // One deadline (3 s) for the writer's and the readers' first connects, in parallel; then
        // the host is tried last. Slack for a loaded machine; libpq alone took 15-29 s, or failed.
        #expect(viaGone.seconds < 10, "mounted and listed within the per-host deadline: \(viaGone.seconds) s")

        let employee = viaGone.listed[3]
        let file = "\(mount.path)/Employee/\(employee)/lastName"
        let started = Date()
        let write = try run("timeout", ["60", "sh", "-c", "printf Vanished > '\(file)'"])
        let wrote = Date().timeIntervalSince(started)
        #expect(write.status == 0, "the write is saved on the live host: \(write)\n\(mount.logText.suffix(2000))")
        let readBack = try run("timeout", ["30", "cat", file])
        #expect(readBack.output.hasPrefix("Vanished"), "the mount reads the write back: \(readBack)")
        let key = String(employee.dropFirst())
        #expect(
            try server.value("SELECT \"ZLASTNAME\" FROM \(schema).\"ZPERSON\" WHERE \"Z_PK\" = \(key)") == "Vanished")
        #expect(try server.storefsConnections() >= 2, "the mount's connections are on the live host")
        print(
            "vanished first host: mounted and listed in \(String(format: "%.1f", viaGone.seconds)) s "
                + "(only the live host, same run: \(String(format: "%.1f", direct.seconds)) s, ratio "
                + "\(String(format: "%.1f", viaGone.seconds / max(direct.seconds, 0.001)))x); "
                + "a write after: \(String(format: "%.2f", wrote)) s")
        #expect(try mount.unmount().status == 0)
    }
}
