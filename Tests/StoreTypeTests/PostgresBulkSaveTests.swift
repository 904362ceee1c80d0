import Foundation
import ObjectGraph
import PostgresStore
import SQLiteStore
import TestSupport
import Testing

/// Large saves into PostgreSQL take the bulk path (`COPY ... FROM STDIN` for object and history
/// rows, join rows bound as arrays): values that are hard to write as COPY's text (backslashes,
/// tabs, newlines, `\N` and `\.` spelled out, control characters, large and empty binaries,
/// extreme numbers, NULL) must come back exactly, through a migration SQLite → PostgreSQL →
/// SQLite and against the same objects saved a few at a time (multi-row INSERTs).
@Suite(.serialized) struct PostgresBulkSaveTests {
    /// Employees per save: above the rows from which the bulk path is taken (100) and above one
    /// history statement's rows (500), so object rows, join rows and history rows all take it.
    static let employees = 620

    static let strings = [
        "back\\slash", "\\", "\\\\", "\\N", "\\.", "\\.\n", "tab\tinside", "\t", "new\nline", "\r\n", "cr\ronly",
        "\u{1}\u{1F}\u{7F}\u{8}\u{B}\u{C}", "emoji 👩‍👩‍👧 ✓ é", "\\x41\\t", "'quote' \"double\" ;--", "", "   ",
        "end with backslash\\", "\u{FFFE}\u{10FFFF}"
    ]
    static let datas = [
        Data(), Data([0]), Data([0x5C, 0x09, 0x0A, 0x0D, 0x00, 0xFF]), Data("\\x00".utf8)
    ]
    /// Large values, given to a few employees only (each is written and compared several times).
    static let largeString = String(repeating: "long\\\t\n", count: 40_000)
    static let largeData = Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 8) })
    static let integers: [Int64] = [.min, .max, 0, -1, 1 << 53 + 1, -(1 << 62)]
    static let dates = [
        Date(timeIntervalSinceReferenceDate: 259_257_125.711286), Date(timeIntervalSince1970: -1234.567891),
        Date(timeIntervalSinceReferenceDate: -1e10 + 0.000123), Date(timeIntervalSinceReferenceDate: 1e-300)
    ]
    static let decimals = [
        Decimal(string: "12345678901234567890.123456789012345678")!, Decimal(string: "-0.000000000000000000000001")!,
        Decimal(0), Decimal(string: "-99999999999999999999999999999999999999")!
    ]

    /// Employees (and one department holding them all) with hostile values; `doubles` as the
    /// target store keeps them (SQLite keeps no NaN). Every `nullEvery`-th employee has no values.
    static func hostileSave(model: ManagedObjectModel, doubles: [Double], firstKey: Int64 = 1) -> SaveRequest {
        let employee = model.entityID(named: "Employee")!
        let department = model.entityID(named: "Department")!
        let project = model.entityID(named: "Project")!
        var request = SaveRequest()
        for i in 0..<employees {
            let key = firstKey + Int64(i)
            var attributes: PropertyValues<AttributeValue> = [:]
            if i % 37 != 5 {
                attributes = [
                    "firstName": .string(strings[i % strings.count]),
                    "lastName": .string(strings[(i * 7 + 3) % strings.count]),
                    "hoursPerWeek": .double(doubles[i % doubles.count]),
                    "rating": .float(Float(doubles[(i + 1) % doubles.count])),
                    "badgeNumber": .integer(integers[i % integers.count]),
                    "employeeID": .integer(i % 2 == 0 ? Int64(Int32.max) : Int64(Int32.min)),
                    "level": .integer(i % 2 == 0 ? Int64(Int16.min) : Int64(Int16.max)),
                    "birthDate": .date(dates[i % dates.count]),
                    "salary": .decimal(decimals[i % decimals.count]),
                    "photo": .data(datas[i % datas.count]),
                    "personID": .uuid(UUID()),
                    "isRemote": .boolean(i % 2 == 0),
                    "homepage": .string("https://example.com/\\?q=\t\(i)"),
                    "preferences": .data(Data("prefs\\\t\n\(i)".utf8))
                ]
                if i % 200 == 3 {
                    attributes["lastName"] = .string(largeString)
                    attributes["photo"] = .data(largeData)
                }
            }
            request.inserted.append(
                Snapshot(
                    objectID: ObjectID(entity: employee, key: PrimaryKey(key)), version: 1, attributes: attributes,
                    toOne: ["department": ObjectID(entity: department, key: PrimaryKey(firstKey))]))
        }
        request.inserted.append(
            Snapshot(
                objectID: ObjectID(entity: department, key: PrimaryKey(firstKey)), version: 1,
                attributes: ["name": .string("R&D\t\\main\n")]))
        request.toManyChanges.append(
            .init(
                source: ObjectID(entity: department, key: PrimaryKey(firstKey)), relationship: "employees",
                destinations: (0..<employees).map { ObjectID(entity: employee, key: PrimaryKey(firstKey + Int64($0))) })
        )
        // Many-to-many: join rows, every employee in one of three projects, some in two.
        for p in 0..<3 {
            let id = ObjectID(entity: project, key: PrimaryKey(firstKey + Int64(p)))
            request.inserted.append(
                Snapshot(objectID: id, version: 1, attributes: ["name": .string("project\t\(p)\\")]))
            request.toManyChanges.append(
                .init(
                    source: id, relationship: "members",
                    destinations: (0..<employees).filter { $0 % 3 == p || $0 % 5 == p }.map {
                        ObjectID(entity: employee, key: PrimaryKey(firstKey + Int64($0)))
                    }))
        }
        return request
    }

    @Test func hostileValuesRoundTripSQLiteToPostgreSQLAndBack() throws {
        let folder = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let types: [any PersistentStoreType] = [SQLiteStoreType(), PostgresStoreType()]
        let sqliteURL = folder.appendingPathComponent("hostile.sqlite")
        let source = try PersistentStoreCoordinator.open(
            at: sqliteURL, types: types, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        defer { source.close() }
        try source.store.save(
            Self.hostileSave(
                model: source.model,
                doubles: [-0.0, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1, -1e-300]))
        let postgresURL = try PostgresServer.shared().url(schema: PostgresServer.uniqueSchema("bulk"))
        try source.migrate(to: postgresURL, type: PostgresStoreType())
        let postgres = try PersistentStoreCoordinator.open(
            at: postgresURL, types: types, options: StoreOptions(readOnly: true))
        defer { postgres.close() }
        try StoreFixtures.expectSameGraph(source.store, postgres.store, metadata: false)
        let backURL = folder.appendingPathComponent("back.sqlite")
        try postgres.migrate(to: backURL, type: SQLiteStoreType())
        let back = try PersistentStoreCoordinator.open(at: backURL, types: types, options: StoreOptions(readOnly: true))
        defer { back.close() }
        try StoreFixtures.expectSameGraph(source.store, back.store, metadata: false)
        let employee = source.model.entityID(named: "Employee")!
        #expect(try back.store.count(of: employee) == Self.employees)
    }

    /// The same hostile objects, NaN included, saved in one save (the bulk path) and in saves of
    /// fewer rows than it takes (multi-row INSERTs): both stores hold the same values and the same
    /// history.
    @Test func bulkAndRowByRowSavesStoreTheSameValues() throws {
        let server = try PostgresServer.shared()
        func open(_ name: String) throws -> PostgresStore {
            try PostgresStore(
                location: try PostgresLocation(server.url(schema: PostgresServer.uniqueSchema(name))),
                model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        }
        let bulk = try open("bulkone")
        defer { bulk.close() }
        let rows = try open("bulkrows")
        defer { rows.close() }
        let doubles: [Double] = [.nan, -0.0, .infinity, -.infinity, .leastNonzeroMagnitude, 1e308, 0.1]
        let request = Self.hostileSave(model: bulk.model, doubles: doubles)
        try bulk.save(request)
        // Below 100 inserted rows of a table per save: multi-row INSERTs only.
        var start = 0
        while start < request.inserted.count {
            var part = SaveRequest()
            part.inserted = Array(request.inserted[start..<min(start + 60, request.inserted.count)])
            try rows.save(part)
            start += 60
        }
        var lists = SaveRequest()
        lists.toManyChanges = request.toManyChanges
        try rows.save(lists)
        try StoreFixtures.expectSameGraph(bulk, rows, metadata: false)
        // History: one transaction of every insert (a COPY of more than one statement's rows).
        let history = try bulk.persistentHistory()
        #expect(history.count == 1)
        #expect(Set(history.first?.changes.map(\.objectID) ?? []) == Set(request.inserted.map(\.objectID)))
        #expect(history.first?.changes.allSatisfy { $0.kind == .insert } == true)
        #expect(history.first?.changes.map(\.changeID) == (1...Int64(request.inserted.count)).map { $0 })
        // Key counters: the next object gets a key above every one copied.
        let employee = bulk.model.entityID(named: "Employee")!
        #expect(try bulk.highestKey(in: bulk.model[employee].rootID) >= Int64(Self.employees))
    }

    /// A row the server refuses in the middle of a copy (here a trigger raising unique_violation
    /// at one row, as a key another writer took between the save's check and its copy would)
    /// fails the save as the INSERT would: EEXIST naming the objects, nothing of the save kept,
    /// and the connection still good for the next save.
    @Test func aRowRefusedMidCopyFailsTheSaveAndKeepsNothing() throws {
        let server = try PostgresServer.shared()
        let schema = PostgresServer.uniqueSchema("bulkrefused")
        let store = try PostgresStore(
            location: try PostgresLocation(server.url(schema: schema)), model: SampleModel.make(),
            options: StoreOptions(createIfMissing: true))
        defer { store.close() }
        let request = Self.hostileSave(model: store.model, doubles: [1.5])
        let refused = request.inserted[400].objectID
        try server.psql(
            """
            SET search_path TO "\(schema)";
            CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW."Z_PK" = \(refused.key.rawValue) THEN RAISE unique_violation USING MESSAGE = 'taken by the test'; END IF;
            RETURN NEW; END $$;
            CREATE TRIGGER refuse_one BEFORE INSERT ON "ZPERSON" FOR EACH ROW EXECUTE FUNCTION refuse_one();
            """)
        var refusal: ObjectGraphError?
        do { try store.save(request) } catch { refusal = error }
        let error = try #require(refusal, "a save of a refused row succeeded")
        #expect(error.code == .exists, "\(error)")
        #expect(error.message.contains("taken by the test"), "\(error.message)")
        #expect(error.objects.contains(refused), "\(error.objects.prefix(3))")
        let employee = store.model.entityID(named: "Employee")!
        #expect(try store.count(of: employee) == 0, "nothing of the failed save is kept")
        try server.psql("SET search_path TO \"\(schema)\"; DROP TRIGGER refuse_one ON \"ZPERSON\"")
        try store.save(request)
        #expect(try store.count(of: employee) == Self.employees)
        #expect(try store.persistentHistory().count == 1, "only the save that committed is in history")
    }

    /// More rows than one COPY carries (20,000): several statements, every row once, in order.
    @Test func aSaveOfMoreRowsThanOneCopyTakesSeveralAndKeepsThemAll() throws {
        let server = try PostgresServer.shared()
        let store = try PostgresStore(
            location: try PostgresLocation(server.url(schema: PostgresServer.uniqueSchema("bulkmany"))),
            model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        defer { store.close() }
        let employee = store.model.entityID(named: "Employee")!
        var request = SaveRequest()
        let count = 20_000 + 1_234
        for i in 0..<count {
            request.inserted.append(
                Snapshot(
                    objectID: ObjectID(entity: employee, key: PrimaryKey(Int64(i + 1))), version: 1,
                    attributes: ["firstName": .string(Self.strings[i % Self.strings.count] + "\(i)")]))
        }
        try store.save(request)
        #expect(try store.count(of: employee) == count)
        let ids = request.inserted.map(\.objectID)
        let read = try store.snapshots(for: ids)
        #expect(read.count == count)
        let stored = Dictionary(uniqueKeysWithValues: read.map { ($0.objectID, $0.attributes["firstName"]) })
        let differing = request.inserted.filter { stored[$0.objectID] != $0.attributes["firstName"] }
        #expect(
            differing.isEmpty, "\(differing.count) differ, the first: \(differing.first.map { "\($0.objectID)" } ?? "")"
        )
        #expect(try store.persistentHistory().first?.changes.count == count)
    }
}
