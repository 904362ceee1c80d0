import Foundation
import ObjectGraph
import TestSupport
import Testing

@testable import PostgresStore

#if canImport(Glibc)
    import Glibc
#endif

/// What storefs does itself with the hosts of a multi-host URL (Sources/PostgresStore/HostList.swift):
/// the hosts read as libpq reads them, one deadline each, `prefer-standby` as two passes; the
/// file-lock session held on the primary whatever the URL prefers; and read-your-writes checked
/// per read connection, so that with two standbys one that caught up does not let a read go to
/// one that lags. Against real servers the tests start (a primary and two standbys made with
/// pg_basebackup -R), through Unix sockets.
@Suite(.serialized) struct PostgresHostListTests {
    typealias Cluster = PostgresStandbyTests

    // MARK: - Hosts (no server)

    @Test func theHostsOfAURLAreReadAsLibpqReadsThem() throws {
        let three = try #require(
            HostList(try PostgresLocation(URL(string: "postgresql:///g?host=a,b,c&port=1,2,3&user=u&schema=s")!)))
        #expect(three.hosts.map(\.name) == ["a:1", "b:2", "c:3"])
        for host in three.hosts {
            #expect(host.options.contains { $0 == ("user", "u") }, "every host keeps the URL's other options")
            #expect(!host.options.contains { $0.0 == "target_session_attrs" }, "each pass sets its own")
            #expect(host.options.filter { $0.0 == "host" || $0.0 == "port" }.count == 2)
        }
        #expect(three.passes == ["read-write"], "writes: a server that takes them")
        #expect(three.perHostLimit == HostList.defaultPerHostLimit)
        let reads = try #require(
            HostList(try PostgresLocation(URL(string: "postgresql:///g?host=a,b&port=5432")!).forReads))
        #expect(reads.passes == ["standby", "any"], "prefer-standby: standbys first, then any server")
        #expect(reads.hosts.map(\.name) == ["a:5432", "b:5432"], "one port for every host")
        let addresses = try #require(
            HostList(try PostgresLocation(URL(string: "postgresql:///g?hostaddr=10.0.0.1,10.0.0.2&connect_timeout=7")!))
        )
        #expect(addresses.hosts.map(\.name) == ["10.0.0.1", "10.0.0.2"])
        #expect(addresses.perHostLimit == 7, "the URL's connect_timeout is per host, as libpq reads it")
        let authority = try #require(HostList(try PostgresLocation(URL(string: "postgresql://db1,db2/graphs")!)))
        #expect(authority.hosts.map(\.name) == ["db1", "db2"])
        #expect(HostList(try PostgresLocation(URL(string: "postgresql://db1/graphs")!)) == nil, "one host: libpq's own")
        #expect(
            HostList(try PostgresLocation(URL(string: "postgresql:///g?host=a,b&port=1,2,3")!)) == nil,
            "ports that do not match the hosts: libpq says why at the connect")
        let locks = try PostgresLocation(URL(string: "postgresql:///g?host=a,b&target_session_attrs=prefer-standby")!)
            .forLocks
        #expect(locks.connectionURL.contains("target_session_attrs=read-write"))
        #expect(!locks.connectionURL.contains("prefer-standby"))
    }

    @Test func noHostThatQualifiesSaysWhatEachAnswered() throws {
        let folder = try ScratchSpace.folder("pghosts")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Two socket folders with no server: each refuses at once, and the message names both.
        let url = URL(string: "postgresql:///g?host=\(folder.path)/a,\(folder.path)/b&port=5432&timeout=5")!
        let started = Date()
        #expect {
            _ = try PostgresConnection(try PostgresLocation(url), timeout: 5)
        } throws: { error in
            let text = "\(error)"
            return text.contains("\(folder.path)/a:5432") && text.contains("\(folder.path)/b:5432")
        }
        #expect(Date().timeIntervalSince(started) < 5, "refusals are not waited for")
    }

    // MARK: - Locks on the primary

    @Test func theLockSessionIsOnThePrimaryWhateverTheURLPrefers() throws {
        let schema = PostgresServer.uniqueSchema("lockprimary")
        let (primary, standby) = try Cluster().cluster(schema)
        defer {
            standby.remove()
            primary.remove()
        }
        // The standby first, and the URL asking for one: reads and writes as asked, locks not.
        let url = PostgresServer.url(
            schema: schema, servers: [standby, primary], extra: "target_session_attrs=prefer-standby")
        let store = try Cluster().open(url)
        defer { store.close() }
        let name = SharedLockName(resource: 42, family: 1)
        let advisory = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
        #expect(try store.changeLock(name, from: nil, to: .exclusive).granted)
        #expect(try primary.value(advisory) == "1", "the lock is held in the primary")
        #expect(try standby.value(advisory) == "0", "not in the standby, where it would exclude nobody")
        // Another store on the primary alone is excluded, and let in once it is let go.
        let other = try Cluster().open(primary.url(schema: schema))
        defer { other.close() }
        #expect(try other.changeLock(name, from: nil, to: .exclusive).granted == false)
        #expect(try other.lockHeldElsewhere(name, excluding: .shared) == .exclusive)
        #expect(try store.changeLock(name, from: .exclusive, to: nil).granted)
        #expect(try other.changeLock(name, from: nil, to: .exclusive).granted)
        #expect(try other.changeLock(name, from: .exclusive, to: nil).granted)

        // The same through `session=` (where locks go behind a pooler), its URL naming the
        // standby first and asking for one: the locks are still the primary's.
        let session = PostgresServer.url(
            schema: schema, servers: [standby, primary], extra: "target_session_attrs=prefer-standby")
        let encoded = try #require(session.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let throughSession = try Cluster().open(
            try #require(URL(string: primary.url(schema: schema).absoluteString + "&session=" + encoded)))
        defer { throughSession.close() }
        #expect(try throughSession.changeLock(name, from: nil, to: .exclusive).granted)
        #expect(try primary.value(advisory) == "1", "the session= lock is held in the primary")
        #expect(try standby.value(advisory) == "0", "not in the standby the session= URL prefers")
        #expect(try other.changeLock(name, from: nil, to: .exclusive).granted == false)
    }

    // MARK: - Read-your-writes with two standbys

    @Test func aStandbyThatCaughtUpDoesNotClearTheWaitForAnother() throws {
        let schema = PostgresServer.uniqueSchema("twostandbys")
        let cluster = Cluster()
        let (primary, first) = try cluster.cluster(schema)
        defer {
            first.remove()
            primary.remove()
        }
        let second = try PostgresServer(name: "standby2", standbyOf: primary)
        defer { second.remove() }
        try second.waitForReplay(of: primary)
        let store = try cluster.open(PostgresServer.url(schema: schema, servers: [primary, first, second]))
        defer { store.close() }
        let reads = try #require(store.standbyReads)

        try second.psql("SELECT pg_wal_replay_pause()")
        try second.wait("replay to pause", seconds: 10) {
            try second.value("SELECT pg_get_wal_replay_pause_state()") == "paused"
        }
        try store.save(cluster.insert(store, 4...4))
        try first.waitForReplay(of: primary)
        // Read connections on each standby, as a pool holds them after one standby was down.
        let onFirst = try PostgresConnection(try PostgresLocation(first.url(schema: schema)), timeout: 10)
        let onSecond = try PostgresConnection(try PostgresLocation(second.url(schema: schema)), timeout: 10)
        let count = "SELECT count(*) FROM \"ZDEPARTMENT\""
        let deadline = Date().addingTimeInterval(20)
        #expect(try reads.read(count, [], on: onFirst, deadline: deadline)?.text(0, 0) == "4", "caught up: read there")
        #expect(try second.value("SELECT count(*) FROM \(schema).\"ZDEPARTMENT\"") == "3", "the second lags")
        #expect(
            try reads.read(count, [], on: onSecond, deadline: deadline) == nil,
            "the lagging standby is not read although the other caught up: the read goes to the primary")
        #expect(try reads.read(count, [], on: onFirst, deadline: deadline)?.text(0, 0) == "4")
        #expect(try cluster.name(store, 4) == .string("d4"), "the store reads its write, wherever it reads")

        try second.psql("SELECT pg_wal_replay_resume()")
        try second.waitForReplay(of: primary)
        #expect(
            try reads.read(count, [], on: onSecond, deadline: deadline)?.text(0, 0) == "4",
            "once replayed there, the second standby is read too")
    }
}
