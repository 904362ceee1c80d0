import Foundation
import ObjectGraph
import Synchronization
import TestSupport
import Testing

@testable import PostgresStore

#if canImport(Glibc)
    import Glibc
#endif

/// A store whose URL names a primary and its streaming hot standby (libpq's `host=A,B`), against
/// real servers the tests start (``PostgresServer``, pg_basebackup -R): reads go to the standby
/// and writes to the primary; a store reads its own commits at once, from the primary while the
/// standby has not replayed them (replay paused here); another store following through the
/// standby sees a commit within a second; after the primary is killed and the standby promoted
/// the store writes on by itself, and what synchronous replication changes about what a dead
/// primary takes with it.
@Suite(.serialized) struct PostgresStandbyTests {
    /// A primary holding store `schema` with departments 1...3, and its standby, caught up.
    func cluster(_ schema: String) throws -> (primary: PostgresServer, standby: PostgresServer) {
        let primary = try PostgresServer(name: "primary")
        do {
            let store = try PostgresStore(
                location: try PostgresLocation(primary.url(schema: schema)), model: SampleModel.make(),
                options: StoreOptions(createIfMissing: true))
            defer { store.close() }
            try store.save(insert(store, 1...3))
            let standby = try PostgresServer(name: "standby", standbyOf: primary)
            try standby.waitForReplay(of: primary)
            return (primary, standby)
        } catch {
            primary.remove()
            throw error
        }
    }

    func open(_ url: URL) throws -> PostgresStore {
        try PostgresStore(location: try PostgresLocation(url), model: nil)
    }

    func department(_ store: PostgresStore, _ key: Int64) -> ObjectID {
        ObjectID(entity: store.model.entityID(named: "Department")!, key: PrimaryKey(key))
    }

    func insert(_ store: PostgresStore, _ keys: ClosedRange<Int64>) -> SaveRequest {
        var request = SaveRequest()
        request.inserted = keys.map {
            Snapshot(objectID: department(store, $0), version: 1, attributes: ["name": .string("d\($0)")])
        }
        return request
    }

    func name(_ store: PostgresStore, _ key: Int64) throws -> AttributeValue? {
        try store.snapshots(for: [department(store, key)]).first?.attributes["name"]
    }

    func keys(on server: PostgresServer, _ schema: String) throws -> [Int64] {
        try server.value("SELECT string_agg(\"Z_PK\"::text, ' ' ORDER BY \"Z_PK\") FROM \(schema).\"ZDEPARTMENT\"")
            .split(separator: " ").compactMap { Int64($0) }
    }

    // MARK: - Locations (no server)

