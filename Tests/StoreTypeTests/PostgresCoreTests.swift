import Foundation
import ObjectGraph
import PostgresStore
import TestSupport
import Testing

/// The PostgreSQL store's relational rules, each against a real server (``PostgresServer``) and
/// read back both through the store and with psql: bound values whatever they hold, one
/// transaction per save, key checks naming their objects, versions, to-many differences that
/// keep another writer's changes, ordered relationships, the repairs that keep relationships
/// consistent, hidden keys of relationships without inverse, history rows, key counters, saves
/// larger than one statement, and errors that keep their SQLSTATE.
@Suite struct PostgresCoreTests {
    let server: PostgresServer
    let url: URL
    let schema: String

    init() throws {
        server = try PostgresServer.shared()
        schema = PostgresServer.uniqueSchema("core")
        url = server.url(schema: schema)
    }

    func open(_ model: ManagedObjectModel? = SampleModel.make(), create: Bool = true, readOnly: Bool = false) throws
        -> PostgresStore
    {
        try PostgresStore(
            location: try PostgresLocation(url), model: model,
            options: StoreOptions(readOnly: readOnly, createIfMissing: create))
    }

    /// psql's answer to `sql` on the store's schema, trimmed.
    @discardableResult
    func psql(_ sql: String) throws -> String {
        try server.psql("SET search_path TO \"\(schema)\"; " + sql).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func id(_ store: PostgresStore, _ entity: String, _ key: Int64) -> ObjectID {
        ObjectID(entity: store.model.entityID(named: entity)!, key: PrimaryKey(key))
    }

    func insert(_ snapshots: [Snapshot], toMany: [SaveRequest.ToManyChange] = []) -> SaveRequest {
        var request = SaveRequest()
        request.inserted = snapshots
        request.toManyChanges = toMany
        return request
    }

    func employee(_ store: PostgresStore, _ key: Int64, _ last: String = "Doe") -> Snapshot {
        Snapshot(
            objectID: id(store, "Employee", key), version: 1,
            attributes: ["firstName": .string("E\(key)"), "lastName": .string(last), "employeeID": .integer(key)])
    }

    // MARK: - Values

    @Test func valuesAreBoundWhateverTheyHold() throws {
        let store = try open()
        defer { store.close() }
        let hostile = [
            "O'Brien", "\"quoted\"", "back\\slash", "$1 $2 ?", "'; DROP TABLE \"ZPERSON\"; --", "ünïcødé 🙂",
            "line\nbreak\ttab", String(repeating: "x", count: 200_000), "E'\\x41'", "?::text"
        ]
        var snapshots: [Snapshot] = []
        for (i, text) in hostile.enumerated() {
            var snapshot = employee(store, Int64(i + 1), text)
            snapshot.attributes["homepage"] = .string(text)
            snapshots.append(snapshot)
        }
        try store.save(insert(snapshots))
        let read = try store.snapshots(for: snapshots.map(\.objectID))
        #expect(read.map { $0.attributes["lastName"] } == hostile.map { .string($0) })
        #expect(read.map { $0.attributes["homepage"] } == hostile.map { .string($0) })
        #expect(try psql("SELECT count(*) FROM \"ZPERSON\"") == String(hostile.count), "no statement was cut short")
        // A NUL has no place in PostgreSQL's text: refused at the write, naming the attribute.
        let lastName = try #require(store.model[store.model.entityID(named: "Employee")!].attribute(named: "lastName"))
        #expect(throws: ObjectGraphError.self) {
            try store.check(.string("a\u{0}b"), for: lastName, of: store.model.entityID(named: "Employee")!)
        }
    }

