import Foundation
import ObjectGraph
import PostgresStore
import TestSupport
import Testing

/// PostgreSQL stores opened through a real pgbouncer in transaction mode (``PgBouncer``): no
/// session state is assumed, so stores of different schemas whose transactions take turns on one
/// server connection each read and write their own; what needs a session (file locks, LISTEN)
/// goes to the URL's `session=` or is refused / replaced by reading the history.
@Suite struct PostgresPoolerTests {
    func open(_ url: URL, create: Bool = true) throws -> PostgresStore {
        try PostgresStore(
            location: try PostgresLocation(url), model: SampleModel.make(),
            options: StoreOptions(createIfMissing: create)
        )
    }

    @Test func sessionParameterIsCheckedAndShownWithoutItsPassword() throws {
        let session = "postgresql://u:secret@direct:5432/d".addingPercentEncoding(
            withAllowedCharacters: .alphanumerics)!
        let location = try PostgresLocation(URL(string: "postgresql://u@pooler:6432/d?schema=s&session=\(session)")!)
        #expect(location.hasSessionURL)
        #expect(location.description.contains("session=") && location.description.contains("direct"))
        #expect(!location.description.contains("secret"), "\(location.description)")
        #expect(try !PostgresLocation(URL(string: "postgresql://u@pooler:6432/d")!).hasSessionURL)
        let nested = "postgresql://u@direct/d?session=\(session)".addingPercentEncoding(
            withAllowedCharacters: .alphanumerics)!
        for wrong in ["session=", "session=http%3A%2F%2Fx", "session=\(nested)"] {
            #expect(throws: ObjectGraphError.self, "\(wrong)") {
                _ = try PostgresLocation(URL(string: "postgresql://u@pooler/d?\(wrong)")!)
            }
        }
    }

    /// Two stores in two schemas, their saves and reads interleaved through a pooler whose pool
    /// holds one server connection: each store's rows land in its own schema and read back as
    /// written, although every transaction of both ran on the same server session.
    @Test func twoSchemasSharingOneServerConnectionEachReadAndWriteTheirOwn() throws {
        let server = try PostgresServer.shared()
        let pooler = try PgBouncer(name: "schemas", in: server, poolSize: 1)
        defer { pooler.remove() }
        let schemas = [PostgresServer.uniqueSchema("poola"), PostgresServer.uniqueSchema("poolb")]
        let stores = try schemas.map { try open(pooler.url(schema: $0)) }
        defer { for store in stores { store.close() } }
        let department = stores[0].model.entityID(named: "Department")!
        let rounds = 40
        for round in 1...rounds {
            for (index, store) in stores.enumerated() {
                var request = SaveRequest()
                request.inserted = [
                    Snapshot(
                        objectID: ObjectID(entity: department, key: PrimaryKey(Int64(round))), version: 1,
                        attributes: ["name": .string("\(index == 0 ? "A" : "B")\(round)")])
                ]
                try store.save(request)
            }
            // Reads of both, taking turns on the one server connection too.
            for (index, store) in stores.enumerated() {
                let id = ObjectID(entity: department, key: PrimaryKey(Int64(round)))
                let read = try store.snapshots(for: [id])
                #expect(
                    read.first?.attributes["name"] == .string("\(index == 0 ? "A" : "B")\(round)"), "round \(round)")
            }
        }
        #expect(try pooler.serverConnections() == 1, "one server connection served both stores")
        // The server's own view, not through storefs: each schema holds its store's rows only.
        for (index, schema) in schemas.enumerated() {
            let names = try server.psql(
                "SELECT string_agg(\"ZNAME\", ',' ORDER BY \"Z_PK\") FROM \(schema).\"ZDEPARTMENT\""
            )
            .trimmingCharacters(in: .whitespacesAndNewlines)
            let expected = (1...rounds).map { "\(index == 0 ? "A" : "B")\($0)" }.joined(separator: ",")
            #expect(names == expected, "schema \(schema)")
        }
        // The one server connection keeps none of the stores' settings between transactions:
        // a client of the pooler that sets nothing sees the server's defaults on it.
        let settings = try pooler.psql(
            "SELECT current_setting('search_path'), current_setting('statement_timeout'), "
                + "current_setting('lock_timeout'), current_setting('idle_in_transaction_session_timeout')")
        #expect(settings.trimmingCharacters(in: .whitespacesAndNewlines) == "\"$user\", public|0|0|0", "\(settings)")
    }

    /// A store that follows another through the pooler hears of its commits by reading the
    /// history (LISTEN would be heard on a server connection it gives back); file locks through
    /// the pooler are refused with a message that names `session=`, and granted through it.
    @Test func followersPollThroughThePoolerAndLocksNeedTheSessionURL() throws {
        let server = try PostgresServer.shared()
        let pooler = try PgBouncer(name: "follow", in: server, poolSize: 2)
        defer { pooler.remove() }
        let schema = PostgresServer.uniqueSchema("poolfollow")
        let writer = try open(pooler.url(schema: schema))
        defer { writer.close() }
        let follower = try open(pooler.url(schema: schema), create: false)
        defer { follower.close() }
        let listening = try open(pooler.urlWithSession(schema: schema), create: false)
        defer { listening.close() }
        #expect(follower.takeAnnouncedChanges().isEmpty && listening.takeAnnouncedChanges().isEmpty)
        Thread.sleep(forTimeInterval: 0.5)
        let department = writer.model.entityID(named: "Department")!
        let ids = (1...30).map { ObjectID(entity: department, key: PrimaryKey(Int64($0))) }
        for id in ids {
            var request = SaveRequest()
            request.inserted = [
                Snapshot(objectID: id, version: 1, attributes: ["name": .string("d\(id.key.rawValue)")])
            ]
            try writer.save(request)
        }
        for (name, store) in [("through the pooler", follower), ("with session=", listening)] {
            var heard = AnnouncedChanges()
            let started = Date()
            while heard.changed.count < ids.count && Date().timeIntervalSince(started) < 10 {
                heard.formUnion(store.takeAnnouncedChanges())
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(heard.changed == Set(ids), "\(name): heard \(heard.changed.count) of \(ids.count)")
        }
        let lock = SharedLockName(resource: 42, family: 1)
        #expect {
            _ = try follower.changeLock(lock, from: nil, to: .exclusive)
        } throws: { error in
            "\(error)".contains("session=")
        }
        let granted = try listening.changeLock(lock, from: nil, to: .exclusive)
        #expect(granted.granted, "through session= the lock is a session advisory lock on the server")
        let held = try server.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")
        #expect(Int(held.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 >= 1)
        #expect(try listening.changeLock(lock, from: .exclusive, to: nil).granted)
    }
}
