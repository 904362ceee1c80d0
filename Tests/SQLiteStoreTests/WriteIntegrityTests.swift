import Foundation
import GRDB
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Every save leaves the file as Core Data keeps it: both sides of a one-to-one agree, no key
/// names a deleted object, Z_MAX stays at or above every key, and the file's settings (journal
/// mode, page size, vacuum mode, encoding, version numbers) stay as the app made them.
@Suite struct WriteIntegrityTests {
    static let swiftData = "sergd2005_ResourcesManager_default.store"

    /// Rows whose one-to-one key disagrees with the other side's (both sides set, naming
    /// different rows).
    static func disagreeingPairs(_ s: CorpusStore) throws -> String {
        try s.value(
            """
            SELECT (SELECT COUNT(*) FROM ZCRAFTINGRECIPE r JOIN ZITEM i ON i.Z_PK = r.ZPRODUCEDITEM WHERE i.ZCRAFTINGRECIPE IS NOT r.Z_PK)
                 + (SELECT COUNT(*) FROM ZITEM i JOIN ZCRAFTINGRECIPE r ON r.Z_PK = i.ZCRAFTINGRECIPE WHERE r.ZPRODUCEDITEM IS NOT i.Z_PK)
            """)
    }

    /// `ln -sfn ../../Item/p9 CraftingRecipe/p3/producedItem`: recipe 3 and item 9 point at each
    /// other, and their old partners (item 7, recipe 4) at nothing: four rows, each a new version
    /// and a history update.
    @Test func relinkingAOneToOneClearsBothOldPartners() throws {
        let s = try CorpusStore(Self.swiftData)
        #expect(
            try s.sql("SELECT Z_PK || '>' || IFNULL(ZPRODUCEDITEM, '-') FROM ZCRAFTINGRECIPE ORDER BY Z_PK") == [
                "1>1", "2>-", "3>7", "4>9"
            ])
        let versions = try [
            s.version("ZCRAFTINGRECIPE", 3), s.version("ZCRAFTINGRECIPE", 4), s.version("ZITEM", 7),
            s.version("ZITEM", 9)
        ]
        let last = try s.lastTransaction()
        try s.context.setDestination(try s.id("Item", 9), of: "producedItem", for: try s.id("CraftingRecipe", 3))
        s.save()
        #expect(
            try s.sql("SELECT Z_PK || '>' || IFNULL(ZPRODUCEDITEM, '-') FROM ZCRAFTINGRECIPE ORDER BY Z_PK") == [
                "1>1", "2>-", "3>9", "4>-"
            ])
        #expect(try s.value("SELECT ZCRAFTINGRECIPE FROM ZITEM WHERE Z_PK = 9") == "3")
        #expect(try s.value("SELECT IFNULL(ZCRAFTINGRECIPE, '-') FROM ZITEM WHERE Z_PK = 7") == "-")
        #expect(try Self.disagreeingPairs(s) == "0")
        let after = try [
            s.version("ZCRAFTINGRECIPE", 3), s.version("ZCRAFTINGRECIPE", 4), s.version("ZITEM", 7),
            s.version("ZITEM", 9)
        ]
        #expect(after == versions.map { $0 + 1 })
        let changes = try s.store.persistentHistory(after: last).flatMap(\.changes)
        #expect(changes.count == 4 && changes.allSatisfy { $0.kind == .update })
        #expect(Set(changes.map(\.updatedProperties)) == [["producedItem"], ["craftingRecipe"]])
    }

    /// A one-sided link (recipe 4 names item 9, item 9 names no recipe, as an app writing
    /// primitive values leaves them) is cleared by the store when item 9 gets another recipe:
    /// the engine could not see it; the store reports it so caches read recipe 4 again.
    @Test func aOneSidedLinkIsClearedWhenItsPartnerIsRelinked() throws {
        let s = try CorpusStore(Self.swiftData) { url in
            try Fixtures.sqlite3Write(url, "UPDATE ZITEM SET ZCRAFTINGRECIPE = NULL WHERE Z_PK = 9;")
        }
        let recipe4 = try s.id("CraftingRecipe", 4)
        #expect(try s.context.destination(of: "producedItem", for: recipe4) == (try s.id("Item", 9)))
        let version = try s.version("ZCRAFTINGRECIPE", 4)
        let last = try s.lastTransaction()
        try s.context.setDestination(try s.id("Item", 9), of: "producedItem", for: try s.id("CraftingRecipe", 3))
        let outcome = s.save()
        #expect(try s.value("SELECT IFNULL(ZPRODUCEDITEM, '-') FROM ZCRAFTINGRECIPE WHERE Z_PK = 4") == "-")
        #expect(try s.version("ZCRAFTINGRECIPE", 4) == version + 1)
        #expect(outcome.storeEffects.refreshed.contains(recipe4))
        #expect(try s.context.destination(of: "producedItem", for: recipe4) == nil, "the engine reads recipe 4 again")
        #expect(try Self.disagreeingPairs(s) == "0")
        let changes = try s.store.persistentHistory(after: last).flatMap(\.changes)
        #expect(changes.contains { $0.objectID == recipe4 && $0.updatedProperties == ["producedItem"] })
    }

    /// Notes keeps one-sided links between objects and their cloud states; a save that does not
    /// touch them leaves them as they are (the store never "repairs" on read or elsewhere).
    @Test func anUnrelatedSaveLeavesOneSidedLinksAlone() throws {
        let s = try CorpusStore("RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite")
        let oneSided =
            "SELECT COUNT(*) FROM ZICCLOUDSYNCINGOBJECT o JOIN ZICCLOUDSTATE c ON c.Z_PK = o.ZCLOUDSTATE WHERE c.ZCLOUDSYNCINGOBJECT IS NULL"
        let before = try s.value(oneSided)
        #expect(before != "0")
        try s.context.setValue(.string("Renamed"), of: "title", for: try s.id("ICFolder", 5))
        s.save()
        #expect(try s.value(oneSided) == before)
    }

    /// Deleting an object clears every key naming it, also through a relationship without
    /// inverse (Component.item), which Core Data would leave dangling.
    @Test func aDeleteLeavesNoKeyNamingTheObject() throws {
        let s = try CorpusStore(Self.swiftData)
        #expect(try s.sql("SELECT Z_PK FROM ZCOMPONENT WHERE ZITEM = 8 ORDER BY Z_PK") == ["3", "4"])
        let versions = try [s.version("ZCOMPONENT", 3), s.version("ZCOMPONENT", 4)]
        let last = try s.lastTransaction()
        try s.context.delete(try s.id("Item", 8))
        let outcome = s.save()
        #expect(try s.value("SELECT COUNT(*) FROM ZCOMPONENT WHERE ZITEM = 8") == "0")
        #expect(try [s.version("ZCOMPONENT", 3), s.version("ZCOMPONENT", 4)] == versions.map { $0 + 1 })
        let components = try [s.id("Component", 3), s.id("Component", 4)]
        #expect(outcome.storeEffects.refreshed.isSuperset(of: components))
        #expect(try s.context.destination(of: "item", for: components[0]) == nil)
        let changes = try s.store.persistentHistory(after: last).flatMap(\.changes)
        #expect(changes.filter { components.contains($0.objectID) }.map(\.updatedProperties) == [["item"], ["item"]])
        #expect(try s.danglingKeys() == [])
        #expect(try s.integrityCheck() == ["ok"])
    }

    /// Z_MAX is exactly the highest key its tree ever handed out, as Core Data keeps it: every key
    /// stays at or below it, new objects take the keys right after it, a delete never lowers it
    /// (a key is never reused), trees a save does not touch keep theirs, and the history tables,
    /// which only grow here, end at their highest row, having grown by the rows added.
    @Test func keysStayBelowZMax() throws {
        let s = try CorpusStore(Self.swiftData)
        let trees = [
            ("1", "ZCOMPONENT"), ("2", "ZCRAFTINGRECIPE"), ("3", "ZITEM"), ("16001", "ACHANGE"),
            ("16002", "ATRANSACTION"), ("16003", "ATRANSACTIONSTRING")
        ]
        func zmax(_ table: String) throws -> Int64 {
            let zent = try #require(trees.first { $0.1 == table }?.0)
            return try #require(Int64(try s.value("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = \(zent)")))
        }
        func top(_ table: String) throws -> Int64 {
            try #require(Int64(try s.value("SELECT IFNULL(MAX(Z_PK), 0) FROM \(table)")))
        }
        func rows(_ table: String) throws -> Int64 { try #require(Int64(try s.value("SELECT COUNT(*) FROM \(table)"))) }
        var before: [String: Int64] = [:]
        var rowsBefore: [String: Int64] = [:]
        for (_, table) in trees {
            before[table] = try zmax(table)
            rowsBefore[table] = try rows(table)
            #expect(try top(table) <= before[table]!, "\(table): a key above Z_MAX before any save")
        }
        let items = before["ZITEM"]!

        // Three inserts take the three keys after Z_MAX, which becomes the last of them.
        let inserted = try ["a", "b", "c"].map { try s.insert("Item", values: ["name": .string($0)]) }
        s.save()
        #expect(inserted.map(\.key.rawValue) == [items + 1, items + 2, items + 3])
        #expect(try zmax("ZITEM") == items + 3)
        #expect(try top("ZITEM") == items + 3)
        // Deletes, of an old object and of the newest, lower nothing.
        try s.context.delete(try s.id("Item", 12))
        try s.context.delete(inserted[2])
        s.save()
        #expect(try zmax("ZITEM") == items + 3, "a delete never lowers Z_MAX")
        #expect(try top("ZITEM") == items + 2)
        // The next insert takes the next key, not the newest deleted one.
        let next = try s.insert("Item", values: ["name": .string("d")])
        s.save()
        #expect(next.key.rawValue == items + 4, "the deleted key \(items + 3) is not reused")
        #expect(try zmax("ZITEM") == items + 4)

        // Trees no save inserted into keep their Z_MAX (the delete of item 12 may remove rows).
        for table in ["ZCOMPONENT", "ZCRAFTINGRECIPE"] {
            #expect(try zmax(table) == before[table]!, "\(table)")
            #expect(try top(table) <= before[table]!, "\(table)")
        }
        // The history tables: three saves added rows, Z_MAX is the highest of them, exactly.
        for table in ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"] {
            let (max, highest) = (try zmax(table), try top(table))
            #expect(max == highest, "\(table): Z_MAX \(max), highest key \(highest)")
            #expect(max - before[table]! == (try rows(table)) - rowsBefore[table]!, "\(table): one key per row added")
        }
        #expect(try rows("ATRANSACTION") - rowsBefore["ATRANSACTION"]! == 3, "one transaction per save")
    }

    // MARK: - File settings

    /// The header fields a write must keep: journal mode (bytes 18, 19), page size (16, 17),
    /// reserved bytes (20), auto-vacuum (52), text encoding (56), user version (60), incremental
    /// vacuum (64), application id (68).
    static func settings(_ url: URL) throws -> [String: [UInt8]] {
        let header = [UInt8](try Data(contentsOf: url).prefix(100))
        func bytes(_ start: Int, _ count: Int) -> [UInt8] { Array(header[start..<(start + count)]) }
        return [
            "journal": bytes(18, 2), "page size": bytes(16, 2), "reserved": bytes(20, 1), "auto-vacuum": bytes(52, 4),
            "encoding": bytes(56, 4), "user version": bytes(60, 4), "incremental vacuum": bytes(64, 4),
            "application id": bytes(68, 4)
        ]
    }

    @Test(arguments: [
        "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_1.sqlite",
        "magicalpanda_MagicalRecord_Recipes.sqlite",
        "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_WAL.sqlite", Self.swiftData
    ])
    func aSaveKeepsTheFilesSettings(_ name: String) throws {
        let s = try CorpusStore(name)
        let before = try Self.settings(s.url)
        // The first string of an object that saves (some corpus objects fail the model's own
        // validation, as Core Data would refuse them too).
        var changed: (ObjectID, String)?
        search: for entity in s.model.entities {
            guard let attribute = entity.persistentAttributes.first(where: { $0.type == .string && $0.maxValue == nil })
            else { continue }
            for object in try s.context.objectIDs(of: entity.id).prefix(3) {
                try s.context.setValue(.string("changed by storefs"), of: attribute.name, for: object)
                if s.context.save(holding: []).saved.contains(object) {
                    changed = (object, attribute.name)
                    break search
                }
                s.context.rollback()
            }
        }
        let (object, attribute) = try #require(changed)
        s.close()
        let after = try Self.settings(s.url)
        #expect(after == before, "\(name)")
        #expect(
            !FileManager.default.fileExists(atPath: s.url.path + "-journal"),
            "a rollback store's journal goes with the commit")
        if before["journal"] == [1, 1] {
            #expect(
                !FileManager.default.fileExists(atPath: s.url.path + "-wal"),
                "a rollback-journal store is not switched to WAL")
        }
        let reopened = try CorpusStore.reopen(s.url)
        defer { reopened.close() }
        #expect(try reopened.context.value(of: attribute, for: object) == .string("changed by storefs"))
    }

    /// A WAL store with commits in its -wal, opened for writing and closed without a save, stays
    /// byte for byte as it was (main file and -wal).
    @Test func anUneditedOpenLeavesTheFilesAlone() throws {
        let url = try Fixtures.corpusCopy("RhetTbull_merge_photos_libraries_Photos.sqlite")
        let before = try ["", "-wal"].map { try Data(contentsOf: URL(fileURLWithPath: url.path + $0)) }
        let coordinator = try PersistentStoreCoordinator.open(at: url, types: [SQLiteStoreType()])
        _ = try coordinator.newContext().objectIDs(of: try #require(coordinator.model.entityID(named: "Asset")))
        coordinator.close()
        let after = try ["", "-wal"].map { try Data(contentsOf: URL(fileURLWithPath: url.path + $0)) }
        #expect(after == before)
    }
}

extension CorpusStore {
    /// Opens a store file that is already a copy (after the first open closed).
    static func reopen(_ url: URL) throws -> CorpusStore {
        try CorpusStore(existing: url)
    }
}