    @Test func doublesDecimalsAndDatesKeepEveryBit() throws {
        let store = try open()
        defer { store.close() }
        let doubles: [Double] = [
            .nan, .infinity, -.infinity, -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1
        ]
        var snapshots: [Snapshot] = []
        for (i, d) in doubles.enumerated() {
            var snapshot = employee(store, Int64(i + 1))
            snapshot.attributes["hoursPerWeek"] = .double(d)
            snapshot.attributes["salary"] = .decimal(Decimal(string: "123456789012345678901234567.891")!)
            snapshot.attributes["birthDate"] = .date(Date(timeIntervalSinceReferenceDate: d.isFinite ? d : 1e9))
            snapshot.attributes["rating"] = .float(Float(1) / 3)
            snapshots.append(snapshot)
        }
        try store.save(insert(snapshots))
        for (snapshot, read) in zip(snapshots, try store.snapshots(for: snapshots.map(\.objectID))) {
            guard case .double(let a)? = snapshot.attributes["hoursPerWeek"],
                case .double(let b)? = read.attributes["hoursPerWeek"]
            else {
                Issue.record("no double read for \(snapshot.objectID)")
                continue
            }
            #expect(a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN), "\(a) came back as \(b)")
            #expect(read.attributes["salary"] == snapshot.attributes["salary"])
            #expect(read.attributes["birthDate"] == snapshot.attributes["birthDate"])
            #expect(read.attributes["rating"] == snapshot.attributes["rating"])
        }
    }

    // MARK: - Transactions, keys, versions

    @Test func aSaveIsAllOrNothing() throws {
        let store = try open()
        defer { store.close() }
        try store.save(insert([employee(store, 1)]))
        let read = try #require(try store.snapshots(for: [id(store, "Employee", 1)]).first)
        var stale = read
        stale.attributes["lastName"] = .string("Other")
        var moved = read
        moved.attributes["lastName"] = .string("Moved")
        try store.save(
            {
                var r = SaveRequest()
                r.updated = [.init(snapshot: moved, original: read)]
                return r
            }())
        // One save: an insert and an update that conflicts. Nothing of it is written.
        var request = insert([employee(store, 2)])
        request.updated = [.init(snapshot: stale, original: read)]
        #expect(throws: ObjectGraphError.self) { try store.save(request) }
        #expect(try store.snapshots(for: [id(store, "Employee", 2)]).isEmpty, "the insert was rolled back")
        #expect(try psql("SELECT count(*) FROM \"ACHANGE\" WHERE \"ZENTITYPK\" = 2") == "0", "no history either")
    }

    @Test func aKeyAnotherWriterSavedIsRefusedNamingEveryObjectThatHasIt() throws {
        let a = try open()
        let b = try open(nil, create: false)
        defer {
            a.close()
            b.close()
        }
        try a.save(insert([employee(a, 7), employee(a, 8)]))
        do {
            try b.save(insert([employee(b, 6), employee(b, 7), employee(b, 8)]))
            Issue.record("keys saved twice")
        } catch {
            #expect(error.code == .exists)
            #expect(Set(error.objects) == [id(b, "Employee", 7), id(b, "Employee", 8)], "\(error)")
        }
        #expect(try b.snapshots(for: [id(b, "Employee", 6)]).isEmpty)
    }

    @Test func aDeleteChecksTheVersionItRead() throws {
        let store = try open()
        defer { store.close() }
        try store.save(insert([employee(store, 1)]))
        let employeeID = id(store, "Employee", 1)
        var changed = try #require(try store.snapshots(for: [employeeID]).first)
        let original = changed
        changed.attributes["lastName"] = .string("Changed")
        var update = SaveRequest()
        update.updated = [.init(snapshot: changed, original: original)]
        try store.save(update)
        var delete = SaveRequest()
        delete.deleted = [.init(objectID: employeeID, expectedVersion: 1)]
        do {
            try store.save(delete)
            Issue.record("a stale delete was saved")
        } catch {
            #expect(error.code == .conflict && error.message.contains("changed"), "\(error)")
        }
        delete.deleted = [.init(objectID: employeeID, expectedVersion: 2)]
        try store.save(delete)
        do {
            try store.save(delete)
            Issue.record("a delete of a deleted object was saved")
        } catch {
            #expect(error.code == .conflict && error.message.contains("deleted"), "\(error)")
        }
    }

