import Foundation
import GRDB
import ObjectGraph
import SQLiteStore
import Testing

@Suite struct SQLiteStoreTests {
    typealias F = Fixtures

    func id(_ entity: EntityID, _ key: Int64) -> ObjectID { ObjectID(entity: entity, key: PrimaryKey(key)) }

    func extremes() -> [String: AttributeValue] {
        var big = Data(count: 3_000_000)
        for i in stride(from: 0, to: big.count, by: 7) { big[i] = UInt8(truncatingIfNeeded: i) }
        return [
            F.attributeName(.integer16): .integer(Int64(Int16.min)),
            F.attributeName(.integer32): .integer(Int64(Int32.max)),
            F.attributeName(.integer64): .integer(Int64.min),
            F.attributeName(.decimal): .decimal(Decimal(string: "10.11")!),
            F.attributeName(.double): .double(-Double.greatestFiniteMagnitude),
            F.attributeName(.float): .float(Float.leastNonzeroMagnitude),
            F.attributeName(.string): .string(""),
            F.attributeName(.boolean): .boolean(true),
            F.attributeName(.date): .date(Date(timeIntervalSinceReferenceDate: 526_913_713.695477)),
            F.attributeName(.binaryData): .data(big),
            F.attributeName(.uuid): .uuid(UUID()),
            F.attributeName(.uri): .string("https://example.com/a%20b?c=d#é"),
            F.attributeName(.transformable): .data(Data())
        ]
    }

    @Test func createdFileHasCoreDataSchema() throws {
        let (store, url) = try F.newStore()
        store.close()
        #expect(
            try F.sqlite3(url, "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT") == [
                "1|Item|0|0", "2|SpecialItem|1|0", "3|Owner|0|0", "4|Tag|0|0"
            ])
        #expect(try F.sqlite3(url, "SELECT Z_VERSION, length(Z_UUID) FROM Z_METADATA") == ["1|36"])
        #expect(try F.sqlite3(url, "PRAGMA auto_vacuum") == ["2"])
        #expect(try F.sqlite3(url, "PRAGMA journal_mode") == ["wal"])
        let tables = try F.sqlite3(url, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        #expect(tables == ["ZITEM", "ZOWNER", "ZTAG", "Z_1TAGS", "Z_METADATA", "Z_MODELCACHE", "Z_PRIMARYKEY"])
        // Core Data's model cache: the model, which the store gives back when opened without one.
        #expect(try F.sqlite3(url, "SELECT count(*), length(Z_CONTENT) > 1000 FROM Z_MODELCACHE") == ["1|1"])
        let reopened = try F.open(url, readOnly: true)
        #expect(reopened.modelSource == .coreDataCache)
        #expect(VersionHash.entityHashes(of: reopened.model) == VersionHash.entityHashes(of: try F.model()))
        reopened.close()
        let itemSQL = try F.sqlite3(url, "SELECT sql FROM sqlite_master WHERE name = 'ZITEM'").joined()
        #expect(itemSQL.hasPrefix("CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, "))
        #expect(itemSQL.contains("ZOWNER INTEGER") && itemSQL.contains("Z_FOK_OWNER INTEGER"))
        #expect(
            itemSQL.contains("ZVDATE TIMESTAMP") && itemSQL.contains("ZVDECIMAL DECIMAL")
                && itemSQL.contains("ZVUUID BLOB"))
        #expect(!itemSQL.contains("ZSCRATCH"))
        let ownerSQL = try F.sqlite3(url, "SELECT sql FROM sqlite_master WHERE name = 'ZOWNER'").joined()
        #expect(ownerSQL.contains("ZFAVORITE INTEGER") && ownerSQL.contains("Z1_FAVORITE INTEGER"))
        let joinSQL = try F.sqlite3(url, "SELECT sql FROM sqlite_master WHERE name = 'Z_1TAGS'").joined()
        #expect(joinSQL.contains("Z_1ITEMS INTEGER") && joinSQL.contains("Z_4TAGS INTEGER"))
        #expect(joinSQL.contains("Z_FOK_1ITEMS") && joinSQL.contains("PRIMARY KEY (Z_1ITEMS, Z_4TAGS)"))
        let indexes = try F.sqlite3(
            url, "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'Z%INDEX' ORDER BY name")
        #expect(indexes.contains("ZITEM_ZOWNER_INDEX") && indexes.contains("ZITEM_Z_ENT_INDEX"))

