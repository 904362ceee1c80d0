import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Two mounts of a URL naming a primary and its streaming standby (`host=A,B`), through the kernel,
/// with the standby's replay paused: the mount that wrote reads its write back exactly at once
/// (from the primary), the other mount, reading from the standby, still shows the old value until
/// the standby replays the commit, and then shows the new one. Both mounts' reads are on the
/// standby (its storefs connections are counted).
@Suite(.serialized) struct PostgresStandbyMountTests {
    typealias URLMount = PostgresMountTests.URLMount

    @Test func aMountReadsItsOwnWriteAtOnceWhileTheStandbyLags() throws {
        let primary = try PostgresServer(name: "primary")
        defer { primary.remove() }
        let single = try PostgresMountTests.sampleStore(objects: 50, server: primary, name: "standby")
        let schema = try #require(
            URLComponents(url: single, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "schema" }?
                .value)
        let key = try primary.value(
            "SELECT min(\"Z_PK\") FROM \(schema).\"ZPERSON\" WHERE \"Z_ENT\" = "
                + "(SELECT \"Z_ENT\" FROM \(schema).\"Z_PRIMARYKEY\" WHERE \"Z_NAME\" = 'Employee')")
        let standby = try PostgresServer(name: "standby", standbyOf: primary)
        defer { standby.remove() }
        try standby.waitForReplay(of: primary)
        let url = PostgresServer.url(schema: schema, servers: [primary, standby])
        let writer = try URLMount(url)
        defer { _ = try? writer.unmount() }
        let other = try URLMount(url)
        defer { _ = try? other.unmount() }
        let file = "Employee/p\(key)/badgeNumber"
        let before = try run("cat", ["\(writer.path)/\(file)"]).output
        #expect(!before.isEmpty, "\(file) reads: \(writer.logText.suffix(2000))")
        #expect(try run("cat", ["\(other.path)/\(file)"]).output == before)
        #expect(try standby.storefsConnections() >= 2, "both mounts read on the standby")

        try standby.psql("SELECT pg_wal_replay_pause()")
        try standby.wait("replay to pause", seconds: 10) {
            try standby.value("SELECT pg_get_wal_replay_pause_state()") == "paused"
        }
        let written = try run("sh", ["-c", "echo 424242 > '\(writer.path)/\(file)'"])
        #expect(written.status == 0, "the write through the mount: \(written.error)")
        #expect(try run("cat", ["\(writer.path)/\(file)"]).output == "424242\n", "the writer reads its own write")
        let column = "SELECT \"ZBADGENUMBER\" FROM \(schema).\"ZPERSON\" WHERE \"Z_PK\" = \(key)"
        #expect(try primary.value(column) == "424242")
        #expect(try standby.value(column) != "424242", "the standby has not replayed the commit")
        Thread.sleep(forTimeInterval: 1)
        #expect(
            try run("cat", ["\(other.path)/\(file)"]).output == before,
            "the other mount reads the lagging standby: it shows the commit once replayed")

        try standby.psql("SELECT pg_wal_replay_resume()")
        let seen = try PostgresMountTests.seconds(until: {
            try run("cat", ["\(other.path)/\(file)"]).output == "424242\n"
        })
        #expect(seen != nil, "the other mount shows the commit once the standby replayed it")
        #expect(try run("cat", ["\(writer.path)/\(file)"]).output == "424242\n")
        #expect(try writer.unmount().status == 0)
        #expect(try other.unmount().status == 0)
    }
}