    @Test func keyCountersOnlyRise() throws {
        let store = try open()
        defer { store.close() }
        let milestone = store.model.entityID(named: "Milestone")!
        var request = SaveRequest()
        request.keyCounters[milestone] = 40
        request.metadata = try store.metadata()
        try store.save(request)
        #expect(try store.highestKey(in: milestone) == 40)
        request.keyCounters[milestone] = 12
        try store.save(request)
        #expect(try store.highestKey(in: milestone) == 40, "a lower counter leaves it")
        #expect(try store.reserveKeys(in: milestone, count: 1) == [PrimaryKey(41)])
        #expect(try psql("SELECT \"Z_MAX\" FROM \"Z_PRIMARYKEY\" WHERE \"Z_NAME\" = 'Milestone'") == "41")
    }

    @Test func aToManyChangeAloneMovesTheVersion() throws {
        let store = try open()
        defer { store.close() }
        let project = Snapshot(objectID: id(store, "Project", 1), version: 1, attributes: ["name": .string("P")])
        try store.save(insert([project, employee(store, 1)]))
        var request = SaveRequest()
        request.toManyChanges = [
            .init(source: project.objectID, relationship: "members", destinations: [id(store, "Employee", 1)]),
            .init(source: id(store, "Employee", 1), relationship: "projects", destinations: [project.objectID])
        ]
        try store.save(request)
        #expect(try store.snapshots(for: [project.objectID]).first?.version == 2)
        #expect(try store.snapshots(for: [id(store, "Employee", 1)]).first?.version == 2)
    }

    // MARK: - To-many relationships

    @Test func toManyDifferencesKeepAnotherWritersChanges() throws {
        let a = try open()
        let b = try open(nil, create: false)
        defer {
            a.close()
            b.close()
        }
        let project = Snapshot(objectID: id(a, "Project", 1), version: 1, attributes: ["name": .string("P")])
        let members = (1...3).map { employee(a, $0) }
        try a.save(
            insert(
                [project] + members,
                toMany: [.init(source: project.objectID, relationship: "members", destinations: [members[0].objectID])])
        )
        let read =
            try a.toManyDestinations(of: "members", in: project.objectID.entity, for: [project.objectID])[
                project.objectID] ?? []
        #expect(read == [members[0].objectID])
        // A adds member 2, B (which read the same list) member 3: both stay.
        var first = SaveRequest()
        first.toManyChanges = [
            .init(
                source: project.objectID, relationship: "members", destinations: read + [members[1].objectID],
                original: read)
        ]
        try a.save(first)
        var second = SaveRequest()
        second.toManyChanges = [
            .init(
                source: project.objectID, relationship: "members", destinations: read + [members[2].objectID],
                original: read)
        ]
        try b.save(second)
        let now =
            try a.toManyDestinations(of: "members", in: project.objectID.entity, for: [project.objectID])[
                project.objectID] ?? []
        #expect(Set(now) == Set(members.map(\.objectID)), "\(now)")
    }

    @Test func orderedRelationshipsKeepTheirOrderThroughReordersAndLargeLists() throws {
        let store = try open()
        defer { store.close() }
        let project = Snapshot(objectID: id(store, "Project", 1), version: 1, attributes: ["name": .string("P")])
        // More milestones than one statement carries.
        let milestones = (1...1_234).map {
            Snapshot(
                objectID: id(store, "Milestone", Int64($0)), version: 1, attributes: ["title": .string("M\($0)")],
                toOne: ["project": project.objectID])
        }
        let order = milestones.map(\.objectID)
        try store.save(
            insert(
                [project] + milestones,
                toMany: [.init(source: project.objectID, relationship: "milestones", destinations: order)]))
        func list() throws -> [ObjectID] {
            try store.toManyDestinationLists(of: "milestones", in: project.objectID.entity, for: [project.objectID])[0]
        }
        #expect(try list() == order)
        let reversed = Array(order.reversed())
        var reorder = SaveRequest()
        reorder.toManyChanges = [
            .init(source: project.objectID, relationship: "milestones", destinations: reversed, original: order)
        ]
        try store.save(reorder)
        #expect(try list() == reversed)
        #expect(try psql("SELECT min(\"Z_FOK_PROJECT\"), max(\"Z_FOK_PROJECT\") FROM \"ZMILESTONE\"") == "1024|1263616")
    }

