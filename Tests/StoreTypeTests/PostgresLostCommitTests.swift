import Foundation
import ObjectGraph
import Synchronization
import TestSupport
import Testing

@testable import PostgresStore

#if canImport(Glibc)
    import Glibc
#endif

/// A save whose connection is lost exactly at COMMIT (its server process stopped or killed at
/// that moment, against a real server): the save's answer must be what the server kept. "Saved"
/// for a change the server does not have loses an acknowledged write; EIO for a change it has
/// makes the writer apply its change twice (scripts/pg-multihost's counters, issue 34).
@Suite(.serialized) struct PostgresLostCommitTests {
    /// A store with one department named "before"; its URL.
    func department(_ store: PostgresStore) throws -> (ObjectID, Snapshot) {
        let id = ObjectID(entity: store.model.entityID(named: "Department")!, key: PrimaryKey(1))
        var insert = SaveRequest()
        insert.inserted = [Snapshot(objectID: id, version: 1, attributes: ["name": .string("before")])]
        try store.save(insert)
        return (id, try #require(try store.snapshots(for: [id]).first))
    }

    func rename(_ original: Snapshot, to name: String) -> SaveRequest {
        var changed = original
        changed.attributes["name"] = .string(name)
        var request = SaveRequest()
        request.updated = [.init(snapshot: changed, original: original)]
        return request
    }

    /// The save's answer is what the server kept: success with "after", EIO with "before".
    func expectAnswer(_ answer: ObjectGraphError?, keptBy server: PostgresServer, schema: String, _ id: ObjectID)
        throws
    {
        let kept = try server.psql(
            "SELECT \"ZNAME\" FROM \(schema).\"ZDEPARTMENT\" WHERE \"Z_PK\" = \(id.key.rawValue)")
        if let answer {
            #expect(answer.code == .io, "\(answer)")
            #expect(kept == "before\n", "the save answered EIO (\(answer.message)) but the server kept its change")
        } else {
            #expect(kept == "after\n", "the save answered success but the server has \(kept)")
        }
    }

    /// Waits until server process `pid` is gone (its transaction over), at most 30 s.
    func waitUntilGone(_ pid: Int32, on server: PostgresServer) throws {
        let deadline = Date().addingTimeInterval(30)
        while try server.psql("SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid)") != "0\n" {
            guard Date() < deadline else { throw TestServerError("server process \(pid) still runs after 30 s") }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    /// The server process stalls as COMMIT is sent (SIGSTOP: a server stuck on its disk, a network
    /// holding the packet); the store gives up waiting (timeout=3) and looks for the outcome on a
    /// new connection while the COMMIT is still on its way; the process then goes on. Whatever it
    /// then does, the answer the save gave must be what the server has.
    @Test func aCommitStillOnItsWayIsNotReportedAsFailedWhenItLands() throws {
        let server = try PostgresServer.shared()
        let url = server.url(schema: PostgresServer.uniqueSchema("late_commit"))
        let store = try PostgresStore(
            location: try PostgresLocation(URL(string: url.absoluteString + "&timeout=3")!),
            model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        defer { store.close() }
        let (id, original) = try department(store)
        let stopped = Atomic<Int32>(0)
        store.beforeCommit.withLock {
            $0 = { pid in
                guard stopped.compareExchange(expected: 0, desired: pid, ordering: .relaxed).exchanged else { return }
                kill(pid, SIGSTOP)
            }
        }
        // The stalled process goes on once the save answered, or 2 s after the store gave up
        // waiting for COMMIT's answer (whichever is first): the COMMIT then reaches it.
        let answered = Atomic<Bool>(false)
        let resumer = Thread {
            let deadline = Date().addingTimeInterval(3 + 2)
            while !answered.load(ordering: .relaxed) && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            let pid = stopped.load(ordering: .relaxed)
            if pid > 0 { kill(pid, SIGCONT) }
        }
        resumer.start()
        var answer: ObjectGraphError?
        do { try store.save(rename(original, to: "after")) } catch { answer = error }
        answered.store(true, ordering: .relaxed)
        let pid = stopped.load(ordering: .relaxed)
        try #require(pid > 0, "the save reached COMMIT")
        Thread.sleep(forTimeInterval: 0.1)
        kill(pid, SIGCONT)
        try waitUntilGone(pid, on: server)
        let schema = url.query!.split(separator: "&").first { $0.hasPrefix("schema=") }!.dropFirst(7)
        try expectAnswer(answer, keptBy: server, schema: String(schema), id)
    }

    /// The save's server process dies as COMMIT is sent, the server restarts after the crash, and
    /// another store commits before this one can ask: that commit takes the history number this
    /// save had. The save did not commit and must not say it did.
    @Test func aCommitLostInACrashIsNotTakenForAnotherWritersCommit() throws {
        let server = try PostgresServer(name: "lost-commit")
        defer { server.remove() }
        try server.psql("CREATE ROLE writer LOGIN; GRANT CREATE ON DATABASE postgres TO writer")
        let schema = "lost"
        let asPostgres = server.url(schema: schema)
        let asWriter = URL(
            string: asPostgres.absoluteString.replacingOccurrences(of: "user=postgres", with: "user=writer"))!
        let store = try PostgresStore(
            location: try PostgresLocation(asWriter), model: SampleModel.make(),
            options: StoreOptions(createIfMissing: true))
        defer { store.close() }
        let (id, original) = try department(store)
        let killed = Atomic<Int32>(0)
        store.beforeCommit.withLock {
            $0 = { pid in
                guard killed.compareExchange(expected: 0, desired: pid, ordering: .relaxed).exchanged else { return }
                // The store cannot ask until the other writer has committed: its role may not log in.
                _ = try? server.psql("ALTER ROLE writer NOLOGIN")
                kill(pid, SIGKILL)
            }
        }
        let other = Mutex<Result<Int64, Error>?>(nil)
        let competitor = Thread {
            // Waits for the crash to be over, commits one insert (history number reused), lets
            // the store in again.
            let result = Result<Int64, Error> {
                let deadline = Date().addingTimeInterval(60)
                while killed.load(ordering: .relaxed) == 0 {
                    guard Date() < deadline else { throw TestServerError("the save never reached COMMIT") }
                    Thread.sleep(forTimeInterval: 0.02)
                }
                defer { _ = try? server.psql("ALTER ROLE writer LOGIN") }
                // Until the server has restarted after the crash, connections fail or are ended.
                while true {
                    do {
                        let writer = try PostgresStore(
                            location: try PostgresLocation(asPostgres), model: nil, options: StoreOptions())
                        defer { writer.close() }
                        var insert = SaveRequest()
                        insert.inserted = [
                            Snapshot(
                                objectID: ObjectID(
                                    entity: writer.model.entityID(named: "Department")!, key: PrimaryKey(2)),
                                version: 1, attributes: ["name": .string("other")])
                        ]
                        try writer.save(insert)
                        return try writer.persistentHistory().last?.number ?? -1
                    } catch {
                        guard Date() < deadline else { throw error }
                        Thread.sleep(forTimeInterval: 0.2)
                    }
                }
            }
            other.withLock { $0 = result }
        }
        competitor.start()
        var answer: ObjectGraphError?
        let historyBefore = try store.persistentHistory().last?.number ?? 0
        do { try store.save(rename(original, to: "after")) } catch { answer = error }
        let deadline = Date().addingTimeInterval(60)
        while other.withLock({ $0 }) == nil && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let otherNumber = try #require(other.withLock { $0 }).get()
        #expect(otherNumber == historyBefore + 1, "the other writer's commit took the number the lost one had")
        try expectAnswer(answer, keptBy: server, schema: String(schema), id)
    }
}
