import Foundation
import ObjectGraph
import PostgresStore
import SQLiteStore
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The PostgreSQL store against a real server the tests start (``PostgresServer``): values
/// bit for bit, Core Data's schema, keys handed out safely to several stores at once, optimistic
/// locking property by property, every commit announced to the other stores, migration from
/// SQLite and back unchanged, and a server that goes away and comes back.
@Suite struct PostgresStoreTests {
    func open(_ url: URL, model: ManagedObjectModel? = SampleModel.make(), create: Bool = true) throws -> PostgresStore
    {
        try PostgresStore(
            location: try PostgresLocation(url), model: model, options: StoreOptions(createIfMissing: create))
    }

    // MARK: - Locations (no server)

    @Test func urlsNameTheSchemaAndNeverShowThePassword() throws {
        let plain = try PostgresLocation(URL(string: "postgresql://app@db.example/graphs")!)
        #expect(plain.schema == "storefs")
        let named = try PostgresLocation(
            URL(string: "postgresql://app:s3cret@db.example:6432/graphs?schema=team_a&sslmode=require")!)
        #expect(named.schema == "team_a")
        #expect(!named.description.contains("s3cret"), "\(named.description)")
        #expect(named.description.contains("sslmode=require") && named.description.contains("schema=team_a"))
        let path = try PostgresLocation(URL(string: "postgres://h/db?options=-csearch_path%3Dproj_x,public")!)
        #expect(path.schema == "proj_x")
        #expect(StoreURL.describe(URL(string: "postgresql://u:pw@h/db")!) == "postgresql://u:***@h/db")
        for bad in ["schema=1abc", "schema=a%20b", "schema=a;drop", "schema=" + String(repeating: "x", count: 64)] {
            #expect(throws: ObjectGraphError.self, "\(bad)") {
                try PostgresLocation(URL(string: "postgresql://h/db?\(bad)")!)
            }
        }
    }

    // MARK: - Values and schema

    @Test func everyValueComesBackWithTheSameBits() throws {
        let server = try PostgresServer.shared()
        let url = server.url(schema: PostgresServer.uniqueSchema("values"))
        let store = try open(url)
        defer { store.close() }
        var request = StoreFixtures.awkwardSave(model: store.model)
        // PostgreSQL's text has no NUL: that one value is refused at the write (below), not stored.
        for i in request.inserted.indices {
            for name in ["firstName", "lastName"] {
                if case .string(let text)? = request.inserted[i].attributes[name], text.contains("\u{0}") {
                    request.inserted[i].attributes[name] = .string(text.replacingOccurrences(of: "\u{0}", with: ""))
                }
            }
        }
        try store.save(request)
        let reopened = try open(url, model: nil, create: false)
        defer { reopened.close() }
        let memory = GraphStore(model: store.model)
        try memory.save(request)
        try StoreFixtures.expectSameGraph(memory, reopened, metadata: false)
        #expect(reopened.modelSource == .keptByStoreFS, "the model is kept in the store")
        let employee = store.model.entityID(named: "Employee")!
        let name = try #require(store.model[employee].allAttributes.first { $0.name == "firstName" })
        StoreFixtures.expectError(.validation, mentioning: "NUL") {
            try store.check(.string("a\u{0}b"), for: name, of: employee)
        }
        // Core Data's schema, in PostgreSQL's types.
        let schema = try #require(url.query?.split(separator: "&").first { $0.hasPrefix("schema=") }?.dropFirst(7))
        let tables = try server.psql(
            "SELECT string_agg(tablename, ' ' ORDER BY tablename) FROM pg_tables WHERE schemaname = '\(schema)'")
        for table in [
            "ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING", "ZDEPARTMENT", "ZPERSON", "ZPROJECT", "Z_METADATA",
            "Z_PRIMARYKEY"
        ] {
            #expect(tables.contains(table), "table \(table) in \(tables)")
        }
        let types = try server.psql(
            "SELECT string_agg(column_name || ':' || data_type, ' ' ORDER BY column_name) FROM information_schema.columns "
                + "WHERE table_schema = '\(schema)' AND table_name = 'ZPERSON'")
        for column in [
            "Z_PK:bigint", "Z_ENT:integer", "Z_OPT:bigint", "ZBADGENUMBER:bigint", "ZLEVEL:smallint", "ZRATING:real",
            "ZSALARY:numeric", "ZPHOTO:bytea", "ZPERSONID:uuid", "ZISREMOTE:boolean", "ZFIRSTNAME:text"
        ] {
            #expect(types.contains(column), "\(column) in \(types)")
        }
    }

    // MARK: - Several writers

    @Test func keysFromSeveralStoresAtOnceNeverCollide() throws {
        let server = try PostgresServer.shared()
        let url = server.url(schema: PostgresServer.uniqueSchema("keys"))
        let stores = try (0..<3).map { i in try open(url, create: i == 0) }
        defer { for store in stores { store.close() } }
        let department = stores[0].model.entityID(named: "Department")!
        let handed = Mutex<[Int64]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 12) { i in
            for _ in 0..<20 {
                do {
                    let keys = try stores[i % stores.count].reserveKeys(in: department, count: 1 + i % 3)
                    handed.withLock { $0 += keys.map(\.rawValue) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        let keys = handed.withLock { $0 }
        #expect(keys.count == (0..<12).reduce(0) { $0 + 20 * (1 + $1 % 3) })
        #expect(Set(keys).count == keys.count, "no key handed out twice")
        // A key claimed by one store is above Z_MAX for nobody else.
        let claimed = PrimaryKey((keys.max() ?? 0) + 100)
        #expect(try stores[1].claimKey(claimed, in: department))
        #expect(try stores[2].reserveKeys(in: department, count: 1)[0].rawValue > claimed.rawValue)
    }

    /// The highest key handed out is Z_MAX, also when no object has it (a migration carries it
    /// to the new store, so no key is ever given twice).
    @Test func theHighestKeyHandedOutCountsKeysNoObjectHas() throws {
        let server = try PostgresServer.shared()
        let store = try open(server.url(schema: PostgresServer.uniqueSchema("highest")), create: true)
        defer { store.close() }
        let department = store.model.entityID(named: "Department")!
        #expect(try store.highestKey(in: department) == 0)
        let keys = try store.reserveKeys(in: department, count: 5)
        #expect(try store.highestKey(in: department) == keys.last?.rawValue)
    }

    @Test func conflictsAreFoundPropertyByPropertyAndNameTheObject() throws {
        let server = try PostgresServer.shared()
        let url = server.url(schema: PostgresServer.uniqueSchema("conflicts"))
        let a = try open(url)
        let b = try open(url, model: nil, create: false)
        defer {
            a.close()
            b.close()
        }
        let model = a.model
        let employee = model.entityID(named: "Employee")!
        let id = ObjectID(entity: employee, key: PrimaryKey(1))
        var insert = SaveRequest()
        insert.inserted = [
            Snapshot(objectID: id, version: 1, attributes: ["firstName": .string("Ada"), "lastName": .string("Byron")])
        ]
        try a.save(insert)
        let read = try #require(try b.snapshots(for: [id]).first)
        func update(_ name: String, _ value: String, from original: Snapshot) -> SaveRequest {
            var new = original
            new.attributes[name] = .string(value)
            var request = SaveRequest()
            request.updated = [.init(snapshot: new, original: original)]
            return request
        }
        try a.save(update("lastName", "Lovelace", from: read))
        // Another property of the same object: both changes are kept.
        try b.save(update("firstName", "Augusta", from: read))
        let now = try #require(try a.snapshots(for: [id]).first)
        #expect(now.attributes["firstName"] == .string("Augusta") && now.attributes["lastName"] == .string("Lovelace"))
        #expect(now.version == 3)
        // The same property, from what was read before another writer changed it: refused.
        do {
            try b.save(update("lastName", "King", from: read))
            Issue.record("a conflicting update was saved")
        } catch {
            #expect(
                error.code == .conflict && error.objects == [id] && error.message.contains("Employee p1"), "\(error)")
        }
        var delete = SaveRequest()
        delete.deleted = [.init(objectID: id, expectedVersion: read.version)]
        #expect(throws: ObjectGraphError.self) { try b.save(delete) }
        #expect(
            try a.snapshots(for: [id]).first?.attributes["lastName"] == .string("Lovelace"),
            "the first writer's value stays")
    }

    @Test func everyCommitIsAnnouncedToTheOtherStoresWithItsObjects() throws {
        let server = try PostgresServer.shared()
        let url = server.url(schema: PostgresServer.uniqueSchema("announce"))
        let writer = try open(url)
        let listener = try open(url, model: nil, create: false)
        defer {
            writer.close()
            listener.close()
        }
        #expect(listener.takeAnnouncedChanges().isEmpty, "starts the listener; nothing yet")
        Thread.sleep(forTimeInterval: 0.5)
        let department = writer.model.entityID(named: "Department")!
        let ids = (1...3).map { ObjectID(entity: department, key: PrimaryKey(Int64($0))) }
        var request = SaveRequest()
        request.inserted = ids.map { Snapshot(objectID: $0, version: 1, attributes: ["name": .string("d\($0.key)")]) }
        let started = Date()
        try writer.save(request)
        var heard = AnnouncedChanges()
        while heard.changed.count < 3 && Date().timeIntervalSince(started) < 5 {
            heard.formUnion(listener.takeAnnouncedChanges())
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(heard.changed == Set(ids) && heard.insertedOrDeleted == Set(ids), "\(heard)")
        #expect(Date().timeIntervalSince(started) < 1, "announced within a second")
        #expect(writer.takeAnnouncedChanges().isEmpty, "a store is not told of its own commits")
        let history = try listener.persistentHistory()
        #expect(history.last?.changes.map(\.objectID).sorted() == ids && history.last?.author == "storefs")
    }

    // MARK: - Replicas

    @Test func aReadOnlyStoreOnAHotStandbyLearnsOfCommitsAndRefusesWrites() throws {
        let primary = try PostgresServer(name: "primary")
        defer { primary.remove() }
        let writer = try open(primary.url(schema: "replicated"))
        defer { writer.close() }
        let department = writer.model.entityID(named: "Department")!
        func insert(_ key: Int64) -> SaveRequest {
            var request = SaveRequest()
            request.inserted = [
                Snapshot(
                    objectID: ObjectID(entity: department, key: PrimaryKey(key)), version: 1,
                    attributes: ["name": .string("d\(key)")])
            ]
            return request
        }
        try writer.save(insert(1))
        let standby = try PostgresServer(name: "standby", standbyOf: primary)
        defer { standby.remove() }
        let reader = try PostgresStore(
            location: try PostgresLocation(standby.url(schema: "replicated")), model: nil,
            options: StoreOptions(readOnly: true))
        defer { reader.close() }
        #expect(reader.takeAnnouncedChanges().isEmpty, "starts the listener, which reads the history on a standby")
        Thread.sleep(forTimeInterval: 0.5)
        let id = ObjectID(entity: department, key: PrimaryKey(2))
        try writer.save(insert(2))
        var heard = AnnouncedChanges()
        let started = Date()
        while !heard.changed.contains(id) && Date().timeIntervalSince(started) < 10 {
            heard.formUnion(reader.takeAnnouncedChanges())
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(heard.changed.contains(id), "the standby's store learnt of the primary's commit")
        print(
            "postgresql: a commit on the primary was heard on the standby after \(String(format: "%.2f", Date().timeIntervalSince(started))) s"
        )
        #expect(try reader.snapshots(for: [id]).first?.attributes["name"] == .string("d2"))
        // A store opened for writing on the standby is refused at its first save.
        let wrong = try PostgresStore(location: try PostgresLocation(standby.url(schema: "replicated")), model: nil)
        defer { wrong.close() }
        StoreFixtures.expectError(.readOnly, mentioning: "read-only") { try wrong.save(insert(3)) }
    }

    // MARK: - Migration

    @Test(arguments: [
        "alemar11_CoreDataPlus_SampleModel_V1.sqlite", "alemar11_CoreDataPlus_SampleModel2_V1.sqlite",
        "alemar11_CoreDataPlus_SampleModel3_V1.sqlite", "magicalpanda_MagicalRecord_Recipes.sqlite",
        "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite",
        "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite",
        "sergd2005_ResourcesManager_default.store"
    ])
    func corpusStoresMigrateIntoPostgreSQLAndBackUnchanged(_ name: String) throws {
        let server = try PostgresServer.shared()
        let directory = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent(name)
        for suffix in ["", "-wal"]
        where FileManager.default.fileExists(atPath: StoreFixtures.corpus.path + "/sqlite/\(name)" + suffix) {
            try FileManager.default.copyItem(
                atPath: StoreFixtures.corpus.path + "/sqlite/\(name)" + suffix, toPath: copy.path + suffix)
        }
        let types: [any PersistentStoreType] = [SQLiteStoreType(), PostgresStoreType()]
        let url = server.url(schema: PostgresServer.uniqueSchema("corpus"))
        let source = try PersistentStoreCoordinator.open(at: copy, types: types, options: StoreOptions(readOnly: true))
        defer { source.close() }
        try source.migrate(to: url, type: PostgresStoreType())
        let postgres = try PersistentStoreCoordinator.open(at: url, types: types, options: StoreOptions(readOnly: true))
        defer { postgres.close() }
        try StoreFixtures.expectSameGraph(source.store, postgres.store, metadata: false)
        let back = directory.appendingPathComponent("back.sqlite")
        try postgres.migrate(to: back, type: SQLiteStoreType())
        let again = try PersistentStoreCoordinator.open(at: back, types: types, options: StoreOptions(readOnly: true))
        defer { again.close() }
        try StoreFixtures.expectSameGraph(source.store, again.store, metadata: false)
        #expect(try postgres.store.metadata().storeUUID == source.store.metadata().storeUUID, "object URIs stay valid")
        // Migration never overwrites: a second one into the same place is refused.
        #expect(throws: ObjectGraphError.self) { try source.migrate(to: url, type: PostgresStoreType()) }
    }

    // MARK: - Faults

    @Test func aServerThatGoesAwayFailsWithEIOAndIsReconnectedToByItself() throws {
        let server = try PostgresServer(name: "faults")
        defer { server.remove() }
        let url = server.url(schema: "faults")
        let store = try open(url)
        defer { store.close() }
        let department = store.model.entityID(named: "Department")!
        func insert(_ key: Int64) -> SaveRequest {
            var request = SaveRequest()
            request.inserted = [
                Snapshot(
                    objectID: ObjectID(entity: department, key: PrimaryKey(key)), version: 1,
                    attributes: ["name": .string("d")])
            ]
            return request
        }
        try store.save(insert(1))
        #expect(store.takeAnnouncedChanges().isEmpty)
        Thread.sleep(forTimeInterval: 0.5)
        let generation = try store.externalChangeToken()
        try server.stop(mode: "immediate")
        do {
            try store.save(insert(2))
            Issue.record("a save with the server down succeeded")
        } catch {
            #expect(error.code == .io, "\(error)")
        }
        #expect(throws: ObjectGraphError.self) { try store.objectIDs(of: department) }
        try server.start()
        try store.save(insert(3))
        #expect(
            try store.objectIDs(of: department).map(\.key.rawValue) == [1, 3],
            "nothing acknowledged lost, nothing failed saved")
        // The listener reconnects by itself and says so: announcements may have been missed.
        let deadline = Date().addingTimeInterval(10)
        while try store.externalChangeToken() == generation && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(try store.externalChangeToken() != generation, "the change token moved after the reconnection")
        // A server that stops answering (its processes stopped, its connections open): the save
        // fails with EIO within the store's statement timeout and a reconnect (3 s and 2 s here; 30 s and 10 s by default).
        let quick = try open(
            URL(string: url.absoluteString + "&timeout=3&connect_timeout=2")!, model: nil, create: false)
        defer { quick.close() }
        try quick.save(insert(4))
        try server.signalAll(SIGSTOP)
        let stopped = Date()
        do {
            try quick.save(insert(5))
            Issue.record("a save to a server that answers nothing succeeded")
        } catch {
            #expect(error.code == .io, "\(error)")
        }
        let waited = Date().timeIntervalSince(stopped)
        try server.signalAll(SIGCONT)
        #expect(waited < 10, "the save gave up after \(waited) s")
        try quick.save(insert(6))
        #expect(try quick.objectIDs(of: department).map(\.key.rawValue) == [1, 3, 4, 6])
    }
}