    @Test func listsOfManySourcesComeBackForDenseAndSparseKeys() throws {
        let store = try open()
        defer { store.close() }
        let managers = stride(from: 1, through: 2_001, by: 100).map { key -> Snapshot in
            Snapshot(
                objectID: id(store, "Manager", Int64(key)), version: 1,
                attributes: ["firstName": .string("M"), "lastName": .string("M\(key)"), "employeeID": .integer(1)])
        }
        var reports: [Snapshot] = []
        var lists: [SaveRequest.ToManyChange] = []
        for (i, manager) in managers.enumerated() {
            let members = (0..<3).map { employee(store, Int64(10_000 + i * 3 + $0)) }
            reports += members.map {
                var s = $0; s.toOne["manager"] = manager.objectID; return s
            }
            lists.append(
                .init(source: manager.objectID, relationship: "directReports", destinations: members.map(\.objectID)))
        }
        try store.save(insert(managers + reports, toMany: lists))
        let manager = store.model.entityID(named: "Manager")!
        // Sparse keys (a list), then a dense range of keys with most of them missing.
        let sparse = try store.toManyDestinationLists(of: "directReports", in: manager, for: managers.map(\.objectID))
        #expect(sparse == lists.map(\.destinations))
        let dense = (1...40).map { ObjectID(entity: manager, key: PrimaryKey(Int64($0))) }
        let answered = try store.toManyDestinationLists(of: "directReports", in: manager, for: dense)
        #expect(answered[0] == lists[0].destinations && answered.dropFirst().allSatisfy(\.isEmpty))
    }

    // MARK: - Repairs

    @Test func aOneToOneLinkSetOnOneSideClearsTheOldPartnerAndSaysSo() throws {
        let store = try open()
        defer { store.close() }
        let manager = Snapshot(
            objectID: id(store, "Manager", 1), version: 1,
            attributes: ["firstName": .string("M"), "lastName": .string("M"), "employeeID": .integer(1)])
        let research = Snapshot(objectID: id(store, "Department", 1), version: 1, attributes: ["name": .string("R")])
        let sales = Snapshot(objectID: id(store, "Department", 2), version: 1, attributes: ["name": .string("S")])
        try store.save(insert([manager, research, sales]))
        // Another tool left a one-sided link: Research names the manager as head, the manager
        // names no department.
        try psql("UPDATE \"ZDEPARTMENT\" SET \"ZHEAD\" = 1 WHERE \"Z_PK\" = 1")
        let read = try #require(try store.snapshots(for: [sales.objectID]).first)
        var headed = read
        headed.toOne["head"] = manager.objectID
        var request = SaveRequest()
        request.updated = [.init(snapshot: headed, original: read)]
        let effects = try store.saveReportingEffects(request)
        #expect(try psql("SELECT \"Z_PK\" FROM \"ZDEPARTMENT\" WHERE \"ZHEAD\" = 1") == "2", "only Sales names it now")
        #expect(effects.refreshed.contains(research.objectID), "the repaired row is reported: \(effects)")
    }

    @Test func aDeleteClearsEveryKeyThatNamedTheObject() throws {
        let store = try open()
        defer { store.close() }
        let department = Snapshot(objectID: id(store, "Department", 1), version: 1, attributes: ["name": .string("D")])
        var member = employee(store, 1)
        member.toOne["department"] = department.objectID
        try store.save(insert([department, member]))
        // The engine would have unlinked the employee; a row it never saw still names it.
        var delete = SaveRequest()
        delete.deleted = [.init(objectID: department.objectID, expectedVersion: 1)]
        let effects = try store.saveReportingEffects(delete)
        #expect(try psql("SELECT count(*) FROM \"ZPERSON\" WHERE \"ZDEPARTMENT\" IS NOT NULL") == "0")
        #expect(effects.refreshed.contains(member.objectID))
        #expect(try store.snapshots(for: [member.objectID]).first?.version == 2)
    }