        // GRDB agrees, and the metadata plist says SQLite.
        let queue = try DatabaseQueue(path: url.path)
        let columns = try queue.read { db in try db.columns(in: "ZTAG").map(\.name) }
        #expect(columns.prefix(3) == ["Z_PK", "Z_ENT", "Z_OPT"])
        try queue.close()
        let metadata = try SQLiteStoreType().metadata(at: url)
        #expect(metadata.storeType == "SQLite")
        #expect(metadata["NSStoreModelVersionHashesVersion"] == .integer(3))
        #expect(metadata["_NSAutoVacuumLevel"] == .string("2"))
        #expect(metadata["NSStoreModelVersionIdentifiers"] == .array([.string("7")]))
        guard case .dictionary(let hashes) = metadata["NSStoreModelVersionHashes"] else {
            Issue.record("no version hashes")
            return
        }
        #expect(Set(hashes.keys) == ["Item", "SpecialItem", "Owner", "Tag"])
        #expect(hashes.values.allSatisfy { if case .data(let d) = $0 { d.count == 32 } else { false } })
        #expect(metadata.storeUUID == metadata.storeUUID?.uppercased() && metadata.storeUUID?.count == 36)
    }

    @Test func everyAttributeTypeRoundTripsBitForBit() throws {
        let (store, url) = try F.newStore()
        let values = extremes()
        var others = values
        others[F.attributeName(.double)] = .double(.infinity)
        others[F.attributeName(.float)] = .float(-.greatestFiniteMagnitude)
        others[F.attributeName(.integer64)] = .integer(Int64.max)
        others[F.attributeName(.integer16)] = .integer(-1)
        others[F.attributeName(.date)] = .date(Date(timeIntervalSinceReferenceDate: -1e9 + 0.123456789))
        others[F.attributeName(.boolean)] = .boolean(false)
        others[F.attributeName(.string)] = .string("naïve 🙂 \u{0}end")
        others[F.attributeName(.decimal)] = .decimal(Decimal(-12345))
        var request = SaveRequest()
        request.inserted = [
            Snapshot(objectID: id(F.item, 1), version: 1, attributes: PropertyValues(values)),
            Snapshot(
                objectID: id(F.special, 2), version: 1,
                attributes: PropertyValues(others.merging(["extra": .string("x")]) { a, _ in a })),
            Snapshot(objectID: id(F.item, 3), version: 1)
        ]
        try store.save(request)
        store.close()

        let reopened = try F.open(url, model: F.model())
        let snapshots = try reopened.snapshots(for: [id(F.item, 1), id(F.special, 2), id(F.item, 3)])
        #expect(snapshots.count == 3)
        #expect(snapshots[0].attributes.dictionary == values)
        #expect(snapshots[0].version == 1)
        #expect(snapshots[1].attributes.dictionary == others.merging(["extra": .string("x")]) { a, _ in a })
        #expect(snapshots[2].attributes.isEmpty, "nil stays nil")
        #expect(try reopened.objectIDs(of: F.item) == [id(F.item, 1), id(F.item, 3)])
        #expect(try reopened.objectIDs(of: F.special) == [id(F.special, 2)])
        #expect(try reopened.count(of: F.item) == 2)
    }

    @Test func unrepresentableFloatingPointValuesAreDocumented() throws {
        let (store, _) = try F.newStore()
        var request = SaveRequest()
        request.inserted = [
            Snapshot(objectID: id(F.item, 1), version: 1, attributes: [F.attributeName(.double): .double(.nan)])
        ]
        #expect { try store.save(request) } throws: { ($0 as? ObjectGraphError)?.code == .validation }
        #expect(try store.count(of: F.item) == 0)
        // SQLite keeps -0.0 as integer 0 in a REAL column: it reads back as +0.0.
        request.inserted = [
            Snapshot(objectID: id(F.item, 1), version: 1, attributes: [F.attributeName(.double): .double(-0.0)])
        ]
        try store.save(request)
        #expect(try store.snapshots(for: [id(F.item, 1)]).first?.attributes[F.attributeName(.double)] == .double(0.0))
        // Out-of-range integers are refused, not truncated.
        request.inserted = [
            Snapshot(objectID: id(F.item, 2), version: 1, attributes: [F.attributeName(.integer16): .integer(40000)])
        ]
        #expect { try store.save(request) } throws: { ($0 as? ObjectGraphError)?.code == .validation }
    }

    @Test func wrongStorageClassIsConvertedOrReported() throws {
        let (store, url) = try F.newStore()
        var request = SaveRequest()
        request.inserted = (1...4).map { Snapshot(objectID: id(F.item, Int64($0)), version: 1) }
        try store.save(request)
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(sql: "UPDATE ZITEM SET ZVINTEGER32 = '42', ZVDOUBLE = 3 WHERE Z_PK = 1")
            try db.execute(sql: "UPDATE ZITEM SET ZVINTEGER32 = 'abc' WHERE Z_PK = 2")
            try db.execute(sql: "UPDATE ZITEM SET ZVINTEGER16 = 70000 WHERE Z_PK = 3")
            try db.execute(sql: "UPDATE ZITEM SET ZVUUID = x'0102' WHERE Z_PK = 4")
        }
        try queue.close()
        let good = try store.snapshots(for: [id(F.item, 1)])
        #expect(good.first?.attributes[F.attributeName(.integer32)] == .integer(42))
        #expect(good.first?.attributes[F.attributeName(.double)] == .double(3))
        for (key, fragment) in [(2, "TEXT 'abc'"), (3, "INTEGER 70000"), (4, "BLOB of 2 bytes")] {
            #expect {
                try store.snapshots(for: [id(F.item, Int64(key))])
            } throws: { error in
                let error = error as! ObjectGraphError
                return error.code == .corruptStore && error.message.contains("p\(key)")
                    && error.message.contains(fragment)
            }
        }
    }

    @Test func relationshipsOfEveryKindRoundTrip() throws {
        let (store, url) = try F.newStore()
        let owner = id(F.owner, 1)
        let items = [id(F.item, 1), id(F.special, 2), id(F.item, 3)]
        let tags = [id(F.tag, 1), id(F.tag, 2)]
        var request = SaveRequest()
        request.inserted =
            items.map { Snapshot(objectID: $0, version: 1, toOne: ["owner": owner]) }
            + [Snapshot(objectID: owner, version: 1, attributes: ["name": .string("o")], toOne: ["favorite": items[1]])]
            + tags.map { Snapshot(objectID: $0, version: 1) }
        request.toManyChanges = [
            .init(source: owner, relationship: "items", destinations: [items[2], items[0], items[1]]),
            .init(source: items[0], relationship: "tags", destinations: tags),
            .init(source: items[1], relationship: "tags", destinations: [tags[0]]),
            .init(source: tags[0], relationship: "items", destinations: [items[1], items[0]]),
            .init(source: tags[1], relationship: "items", destinations: [items[0]])
        ]
        try store.save(request)
        store.close()

        for model in [try F.model(), nil] {
            let reopened = try F.open(url, model: model)
            if model != nil {
                #expect(
                    try reopened.snapshots(for: [owner]).first?.toOne == ["favorite": items[1]], "to-one to a subentity"
                )
                #expect(try reopened.snapshots(for: [items[0]]).first?.toOne == ["owner": owner])
                #expect(
                    try reopened.toManyDestinations(of: "items", in: F.owner, for: [owner]) == [
                        owner: [items[2], items[0], items[1]]
                    ])
            }
            #expect(
                try reopened.toManyDestinations(of: "items", in: F.tag, for: tags + [id(F.tag, 9)])
                    == [tags[0]: [items[1], items[0]], tags[1]: [items[0]], id(F.tag, 9): []])
            let itemTags = try reopened.toManyDestinations(of: "tags", in: F.item, for: items)
            #expect(itemTags.mapValues(Set.init) == [items[0]: Set(tags), items[1]: [tags[0]], items[2]: []])
            reopened.close()
        }

        // Reordering and removing rewrites the pairs; deleting an object removes its pairs.
        let store2 = try F.open(url, model: F.model())
        var change = SaveRequest()
        change.toManyChanges = [
            .init(source: tags[0], relationship: "items", destinations: [items[0]], original: [items[1], items[0]]),
            .init(source: items[1], relationship: "tags", destinations: [], original: [tags[0]]),
            .init(source: items[0], relationship: "tags", destinations: tags, original: tags),
            .init(
                source: owner, relationship: "items", destinations: [items[1], items[0], items[2]],
                original: [items[2], items[0], items[1]])
        ]
        try store2.save(change)
        #expect(
            try store2.toManyDestinations(of: "items", in: F.owner, for: [owner])[owner] == [
                items[1], items[0], items[2]
            ])
        #expect(try store2.toManyDestinations(of: "items", in: F.tag, for: [tags[0]])[tags[0]] == [items[0]])
        var deletion = SaveRequest()
        deletion.deleted = [.init(objectID: items[0], expectedVersion: 1)]
        try store2.save(deletion)
        #expect(try F.sqlite3(url, "SELECT COUNT(*) FROM Z_1TAGS") == ["0"])
    }

    /// Places in an ordered one-to-many are written by the INSERT of the rows a save inserts (as
    /// Core Data's own inserts do), and only where the row's to-one names the list's source.
    @Test func insertedRowsTakeTheirPlaceInOrderedListsFromTheirInsert() throws {
        let (store, url) = try F.newStore()
        let owners = [id(F.owner, 1), id(F.owner, 2)]
        let items = [id(F.item, 1), id(F.special, 2), id(F.item, 3), id(F.item, 4), id(F.item, 5)]
        var request = SaveRequest()
        request.inserted =
            owners.map { Snapshot(objectID: $0, version: 1, attributes: ["name": .string("o")]) }
            + items.prefix(3).map { Snapshot(objectID: $0, version: 1, toOne: ["owner": owners[0]]) }
            // Listed below under the first owner, but its own to-one names the second.
            + [Snapshot(objectID: items[3], version: 1, toOne: ["owner": owners[1]])]
            // Listed twice by its owner (as a damaged store being migrated may list it).
            + [Snapshot(objectID: items[4], version: 1, toOne: ["owner": owners[1]])]
        request.toManyChanges = [
            .init(source: owners[0], relationship: "items", destinations: [items[2], items[0], items[3], items[1]]),
            .init(source: owners[1], relationship: "items", destinations: [items[4], items[4]])
        ]
        try store.save(request)
        // The fourth item keeps its own owner and gets no place in the first owner's list; the
        // fifth takes its last place, as one UPDATE per place in list order left it.
        #expect(
            try F.sqlite3(url, "SELECT Z_PK, ZOWNER, ifnull(Z_FOK_OWNER, 'none') FROM ZITEM ORDER BY Z_PK") == [
                "1|1|2048", "2|1|4096", "3|1|1024", "4|2|none", "5|2|2048"
            ])
        let lists = try store.toManyDestinations(of: "items", in: F.owner, for: owners)
        #expect(lists[owners[0]] == [items[2], items[0], items[1]])
        #expect(Set(lists[owners[1]] ?? []) == [items[3], items[4]])
        store.close()
    }

    @Test func anUpdateWritesOnlyWhatChangedAndConflictsWhereTheStoreMovedOn() throws {
        let (store, url) = try F.newStore()
        let object = id(F.owner, 1)
        var insert = SaveRequest()
        let first = Snapshot(objectID: object, version: 1, attributes: ["name": .string("first")])
        insert.inserted = [first]
        try store.save(insert)
        var second = first
        second.attributes["name"] = .string("second")
        var update = SaveRequest()
        update.updated = [SaveRequest.Update(snapshot: second, original: first)]
        try store.save(update)
        #expect(try store.snapshots(for: [object]).first?.version == 2)

        // Another process changes the name; a save that read "first" and changes the name again
        // conflicts, names the object, and the whole save rolls back.
        #expect(
            try F.sqlite3Writing(url, "UPDATE ZOWNER SET ZNAME = 'theirs' WHERE Z_PK = 1; SELECT changes()") == ["1"])
        var third = first
        third.attributes["name"] = .string("third")
        var stale = SaveRequest()
        stale.inserted = [Snapshot(objectID: id(F.tag, 1), version: 1)]
        stale.updated = [SaveRequest.Update(snapshot: third, original: second)]
        #expect {
            try store.save(stale)
        } throws: { error in
            guard let error = error as? ObjectGraphError else { return false }
            return error.code == .conflict && error.message.contains("Owner p1") && error.objects == [object]
        }
        #expect(try store.snapshots(for: [object]).first?.attributes["name"] == .string("theirs"))
        #expect(try store.count(of: F.tag) == 0, "the whole save rolled back")

        // Another process changes a column this save does not touch: the save writes its own column
        // and leaves theirs, whatever the version says.
        var item = SaveRequest()
        item.inserted = [Snapshot(objectID: id(F.item, 7), version: 1)]
        try store.save(item)
        let read = try #require(try store.snapshots(for: [object]).first)
        #expect(
            try F.sqlite3Writing(url, "UPDATE ZOWNER SET ZNAME = 'theirs again' WHERE Z_PK = 1; SELECT changes()") == [
                "1"
            ])
        var withFavorite = read
        withFavorite.toOne["favorite"] = id(F.item, 7)
        var merge = SaveRequest()
        merge.updated = [SaveRequest.Update(snapshot: withFavorite, original: read)]
        try store.save(merge)
        let merged = try #require(try store.snapshots(for: [object]).first)
        #expect(merged.attributes["name"] == .string("theirs again"))
        #expect(merged.toOne["favorite"] == id(F.item, 7))

        var staleDelete = SaveRequest()
        staleDelete.deleted = [.init(objectID: object, expectedVersion: 1)]
        #expect { try store.save(staleDelete) } throws: { ($0 as? ObjectGraphError)?.code == .conflict }
        #expect(try store.count(of: F.owner) == 1)
    }

    @Test func keysAreReservedInMemoryAndWrittenByTheSaveThatInsertsThem() throws {
        let (store, url) = try F.newStore()
        #expect(try store.reserveKeys(in: F.item, count: 3) == [PrimaryKey(1), PrimaryKey(2), PrimaryKey(3)])
        #expect(
            try store.reserveKeys(in: F.special, count: 2) == [PrimaryKey(4), PrimaryKey(5)],
            "keys are shared with the root")
        #expect(
            try F.sqlite3(url, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 1") == ["0"],
            "reserving leaves the file as it was")
        var request = SaveRequest()
        request.inserted = [Snapshot(objectID: id(F.special, 4), version: 1)]
        try store.save(request)
        #expect(try F.sqlite3(url, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 1") == ["4"])
        #expect(try store.claimKey(PrimaryKey(4), in: F.item) == false)
        #expect(try store.claimKey(PrimaryKey(20), in: F.item) == true)
        #expect(
            try F.sqlite3(url, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 1") == ["4"],
            "claiming leaves the file as it was")
        #expect(try store.reserveKeys(in: F.item, count: 1) == [PrimaryKey(21)])
        request.inserted = [Snapshot(objectID: id(F.tag, 50), version: 1)]
        try store.save(request)
        #expect(try F.sqlite3(url, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 4") == ["50"], "insert bumps Z_MAX")
        // A Z_MAX that lags behind the rows never hands out a key a row has.
        #expect(
            try F.sqlite3Writing(url, "UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_ENT = 4; SELECT changes()") == ["1"])
        #expect(try store.reserveKeys(in: F.tag, count: 1) == [PrimaryKey(51)])
        // Text in Z_MAX counts as nothing instead of ending the process.
        #expect(
            try F.sqlite3Writing(url, "UPDATE Z_PRIMARYKEY SET Z_MAX = 'many' WHERE Z_ENT = 4; SELECT changes()") == [
                "1"
            ])
        #expect(try store.reserveKeys(in: F.tag, count: 1) == [PrimaryKey(52)])
    }

    @Test func snapshotsOfAThousandObjectsTakeOneRequest() throws {
        let (store, _) = try F.newStore()
        var request = SaveRequest()
        request.inserted = (1...1000).map {
            Snapshot(
                objectID: id($0 % 2 == 0 ? F.item : F.special, Int64($0)), version: 1,
                attributes: [F.attributeName(.integer64): .integer(Int64($0))])
        }
        try store.save(request)
        let ids = request.inserted.map(\.objectID)
        let before = store.requestCount
        let snapshots = try store.snapshots(for: ids)
        #expect(store.requestCount - before == 1)
        #expect(snapshots.count == 1000)
        #expect(snapshots.map(\.objectID) == ids)
        let beforeToMany = store.requestCount
        _ = try store.toManyDestinations(of: "tags", in: F.item, for: ids)
        #expect(store.requestCount - beforeToMany == 1)
    }

    @Test func metadataCustomKeysRoundTrip() throws {
        let (store, url) = try F.newStore(StoreMetadata(["custom": .string("hello"), "number": .integer(5)]))
        var metadata = try store.metadata()
        #expect(metadata["custom"] == .string("hello"))
        #expect(metadata["number"] == .integer(5))
        metadata["nested"] = .dictionary(["a": .array([.boolean(true), .real(1.5), .data(Data([1, 2]))])])
        metadata["custom"] = nil
        metadata.storeUUID = "11111111-2222-3333-4444-555555555555"
        var request = SaveRequest()
        request.metadata = metadata
        try store.save(request)
        store.close()
        let read = try SQLiteStoreType().metadata(at: url)
        #expect(read == metadata)
        #expect(try F.sqlite3(url, "SELECT Z_UUID FROM Z_METADATA") == ["11111111-2222-3333-4444-555555555555"])
    }

    @Test func readOnlyStoreNeverWritesTheFile() throws {
        let url = try F.corpusCopy("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_WAL.sqlite")
        let walURL = URL(fileURLWithPath: url.path + "-wal")
        let before = (try Data(contentsOf: url), try Data(contentsOf: walURL))
        let store = try F.open(url, readOnly: true)
        #expect(store.isReadOnly)
        let posts = try #require(store.model.entityID(named: "Post"))
        #expect(try store.count(of: posts) == 84)
        var request = SaveRequest()
        request.inserted = [Snapshot(objectID: id(posts, 1000), version: 1)]
        #expect { try store.save(request) } throws: { ($0 as? ObjectGraphError)?.code == .readOnly }
        #expect { try store.reserveKeys(in: posts, count: 1) } throws: { ($0 as? ObjectGraphError)?.code == .readOnly }
        #expect { try store.claimKey(PrimaryKey(5000), in: posts) } throws: {
            ($0 as? ObjectGraphError)?.code == .readOnly
        }
        store.close()
        #expect(try Data(contentsOf: url) == before.0)
        #expect(try Data(contentsOf: walURL) == before.1)
    }

    @Test func externalCommitsChangeTheToken() throws {
        let (store, url) = try F.newStore()
        let first = try store.externalChangeToken()
        var request = SaveRequest()
        request.inserted = [Snapshot(objectID: id(F.tag, 1), version: 1)]
        try store.save(request)
        #expect(try store.externalChangeToken() == first, "own saves do not count")
        let other = try F.open(url, model: F.model())
        request.inserted = [Snapshot(objectID: id(F.tag, 2), version: 1)]
        try other.save(request)
        #expect(try store.externalChangeToken() != first)
        #expect(try store.count(of: F.tag) == 2)
    }

    /// A save says which updated rows it found exactly as they were read (the engine keeps those
    /// as saved instead of reading them again) and the change token as of its commit: another
    /// process's commit after it moves the token away from that one.
    @Test func aSaveNamesTheRowsItFoundAsReadAndItsToken() throws {
        let (store, url) = try F.newStore()
        let name = F.attributeName(.string), number = F.attributeName(.integer32)
        var insert = SaveRequest()
        insert.inserted = [1, 2].map {
            Snapshot(objectID: id(F.item, $0), version: 1, attributes: [name: .string("a"), number: .integer(1)])
        }
        try store.save(insert)
        let read = Dictionary(
            uniqueKeysWithValues: try store.snapshots(for: [id(F.item, 1), id(F.item, 2)]).map { ($0.objectID, $0) })
        let first = try #require(read[id(F.item, 1)]), second = try #require(read[id(F.item, 2)])
        // Another process changes the second row's number since it was read.
        let other = try F.open(url, model: F.model())
        var theirs = second
        theirs.attributes[number] = .integer(7)
        var request = SaveRequest()
        request.updated = [SaveRequest.Update(snapshot: theirs, original: second)]
        try other.save(request)
        other.close()
        // This store changes the names of both.
        request.updated = [first, second].map { original in
            var changed = original
            changed.attributes[name] = .string("b")
            return SaveRequest.Update(snapshot: changed, original: original)
        }
        let effects = try store.saveReportingEffects(request)
        #expect(effects.rowsAsRead == [id(F.item, 1)], "the row another process changed is not as read")
        let saved = try store.snapshots(for: [id(F.item, 1)])
        var expected = first
        expected.attributes[name] = .string("b")
        expected.version += 1
        #expect(saved == [expected], "the row found as read holds what the save wrote, one version on")
        let token = try #require(effects.changeTokenAtSave)
        #expect(try store.externalChangeToken() == token, "nobody committed since")
        let later = try F.open(url, model: F.model())
        var another = expected
        another.attributes[number] = .integer(9)
        request.updated = [SaveRequest.Update(snapshot: another, original: expected)]
        try later.save(request)
        later.close()
        #expect(try store.externalChangeToken() != token, "a commit after the save moves the token")
    }

    @Test func corruptFilesAreReportedClearly() throws {
        let directory = try F.temporaryDirectory()
        let text = directory.appendingPathComponent("notes.sqlite")
        try Data(
            "just some text, not a database at all, long enough to have a header of 100 bytes..........................."
                .utf8
        )
        .write(to: text)
        let source = try F.corpusCopy("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite")
        let truncated = directory.appendingPathComponent("truncated.sqlite")
        try Data(contentsOf: source).prefix(300_000).write(to: truncated)
        for (file, fragment) in [(text, "not an SQLite store"), (truncated, "is truncated")] {
            for attempt in 0..<2 {
                #expect {
                    if attempt == 0 { _ = try SQLiteStoreType().metadata(at: file) } else { _ = try F.open(file) }
                } throws: { error in
                    let error = error as! ObjectGraphError
                    return error.code == .corruptStore && error.message.contains(file.path)
                        && error.message.contains(fragment)
                }
            }
        }
        #expect { _ = try F.open(directory.appendingPathComponent("missing.sqlite")) } throws: {
            ($0 as? ObjectGraphError)?.code == .notFound
        }
    }

    /// A store reached through a symbolic link is the file the link names: its size is that
    /// file's, not the link's (the link's made every store "truncated").
    @Test func aStoreReachedThroughALinkOpens() throws {
        let directory = try F.temporaryDirectory()
        let source = try F.corpusCopy("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite")
        let link = directory.appendingPathComponent("link.sqlite")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: source)
        _ = try SQLiteStoreType().metadata(at: link)
        let store = try F.open(link)
        #expect(!store.model.entities.isEmpty, "the store opened with its model")
        store.close()
    }

    @Test func storeOpenedWithoutModelInfersOne() throws {
        let (store, url) = try F.newStore()
        store.close()
        // A store with no model anywhere: without its model cache (stores written before Core
        // Data kept one).
        try F.sqlite3Write(url, "DROP TABLE Z_MODELCACHE;")
        let inferred = try F.open(url).model
        let item = try #require(inferred.entity(named: "Item"))
        #expect(inferred.entity(named: "SpecialItem")?.parentName == "Item")
        #expect(item.attribute(named: "vinteger16")?.type == .integer64)
        #expect(item.attribute(named: "vdate")?.type == .date)
        #expect(item.attribute(named: "vuuid")?.type == .binaryData)
        #expect(item.attribute(named: "scratch") == nil)
        #expect(item.relationship(named: "owner")?.destinationEntityName == "Owner")
        #expect(inferred.entity(named: "Owner")?.relationship(named: "favorite")?.destinationEntityName == "Item")
        let tags = try #require(item.relationship(named: "tags"))
        #expect(tags.isToMany && tags.destinationEntityName == "Tag" && tags.inverseName == "items")
        #expect(inferred.entity(named: "Tag")?.relationship(named: "items")?.isOrdered == true)
    }
}