    @Test func severalHostsSendWritesToThePrimaryAndReadsToAStandby() throws {
        let both = try PostgresLocation(URL(string: "postgresql:///db?host=/run/a,/run/b&schema=s")!)
        #expect(both.namesSeveralHosts && both.readsFromStandby)
        #expect(both.connectionURL.contains("target_session_attrs=read-write"), "\(both.connectionURL)")
        #expect(both.forReads.connectionURL.contains("target_session_attrs=prefer-standby"))
        #expect(!both.forReads.connectionURL.contains("read-write"))
        #expect(!both.description.contains("target_session_attrs"), "what storefs adds is not shown: \(both)")
        let authority = try PostgresLocation(URL(string: "postgresql://db1,db2/graphs")!)
        #expect(authority.namesSeveralHosts && authority.readsFromStandby)
        let primary = try PostgresLocation(URL(string: "postgresql://db1,db2/graphs?reads=primary")!)
        #expect(primary.namesSeveralHosts && !primary.readsFromStandby)
        #expect(!primary.connectionURL.contains("reads="), "libpq refuses parameters it does not know")
        #expect(primary.description.contains("reads=primary"), "\(primary.description)")
        #expect(primary.forReads.connectionURL == primary.connectionURL)
        let one = try PostgresLocation(URL(string: "postgresql://db1/graphs")!)
        #expect(!one.namesSeveralHosts && !one.readsFromStandby && !one.connectionURL.contains("target_session"))
        let chosen = try PostgresLocation(URL(string: "postgresql://db1,db2/g?target_session_attrs=primary")!)
        #expect(chosen.connectionURL.contains("target_session_attrs=primary"))
        #expect(chosen.description.contains("target_session_attrs=primary"), "the user's own setting is shown")
        #expect(throws: ObjectGraphError.self) { try PostgresLocation(URL(string: "postgresql://a,b/g?reads=any")!) }
        let three = try PostgresLocation(URL(string: "postgresql:///g?host=a,b,c&hostaddr=10.0.0.1,10.0.0.2,10.0.0.3")!)
        #expect(three.namesSeveralHosts)
        #expect(StandbyReads.position("16/B374D848") == 0x16_B374_D848)
        #expect(StandbyReads.text(0x16_B374_D848) == "16/B374D848")
        for bad in ["", "1", "x/1", "1/2/3", "123456789/0"] { #expect(StandbyReads.position(bad) == nil, "\(bad)") }
    }

    // MARK: - Reads

    @Test func readsGoToTheStandbyUnlessReadsIsPrimary() throws {
        let (primary, standby) = try cluster("routed")
        defer {
            standby.remove()
            primary.remove()
        }
        let url = PostgresServer.url(schema: "routed", servers: [primary, standby])
        do {
            let store = try open(url)
            defer { store.close() }
            try store.save(insert(store, 4...4))
            #expect(try keys(on: primary, "routed") == [1, 2, 3, 4], "the write went to the primary")
            try standby.waitForReplay(of: primary)
            #expect(try store.objectIDs(of: department(store, 1).entity).map(\.key.rawValue) == [1, 2, 3, 4])
            #expect(try name(store, 2) == .string("d2"))
            #expect(try standby.storefsConnections() >= 1, "storefs reads on the standby")
            let counted = try #require(store.standbyReads)
            #expect(counted.standbyReads.load(ordering: .relaxed) >= 2)
        }
        try standby.wait("the first store's connections to end", seconds: 10) { try standby.storefsConnections() == 0 }
        let kept = try open(PostgresServer.url(schema: "routed", servers: [primary, standby], extra: "reads=primary"))
        defer { kept.close() }
        #expect(kept.standbyReads == nil)
        #expect(try kept.objectIDs(of: department(kept, 1).entity).count == 4)
        #expect(try name(kept, 4) == .string("d4"))
        #expect(try standby.storefsConnections() == 0, "reads=primary keeps reads off the standby")
    }

    /// Replay paused on the standby: the store that wrote reads its writes exactly (from the
    /// primary), another store reading from the standby still sees the old rows, and once the
    /// standby has replayed the commit the writer's reads go back to it.
    @Test func aStoreReadsItsOwnWritesWhileTheStandbyLags() throws {
        let (primary, standby) = try cluster("lagging")
        defer {
            standby.remove()
            primary.remove()
        }
        let url = PostgresServer.url(schema: "lagging", servers: [primary, standby])
        let writer = try open(url)
        defer { writer.close() }
        let other = try open(url)
        defer { other.close() }
        #expect(try name(writer, 1) == .string("d1"))
        try standby.psql("SELECT pg_wal_replay_pause()")
        try standby.wait("replay to pause", seconds: 10) {
            try standby.value("SELECT pg_get_wal_replay_pause_state()") == "paused"
        }
        let read = try #require(try writer.snapshots(for: [department(writer, 1)]).first)
        var renamed = read
        renamed.attributes["name"] = .string("renamed")
        var request = insert(writer, 10...10)
        request.updated = [.init(snapshot: renamed, original: read)]
        try writer.save(request)
        let counters = try #require(writer.standbyReads)
        let fromPrimary = counters.primaryReads.load(ordering: .relaxed)
        #expect(try name(writer, 1) == .string("renamed"), "the writer reads its own update")
        #expect(try name(writer, 10) == .string("d10"), "the writer reads its own insert")
        #expect(try writer.objectIDs(of: department(writer, 1).entity).map(\.key.rawValue) == [1, 2, 3, 10])
        #expect(counters.primaryReads.load(ordering: .relaxed) >= fromPrimary + 3, "from the primary")
        #expect(try name(other, 1) == .string("d1"), "another store reads the lagging standby")
        #expect(try name(other, 10) == nil)
        #expect(try keys(on: standby, "lagging") == [1, 2, 3], "the standby has not replayed the commit")
        try standby.psql("SELECT pg_wal_replay_resume()")
        try standby.waitForReplay(of: primary)
        let fromStandby = counters.standbyReads.load(ordering: .relaxed)
        #expect(try name(writer, 1) == .string("renamed"))
        #expect(try name(other, 1) == .string("renamed"))
        #expect(counters.standbyReads.load(ordering: .relaxed) == fromStandby + 1, "replayed: back on the standby")
    }

    // MARK: - Visibility

    /// How soon another store sees a commit: one following through the standby (its reads and
    /// its history there; a standby refuses LISTEN) and one through the primary (LISTEN), 30
    /// commits each, one at a time at random moments. Seen means announced and read back with the new value.
    /// The aim is 1 s at p99 (printed with the figures); the test fails past 5 s, as
    /// PostgresMultiHostTests does, since a loaded machine delays any reader.
    @Test func anotherStoreSeesACommitThroughTheStandbyWithinASecond() throws {
        let (primary, standby) = try cluster("visible")
        defer {
            standby.remove()
            primary.remove()
        }
        let writer = try open(PostgresServer.url(schema: "visible", servers: [primary, standby]))
        defer { writer.close() }
        for (place, extra) in [("a standby", ""), ("the primary", "reads=primary")] {
            let follower = try open(PostgresServer.url(schema: "visible", servers: [primary, standby], extra: extra))
            defer { follower.close() }
            _ = follower.takeAnnouncedChanges()
            Thread.sleep(forTimeInterval: 1)
            var delays: [Double] = []
            let first: Int64 = place == "a standby" ? 100 : 200
            for key in first..<(first + 30) {
                // Commits at any moment of the follower's half-second polls, not just after one.
                usleep(UInt32.random(in: 0..<500_000))
                try writer.save(insert(writer, key...key))
                let committed = Date()
                let id = department(follower, key)
                var seen = false
                while !seen && Date().timeIntervalSince(committed) < 5 {
                    if follower.takeAnnouncedChanges().changed.contains(id) {
                        seen = try follower.snapshots(for: [id]).first?.attributes["name"] == .string("d\(key)")
                        #expect(seen, "announced through \(place) but read without its commit: \(key)")
                    }
                    if !seen { usleep(5_000) }
                }
                #expect(seen, "commit \(key) seen through \(place) within 5 s")
                delays.append(Date().timeIntervalSince(committed))
            }
            if extra.isEmpty { #expect(try standby.storefsConnections() >= 1, "the follower reads on the standby") }
            delays.sort()
            let p50 = delays[delays.count / 2]
            let p99 = delays[min(delays.count - 1, Int((Double(delays.count) * 0.99).rounded(.up)) - 1)]
            print(
                "postgresql visibility through \(place): \(delays.count) commits, p50 \(String(format: "%.3f", p50)) s, "
                    + "p99 \(String(format: "%.3f", p99)) s, max \(String(format: "%.3f", delays.last ?? 0)) s, "
                    + "over 1 s \(delays.filter { $0 > 1 }.count)")
        }
    }

    // MARK: - Failover

    /// A writer inserts 60 departments one at a time, each retried until acknowledged; a third
    /// of the way the primary is killed (SIGKILL, every process) and the standby promoted. With
    /// synchronous replication every acknowledged insert is on the new primary, exactly once.
    /// Prints the failover time (the kill to the first acknowledged save begun after it).
    @Test func afterTheStandbyIsPromotedEveryAcknowledgedCommitIsThere() throws {
        let (primary, standby) = try cluster("failover")
        defer {
            standby.remove()
            primary.remove()
        }
        try primary.requireSynchronousStandby()
        let store = try open(PostgresServer.url(schema: "failover", servers: [primary, standby], extra: "timeout=5"))
        defer { store.close() }
        let run = WriterRun()
        let writer = Thread {
            for key in Int64(10)..<70 {
                // Keys 30–32 are saved while the kill lands, and the rest begin after it: the
                // writer alone could finish before the kill (it did under CI), leaving no save to
                // time the failover by.
                if key == 30 { run.await { $0.killing.withLock { $0 } } }
                if key == 33 { run.await { $0.killedAt.withLock { $0 } } }
                let deadline = Date().addingTimeInterval(60)
                while Date() < deadline {
                    // A save begun before the kill may have committed on the old primary.
                    let begunAfterTheKill = run.killedAt.withLock { $0 } != nil
                    do {
                        try store.save(insert(store, key...key))
                        run.acknowledged.withLock { $0.append(key) }
                        if begunAfterTheKill { run.firstAfter.withLock { $0 = $0 ?? Date() } }
                        break
                    } catch {
                        run.errors.withLock { $0.append("\(key): \(String(describing: error).prefix(160))") }
                        usleep(50_000)
                    }
                }
            }
        }
        writer.start()
        try primary.wait("20 acknowledged inserts", seconds: 60) { run.acknowledged.withLock { $0.count } >= 20 }
        run.killing.withLock { $0 = Date() }
        try primary.killAll()
        run.killedAt.withLock { $0 = Date() }
        try standby.promote()
        try standby.wait("the writer to finish", seconds: 120) { run.acknowledged.withLock { $0.count } == 60 }
        let keys = try keys(on: standby, "failover")
        let saved = run.acknowledged.withLock { $0 }
        #expect(saved == Array(10..<70), "every insert was acknowledged once, in order")
        #expect(keys == [1, 2, 3] + Array(10..<70), "every acknowledged commit is on the new primary, once")
        #expect(
            run.errors.withLock { $0 }.allSatisfy { !$0.contains("exists") && !$0.contains("conflict") },
            "nothing applied twice: \(run.errors.withLock { $0 })")
        #expect(try name(store, 69) == .string("d69"), "reads follow the new primary")
        let failover = try #require(run.firstAfter.withLock { $0 }).timeIntervalSince(
            try #require(run.killedAt.withLock { $0 }))
        print(
            "postgresql failover (synchronous): kill to the first acknowledged save begun after it \(String(format: "%.2f", failover)) s; "
                + "\(run.errors.withLock { $0.count }) saves answered an error and were retried")
    }

    /// The standby stopped, one insert, the primary killed, the standby started and promoted.
    /// Asynchronous replication acknowledges the insert and loses it with the primary (what
    /// docs/POSTGRESQL.md warns of); synchronous replication never acknowledges it (the save
    /// fails at its timeout) so nothing acknowledged is lost.
    @Test(arguments: [false, true]) func aCommitTheStandbyNeverGotIsLostOnlyWithoutSynchronousReplication(
        synchronous: Bool
    ) throws {
        let (primary, standby) = try cluster("lost")
        defer {
            standby.remove()
            primary.remove()
        }
        if synchronous { try primary.requireSynchronousStandby() }
        let store = try open(PostgresServer.url(schema: "lost", servers: [primary, standby], extra: "timeout=3"))
        defer { store.close() }
        try store.save(insert(store, 4...4))
        try standby.stop(mode: "fast")
        let answer = SaveAnswer()
        let saving = Thread {
            do {
                try store.save(insert(store, 5...5))
                answer.value.withLock { $0 = .success(()) }
            } catch {
                answer.value.withLock { $0 = .failure(error as? ObjectGraphError ?? ObjectGraphError(.io, "\(error)")) }
            }
        }
        saving.start()
        if synchronous {
            // Past the save's timeout: its COMMIT waits for the standby, and the store waits to
            // learn its outcome instead of ending it (which would make it visible on the primary
            // alone).
            Thread.sleep(forTimeInterval: 5)
            #expect(answer.value.withLock { $0 == nil }, "no answer while the standby has not confirmed the commit")
        } else {
            try primary.wait("the save's answer", seconds: 30) { answer.value.withLock { $0 != nil } }
            #expect(
                answer.value.withLock { if case .success? = $0 { true } else { false } },
                "asynchronous: acknowledged by the primary alone")
        }
        try primary.killAll()
        try standby.start()
        try standby.promote()
        if synchronous {
            try standby.wait("the save's answer", seconds: 90) { answer.value.withLock { $0 != nil } }
            let answered = answer.value.withLock { $0 }
            #expect(
                answered.map { if case .failure(let error) = $0 { error.code == .io } else { false } } == true,
                "the commit the standby never confirmed is answered EIO: \(String(describing: answered))")
        }
        let deadline = Date().addingTimeInterval(60)
        var written = false
        while !written && Date() < deadline {
            do {
                try store.save(insert(store, 6...6))
                written = true
            } catch {
                usleep(100_000)
            }
        }
        #expect(written, "the store writes to the promoted standby by itself")
        #expect(try keys(on: standby, "lost") == [1, 2, 3, 4, 6], "the insert the standby never got is gone")
        #expect(try store.objectIDs(of: department(store, 1).entity).map(\.key.rawValue) == [1, 2, 3, 4, 6])
    }
}

/// What the failover test's writer thread did.
final class WriterRun: Sendable {
    let acknowledged = Mutex<[Int64]>([])
    let errors = Mutex<[String]>([])
    let killing = Mutex<Date?>(nil)
    let killedAt = Mutex<Date?>(nil)
    let firstAfter = Mutex<Date?>(nil)

    /// Waits (up to two minutes, so a failed test still ends) until the moment is set.
    func await(_ moment: (WriterRun) -> Date?) {
        let deadline = Date().addingTimeInterval(120)
        while moment(self) == nil && Date() < deadline { usleep(5_000) }
    }
}

/// The answer a save on another thread got.
final class SaveAnswer: Sendable {
    let value = Mutex<Result<Void, ObjectGraphError>?>(nil)
}