    @Test func aToManyWithoutInverseLivesInHiddenKeysThatADeleteClears() throws {
        let model = try ManagedObjectModel(
            entities: [
                EntityDescription(
                    name: "Shelf", attributes: [.init(name: "label", type: .string)],
                    relationships: [
                        .init(name: "books", destinationEntityName: "Book", isToMany: true, isOrdered: true)
                    ]),
                EntityDescription(
                    name: "Book",
                    attributes: [
                        .init(name: "title", type: .string, preservesValueInHistoryOnDeletion: true),
                        .init(name: "pages", type: .integer32, preservesValueInHistoryOnDeletion: true)
                    ])
            ], fetchRequestTemplates: [], configurations: [], versionIdentifier: "hidden 1")
        let store = try open(model)
        defer { store.close() }
        let shelf = Snapshot(objectID: id(store, "Shelf", 1), version: 1, attributes: ["label": .string("A")])
        let books = (1...3).map {
            Snapshot(
                objectID: id(store, "Book", Int64($0)), version: 1,
                attributes: ["title": .string("B\($0)"), "pages": .integer(Int64($0) * 100)])
        }
        try store.save(
            insert(
                [shelf] + books,
                toMany: [
                    .init(source: shelf.objectID, relationship: "books", destinations: books.map(\.objectID).reversed())
                ]))
        #expect(
            try store.toManyDestinationLists(of: "books", in: shelf.objectID.entity, for: [shelf.objectID])[0]
                == books.map(\.objectID).reversed())
        var delete = SaveRequest()
        delete.deleted = [
            .init(objectID: shelf.objectID, expectedVersion: 1), .init(objectID: books[0].objectID, expectedVersion: 1)
        ]
        try store.save(delete)
        let hidden = try psql(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = '\(schema)' AND table_name = 'ZBOOK' "
                + "AND column_name LIKE 'Z%BOOKS' AND column_name NOT LIKE 'Z\\_FOK%'")
        #expect(hidden.hasPrefix("Z") && hidden.hasSuffix("BOOKS"), "the hidden key column: \(hidden)")
        #expect(
            try psql("SELECT count(*) FROM \"ZBOOK\" WHERE \"\(hidden)\" IS NOT NULL") == "0", "hidden keys cleared")
        // The deleted book's preserved values are in its tombstone.
        let book = store.model.entityID(named: "Book")!.rawValue
        #expect(
            try psql(
                "SELECT \"ZTOMBSTONE0\" || '/' || \"ZTOMBSTONE1\" FROM \"ACHANGE\" WHERE \"ZCHANGETYPE\" = 2 AND \"ZENTITYPK\" = 1 AND \"ZENTITY\" = \(book)"
            ) == "100/B1")
    }

    // MARK: - History

    @Test func everySaveAppendsOneTransactionWithAChangePerObject() throws {
        let store = try open()
        defer { store.close() }
        try store.save(insert((1...3).map { employee(store, $0) }))
        let read = try #require(try store.snapshots(for: [id(store, "Employee", 2)]).first)
        var changed = read
        changed.attributes["lastName"] = .string("Changed")
        var request = SaveRequest()
        request.updated = [.init(snapshot: changed, original: read)]
        request.deleted = [.init(objectID: id(store, "Employee", 3), expectedVersion: 1)]
        try store.save(request)
        let history = try store.persistentHistory()
        #expect(history.map(\.number) == [1, 2])
        #expect(history[0].changes.map(\.kind) == [.insert, .insert, .insert])
        #expect(history[1].changes.map(\.kind) == [.update, .delete])
        #expect(history[1].changes[0].updatedProperties == ["lastName"])
        #expect(history.allSatisfy { $0.author == "storefs" })
        #expect(try psql("SELECT \"Z_MAX\" FROM \"Z_PRIMARYKEY\" WHERE \"Z_NAME\" = 'CHANGE'") == "5")
    }

    @Test func historyAfterANumberHoldsOnlyTheLaterTransactions() throws {
        let store = try open()
        defer { store.close() }
        for key in Int64(1)...4 { try store.save(insert([employee(store, key)])) }
        let later = try store.persistentHistory(after: 2)
        #expect(later.map(\.number) == [3, 4])
        #expect(later.map { $0.changes.map(\.objectID) } == [[id(store, "Employee", 3)], [id(store, "Employee", 4)]])
        #expect(try store.persistentHistory(after: 4).isEmpty)
        // A number no transaction reached is no error: nothing is after it.
        #expect(try store.persistentHistory(after: .max).isEmpty)
    }

    // MARK: - Metadata, models, lookups

    @Test func metadataWrittenWithASaveIsReadBackAfterReopening() throws {
        let store = try open()
        let before = try store.metadata()
        var metadata = before
        metadata.values["com.example.note"] = .string("O'Brien; DROP TABLE")
        metadata.values["com.example.count"] = .integer(42)
        var request = SaveRequest()
        request.metadata = metadata
        try store.save(request)
        store.close()
        let again = try open(create: false)
        defer { again.close() }
        let read = try again.metadata()
        #expect(read.values["com.example.note"] == .string("O'Brien; DROP TABLE"))
        #expect(read.values["com.example.count"] == .integer(42))
        #expect(read.storeUUID == before.storeUUID && read.storeUUID != nil)
        #expect(read.storeType == PostgresStore.typeName)
    }

    @Test func aStoreMadeForAnotherModelIsRefusedWhenOpened() throws {
        try open().close()
        let other = try ManagedObjectModel(entities: [
            EntityDescription(name: "Gadget", attributes: [AttributeDescription(name: "label", type: .string)])
        ])
        do {
            let store = try open(other, create: false)
            store.close()
            Issue.record("a store of another model was opened")
        } catch let error as ObjectGraphError {
            #expect(error.code == .invalidModel, "\(error)")
            #expect(error.message.contains("another model"), "\(error)")
        }
        // The store it was made for still opens, unchanged.
        let store = try open(create: false)
        defer { store.close() }
        #expect(try store.objectIDs(of: store.model.entityID(named: "Employee")!).isEmpty)
    }

    @Test func objectsHoldingValuesAreFoundInOneStatement() throws {
        let store = try open()
        defer { store.close() }
        try store.save(insert([employee(store, 1, "Doe"), employee(store, 2, "Roe"), employee(store, 3, "Doe")]))
        let person = try #require(store.model.entityID(named: "Person"))
        let before = store.requestCount
        let found = try store.objectIDs(holding: [("lastName", .value(.string("Doe")))], in: person)
        #expect(found.map(Set.init) == [id(store, "Employee", 1), id(store, "Employee", 3)])
        #expect(store.requestCount - before == 1)
        let both = try store.objectIDs(
            holding: [("lastName", .value(.string("Doe"))), ("employeeID", .value(.integer(3)))], in: person)
        #expect(both == [id(store, "Employee", 3)])
        #expect(try store.objectIDs(holding: [("lastName", .value(.string("'; --")))], in: person) == [])
    }

    // MARK: - Large saves, read-only stores, errors

    @Test func aSaveLargerThanOneStatementIsWrittenWhole() throws {
        let store = try open()
        defer { store.close() }
        let department = Snapshot(objectID: id(store, "Department", 1), version: 1, attributes: ["name": .string("D")])
        let members = (Int64(1)...2_500).map { key -> Snapshot in
            var s = employee(store, key)
            s.toOne["department"] = department.objectID
            return s
        }
        try store.save(
            insert(
                [department] + members,
                toMany: [
                    .init(source: department.objectID, relationship: "employees", destinations: members.map(\.objectID))
                ]))
        #expect(try store.count(of: store.model.entityID(named: "Employee")!) == 2_500)
        #expect(try psql("SELECT count(*) FROM \"ACHANGE\"") == "2501")
        let read = try store.toManyDestinations(
            of: "employees", in: department.objectID.entity, for: [department.objectID])
        #expect(Set(read[department.objectID] ?? []) == Set(members.map(\.objectID)))
    }

    /// A freshly filled table looks near-empty to the planner until ANALYZE, which autovacuum
    /// runs only a minute later: a large save (a migration) runs it itself.
    @Test func aLargeSaveGivesThePlannerTheTablesRealSizes() throws {
        let store = try open()
        defer { store.close() }
        try store.save(insert([employee(store, 1)]))
        // PostgreSQL 14 and later: -1 for a table never analyzed.
        #expect(try psql("SELECT reltuples FROM pg_class WHERE oid = '\"ZPERSON\"'::regclass") == "-1")
        try store.save(insert((Int64(2)...2_501).map { employee(store, $0) }))
        #expect(try psql("SELECT reltuples FROM pg_class WHERE oid = '\"ZPERSON\"'::regclass") == "2501")
        let plan = try psql(
            "EXPLAIN SELECT COUNT(*) FROM \"ZPERSON\" WHERE \"Z_PK\" > 0 AND \"ZEMPLOYEEID\" > 10"
        )
        #expect(plan.contains("Seq Scan"), "one pass over the table, not two index scans combined: \(plan)")
    }

    @Test func aReadOnlyStoreRefusesEveryChange() throws {
        let writable = try open()
        try writable.save(insert([employee(writable, 1)]))
        writable.close()
        let store = try open(nil, create: false, readOnly: true)
        defer { store.close() }
        #expect(try store.snapshots(for: [id(store, "Employee", 1)]).count == 1)
        for attempt in [
            { try store.save(insert([employee(store, 2)])) },
            { _ = try store.reserveKeys(in: store.model.entityID(named: "Person")!, count: 1) }
        ] as [() throws -> Void] {
            do {
                try attempt()
                Issue.record("a read-only store changed")
            } catch let error as ObjectGraphError {
                #expect(error.code == .readOnly)
            }
        }
    }

    @Test func errorsKeepTheirSQLSTATE() throws {
        let store = try open()
        defer { store.close() }
        try store.save(insert([employee(store, 1)]))
        try psql("ALTER TABLE \"ZPERSON\" DROP COLUMN \"ZLASTNAME\"")
        do {
            _ = try store.snapshots(for: [id(store, "Employee", 1)])
            Issue.record("a read of a dropped column answered")
        } catch {
            #expect(error.message.contains("SQLSTATE 42703"), "\(error)")
            #expect(!error.message.contains("password"))
        }
    }

    @Test func aFullDiskIsNoSpaceNotAnIOError() throws {
        let store = try open()
        defer { store.close() }
        // The people's table in a tablespace on a 1 MiB tmpfs.
        let folder = server.folder.appendingPathComponent("tiny-\(schema)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        #expect(try runTool("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", folder.path]).status == 0)
        defer { _ = try? runTool("umount", ["-l", folder.path]) }
        #expect(try runTool("chown", ["postgres", folder.path]).status == 0)
        let space = "tiny_\(schema)"
        try server.psql("CREATE TABLESPACE \"\(space)\" LOCATION '\(folder.path)'")
        defer {
            _ = try? psql("DROP TABLE \"ZPERSON\"")
            _ = try? server.psql("DROP TABLESPACE \"\(space)\"")
        }
        try psql("ALTER TABLE \"ZPERSON\" SET TABLESPACE \"\(space)\"")
        var key: Int64 = 0
        var failure: ObjectGraphError?
        // Bytes that do not compress (TOAST would make little of a pattern).
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func noise(_ count: Int) -> Data {
            Data(
                (0..<count).map { _ -> UInt8 in
                    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    return UInt8(truncatingIfNeeded: seed >> 33)
                })
        }
        while failure == nil && key < 1_000 {
            let batch = (0..<50).map { i -> Snapshot in
                var s = employee(store, key + Int64(i) + 1)
                s.attributes["photo"] = .data(noise(8_000))
                return s
            }
            do { try store.save(insert(batch)) } catch { failure = error }
            key += 50
        }
        #expect(failure?.code == .noSpace, "\(String(describing: failure))")
        #expect(failure?.message.contains("SQLSTATE 53100") == true)
    }
}
