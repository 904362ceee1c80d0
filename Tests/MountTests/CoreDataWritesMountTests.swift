import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// The issue's edits, as a developer fixing data makes them (change a string, insert with mkdir,
/// relink with `ln -sfn`, delete with `rm -r`), through real mounts of real app stores: Photos
/// (59 triggers, history), Notes (history), CoreDataPlus's derived attribute (triggers,
/// history) and SwiftData (history). Each comes back as a store Core Data accepts: integrity
/// check ok, versions bumped, the triggers' effects right (and shown by the mount at once),
/// the history an app reads listing the edits, no key pointing at nothing, the file's settings
/// and metadata as they were.
@Suite(.serialized) struct CoreDataWritesMountTests {
    static func corpus(_ name: String) -> URL { Corpus.url("sqlite/\(name)") }

    static func sqlite(_ store: URL, _ query: String) throws -> String {
        try run("sqlite3", ["-batch", "-readonly", store.path, query]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// What must hold of a store before the mount, to compare after.
    struct Before {
        var lastTransaction: Int64
        var header: Data
        var metadata: String
        var tables: String
    }

    static func before(_ store: URL) throws -> Before {
        let history = try history(store)
        return Before(
            lastTransaction: history.last?.number ?? 0, header: try Data(contentsOf: store).prefix(100),
            metadata: try sqlite(store, "SELECT hex(Z_PLIST) FROM Z_METADATA"),
            tables: try sqlite(store, "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master ORDER BY name)"))
    }

    static func history(_ store: URL, after: Int64 = 0) throws -> [HistoryTransaction] {
        let coordinator = try PersistentStoreCoordinator.open(
            at: store, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        return try (coordinator.store as! SQLiteStore).persistentHistory(after: after)
    }

    /// The changes of the transactions after `after`, as `Entity pN kind properties`.
    static func changes(_ store: URL, after: Int64) throws -> [String] {
        let coordinator = try PersistentStoreCoordinator.open(
            at: store, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        let transactions = try (coordinator.store as! SQLiteStore).persistentHistory(after: after)
        #expect(
            transactions.allSatisfy { $0.author == "storefs" && $0.bundleID == "storefs" && $0.processID == "storefs" })
        return transactions.flatMap(\.changes).map {
            "\(coordinator.model[$0.objectID.entity].name) \($0.objectID.key) \($0.kind) \($0.updatedProperties.joined(separator: ","))"
        }
    }

    /// Whether `changes` record `kind` of `object` (`Entity pN`), with `property` among the
    /// changed ones for an update (a save's changes of one object are one change).
    static func recorded(_ changes: [String], _ object: String, _ kind: String, _ property: String? = nil) -> Bool {
        changes.contains { change in
            let parts = change.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard parts.count >= 3, "\(parts[0]) \(parts[1])" == object, parts[2] == kind else { return false }
            guard let property else { return true }
            return parts.count > 3 && parts[3].split(separator: ",").map(String.init).contains(property)
        }
    }

    /// Keys naming objects that do not exist, read as an app reads relationships, and join rows
    /// naming rows that do not exist.
    static func danglingKeys(_ store: URL) throws -> [String] {
        let coordinator = try PersistentStoreCoordinator.open(
            at: store, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        let context = coordinator.newContext()
        var found: [String] = []
        for entity in coordinator.model.entities where !entity.persistentRelationships.isEmpty {
            let ids = try context.objectIDs(of: entity.id)
            try context.prefetch(ids)
            for id in ids {
                for relationship in entity.persistentRelationships where !relationship.isToMany {
                    if let destination = try context.destination(of: relationship.name, for: id),
                        try !context.exists(destination)
                    {
                        found.append("\(entity.name) \(id.key).\(relationship.name) names \(destination)")
                    }
                }
            }
        }
        return found
    }

    /// What every store that comes back must satisfy.
    static func expectAccepted(
        _ store: URL, _ before: Before, tracksHistory: Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(try sqlite(store, "PRAGMA integrity_check") == "ok", sourceLocation: sourceLocation)
        #expect(try danglingKeys(store) == [], sourceLocation: sourceLocation)
        #expect(
            try Data(contentsOf: store).prefix(100)[18..<20] == before.header[18..<20], "journal mode",
            sourceLocation: sourceLocation)
        #expect(
            try sqlite(store, "SELECT hex(Z_PLIST) FROM Z_METADATA") == before.metadata,
            "metadata and version hashes kept", sourceLocation: sourceLocation)
        #expect(
            try sqlite(store, "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master ORDER BY name)")
                == before.tables,
            "no table, index or trigger added", sourceLocation: sourceLocation)
        let rows = try sqlite(
            store,
            "SELECT COUNT(*) FROM Z_PRIMARYKEY p WHERE Z_SUPER = 0 AND EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'Z' || upper(p.Z_NAME))"
        )
        #expect(rows != "0", sourceLocation: sourceLocation)
        let transactions = try history(store, after: before.lastTransaction)
        if tracksHistory {
            #expect(!transactions.isEmpty, "history rows written", sourceLocation: sourceLocation)
        } else {
            #expect(transactions.isEmpty, sourceLocation: sourceLocation)
        }
    }

    /// `sync PATH`: fsync, which commits everything pending (a folder made by mkdir settles first).
    static func commit(_ path: String) throws {
        let result = try run("sync", [path])
        #expect(result.status == 0, "\(result.error)")
    }

    @Test func photosLibrary() throws {
        let mount = try MountedStore(
            copying: Self.corpus("RhetTbull_merge_photos_libraries_Photos.sqlite"), mount: false)
        defer { try? mount.unmount() }
        let before = try Self.before(mount.store)
        let newPerson =
            (Int(try Self.sqlite(mount.store, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Person'")) ?? 0) + 1
        let assetVersion = Int(try Self.sqlite(mount.store, "SELECT Z_OPT FROM ZGENERICASSET WHERE Z_PK = 1")) ?? 0
        try mount.mount()
        let m = mount.path
        #expect(try run("cat", ["\(m)/Person/p1/faceCount"]).output == "1\n")
        #expect(try run("cat", ["\(m)/DetectedFace/p1/assetVisible"]).output == "true\n")

        // Change a string; trash an asset (its face, person and highlight counters follow).
        #expect(
            try sh("printf 'renamed.jpg\\n' > \(m)/Asset/p1/filename && echo 1 > \(m)/Asset/p4/trashedState").status
                == 0)
        try Self.commit("\(m)/Asset/p4/trashedState")
        #expect(try run("cat", ["\(m)/Asset/p1/filename"]).output == "renamed.jpg\n")
        #expect(
            try run("cat", ["\(m)/Person/p1/faceCount"]).output == "0\n", "the mount shows the trigger's count at once")
        #expect(try run("cat", ["\(m)/DetectedFace/p1/assetVisible"]).output == "false\n")
        #expect(try run("stat", ["-c", "%s", "\(m)/DetectedFace/p1/assetVisible"]).output == "6\n", "and its new size")

        // Insert; relink a face from person 3 to person 2 (both counts follow); delete an asset.
        #expect(try run("mkdir", ["\(m)/Person/p\(newPerson)"]).status == 0)
        #expect(try run("ln", ["-sfn", "../../Person/p2", "\(m)/DetectedFace/p3/person"]).status == 0)
        try Self.commit("\(m)/Person/p\(newPerson)")
        #expect(try run("cat", ["\(m)/Person/p2/faceCount"]).output == "1\n")
        #expect(try run("cat", ["\(m)/Person/p3/faceCount"]).output == "0\n")
        #expect(try run("rm", ["-r", "\(m)/Asset/p7"]).status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)\n\(mount.logText.suffix(2000))")

        try Self.expectAccepted(mount.store, before, tracksHistory: true)
        #expect(
            try Self.sqlite(mount.store, "SELECT Z_OPT FROM ZGENERICASSET WHERE Z_PK = 1") == String(assetVersion + 1))
        #expect(try Self.sqlite(mount.store, "SELECT rtreecheck('Z_RT_GenericAsset_boundedByRect')") == "ok")
        #expect(
            try Self.sqlite(
                mount.store,
                "SELECT Z_PK || ':' || IFNULL(ZFACECOUNT, 0) FROM ZPERSON WHERE Z_PK IN (1, 2, 3) ORDER BY Z_PK")
                == "1:0\n2:1\n3:0")
        let changes = try Self.changes(mount.store, after: before.lastTransaction)
        for (object, kind, property) in [
            ("Asset p1", "update", "filename"), ("Asset p4", "update", "trashedState"),
            ("Person p\(newPerson)", "insert", nil),
            ("DetectedFace p3", "update", "person"), ("Asset p7", "delete", nil)
        ] {
            #expect(
                Self.recorded(changes, object, kind, property),
                "\(object) \(kind) \(property ?? "") in \(changes.prefix(12))")
        }
        #expect(!Self.recorded(changes, "Person p1", "update"), "rows only triggers changed get no change")
    }

    @Test func derivedAttributeStore() throws {
        let mount = try MountedStore(copying: Self.corpus("alemar11_CoreDataPlus_SampleModel2_V1.sqlite"), mount: false)
        defer { try? mount.unmount() }
        let before = try Self.before(mount.store)
        let newPage =
            (Int(try Self.sqlite(mount.store, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Page'")) ?? 0) + 1
        let oldBook = try Self.sqlite(mount.store, "SELECT ZBOOK FROM ZPAGE WHERE Z_PK = 1")
        let bookVersion = Int(try Self.sqlite(mount.store, "SELECT Z_OPT FROM ZBOOK WHERE Z_PK = 9")) ?? 0
        try mount.mount()
        let m = mount.path
        #expect(try run("cat", ["\(m)/Book/p8/pagesCount"]).output == "99\n")
        #expect(try sh("echo 5 > \(m)/Book/p8/pagesCount").status != 0, "a derived attribute is the store's to compute")

        #expect(try sh("printf 'Renamed book\\n' > \(m)/Book/p9/title").status == 0)
        // Insert a page into book 8 as a copy would: mkdir, files, link.
        let page = "\(m)/Page/p\(newPage)"
        #expect(
            try sh(
                "mkdir \(page) && cp \(m)/Page/p1/content \(page)/content && echo 100 > \(page)/number && ln -s ../../Book/p8 \(page)/book"
            ).status == 0)
        try Self.commit(page)
        #expect(try run("cat", ["\(m)/Book/p8/pagesCount"]).output == "100\n", "the mount shows the trigger's count")
        // Relink page 1 into book 9; delete page 2.
        #expect(try run("ln", ["-sfn", "../../Book/p9", "\(m)/Page/p1/book"]).status == 0)
        try Self.commit("\(m)/Page/p1/book")
        #expect(try run("cat", ["\(m)/Book/p9/pagesCount"]).output == "100\n")
        #expect(try run("rm", ["-r", "\(m)/Page/p2"]).status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)\n\(mount.logText.suffix(2000))")

        try Self.expectAccepted(mount.store, before, tracksHistory: true)
        #expect(
            try Self.sqlite(
                mount.store,
                "SELECT COUNT(*) FROM ZBOOK WHERE IFNULL(ZPAGESCOUNT, 0) != (SELECT COUNT(*) FROM ZPAGE WHERE ZBOOK = ZBOOK.Z_PK)"
            )
                == "0")
        #expect(try Self.sqlite(mount.store, "SELECT ZTITLE FROM ZBOOK WHERE Z_PK = 9") == "Renamed book")
        #expect((Int(try Self.sqlite(mount.store, "SELECT Z_OPT FROM ZBOOK WHERE Z_PK = 9")) ?? 0) > bookVersion)
        let changes = try Self.changes(mount.store, after: before.lastTransaction)
        for (object, kind, property) in [
            ("Book p9", "update", "title"), ("Page p\(newPage)", "insert", nil), ("Page p1", "update", "book"),
            ("Book p\(oldBook)", "update", "pages"), ("Page p2", "delete", nil)
        ] {
            #expect(Self.recorded(changes, object, kind, property), "\(object) \(kind) \(property ?? "") in \(changes)")
        }
    }

    @Test func notesStore() throws {
        let mount = try MountedStore(
            copying: Self.corpus("RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"), mount: false)
        defer { try? mount.unmount() }
        let before = try Self.before(mount.store)
        let newFolder =
            (Int(try Self.sqlite(mount.store, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'ICCloudSyncingObject'"))
                ?? 0) + 1
        let version = Int(try Self.sqlite(mount.store, "SELECT Z_OPT FROM ZICCLOUDSYNCINGOBJECT WHERE Z_PK = 5")) ?? 0
        try mount.mount()
        let m = mount.path
        #expect(try sh("printf 'Renamed\\n' > \(m)/ICFolder/p5/title").status == 0)
        let folder = "\(m)/ICFolder/p\(newFolder)"
        #expect(
            try sh(
                "mkdir \(folder) && printf 'New folder\\n' > \(folder)/title && ln -s ../../ICAccount/p3 \(folder)/owner && ln -s ../../ICAccount/p3 \(folder)/account"
            ).status == 0)
        #expect(try run("ln", ["-sfn", "../../ICFolder/p7", "\(m)/ICNote/p11/folder"]).status == 0)
        #expect(try run("rm", ["-r", "\(m)/ICNote/p16"]).status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)\n\(mount.logText.suffix(2000))")

        try Self.expectAccepted(mount.store, before, tracksHistory: true)
        #expect(
            try Self.sqlite(mount.store, "SELECT ZTITLE2 || ':' || Z_OPT FROM ZICCLOUDSYNCINGOBJECT WHERE Z_PK = 5")
                == "Renamed:\(version + 1)")
        let changes = try Self.changes(mount.store, after: before.lastTransaction)
        for (object, kind, property) in [
            ("ICFolder p5", "update", "title"), ("ICFolder p\(newFolder)", "insert", nil),
            ("ICNote p11", "update", "folder"),
            ("ICFolder p7", "update", "notes"), ("ICNote p16", "delete", nil)
        ] {
            #expect(Self.recorded(changes, object, kind, property), "\(object) \(kind) \(property ?? "") in \(changes)")
        }
    }

    @Test func swiftDataStore() throws {
        let mount = try MountedStore(copying: Self.corpus("sergd2005_ResourcesManager_default.store"), mount: false)
        defer { try? mount.unmount() }
        let before = try Self.before(mount.store)
        let newItem =
            (Int(try Self.sqlite(mount.store, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item'")) ?? 0) + 1
        try mount.mount()
        let m = mount.path
        #expect(try sh("printf 'Plank\\n' > \(m)/Item/p9/name").status == 0)
        #expect(try sh("mkdir \(m)/Item/p\(newItem) && printf 'Nail\\n' > \(m)/Item/p\(newItem)/name").status == 0)
        // One-to-one: recipe 3 takes item 9 from recipe 4; item 7 loses recipe 3.
        #expect(try run("ln", ["-sfn", "../../Item/p9", "\(m)/CraftingRecipe/p3/producedItem"]).status == 0)
        try Self.commit("\(m)/CraftingRecipe/p3")
        #expect(try run("readlink", ["\(m)/Item/p9/craftingRecipe"]).output == "../../CraftingRecipe/p3\n")
        #expect(try run("ls", ["\(m)/CraftingRecipe/p4"]).lines.contains("producedItem") == false)
        // Delete an item two components name through a relationship without inverse.
        #expect(try run("rm", ["-r", "\(m)/Item/p8"]).status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)\n\(mount.logText.suffix(2000))")

        try Self.expectAccepted(mount.store, before, tracksHistory: true)
        #expect(
            try Self.sqlite(
                mount.store, "SELECT Z_PK || '>' || IFNULL(ZPRODUCEDITEM, '-') FROM ZCRAFTINGRECIPE ORDER BY Z_PK")
                == "1>1\n2>-\n3>9\n4>-")
        #expect(try Self.sqlite(mount.store, "SELECT COUNT(*) FROM ZCOMPONENT WHERE ZITEM = 8") == "0")
        let changes = try Self.changes(mount.store, after: before.lastTransaction)
        for (object, kind, property) in [
            ("Item p9", "update", "name"), ("Item p\(newItem)", "insert", nil),
            ("CraftingRecipe p3", "update", "producedItem"),
            ("CraftingRecipe p4", "update", "producedItem"), ("Item p7", "update", "craftingRecipe"),
            ("Item p8", "delete", nil),
            ("Component p3", "update", "item")
        ] {
            #expect(Self.recorded(changes, object, kind, property), "\(object) \(kind) \(property ?? "") in \(changes)")
        }
    }

    /// The same kinds of edits on a store without triggers or history (a rollback-journal store)
    /// add none of it; its one-to-one stays consistent on both sides.
    @Test func aStoreWithoutTriggersOrHistoryGetsNone() throws {
        let mount = try MountedStore(
            copying: Self.corpus("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite"), mount: false)
        defer { try? mount.unmount() }
        let before = try Self.before(mount.store)
        let newColor =
            (Int(try Self.sqlite(mount.store, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Color'")) ?? 0) + 1
        let version = Int(try Self.sqlite(mount.store, "SELECT Z_OPT FROM ZCOLOR WHERE Z_PK = 5")) ?? 0
        try mount.mount()
        let m = mount.path
        #expect(try sh("printf 'renamed\\n' > \(m)/Color/p5/colorID").status == 0)
        #expect(
            try sh("mkdir \(m)/Color/p\(newColor) && printf '#ffffff\\n' > \(m)/Color/p\(newColor)/hex").status == 0)
        #expect(try run("ln", ["-sfn", "../../Color/p\(newColor)", "\(m)/Post/p1236/color"]).status == 0)
        #expect(try run("rm", ["-r", "\(m)/Post/p10"]).status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)\n\(mount.logText.suffix(2000))")

        try Self.expectAccepted(mount.store, before, tracksHistory: false)
        #expect(try Self.sqlite(mount.store, "SELECT Z_OPT FROM ZCOLOR WHERE Z_PK = 5") == String(version + 1))
        #expect(try Self.sqlite(mount.store, "SELECT ZCOLOR FROM ZPOST WHERE Z_PK = 1236") == String(newColor))
        #expect(try Self.sqlite(mount.store, "SELECT ZPOST FROM ZCOLOR WHERE Z_PK = \(newColor)") == "1236")
        #expect(
            try Self.sqlite(mount.store, "SELECT IFNULL(ZPOST, '-') FROM ZCOLOR WHERE Z_PK = 1229") == "-",
            "the old partner lets go")
        #expect(
            try Self.sqlite(
                mount.store,
                "SELECT COUNT(*) FROM ZCOLOR c JOIN ZPOST p ON p.Z_PK = c.ZPOST WHERE p.ZCOLOR IS NOT c.Z_PK") == "0")
        #expect(try Self.sqlite(mount.store, "SELECT COUNT(*) FROM ZCOLOR WHERE ZPOST = 10") == "0")
        #expect(!FileManager.default.fileExists(atPath: mount.store.path + "-wal"), "still a rollback-journal store")
    }

    /// A store whose triggers call a function storefs does not provide: `storefs mount` says so
    /// and fails; `-o ro` mounts it.
    @Test func aStoreWithUnknownTriggerFunctionsMountsReadOnlyOnly() throws {
        let mount = try MountedStore(copying: Self.corpus("alemar11_CoreDataPlus_SampleModel2_V1.sqlite"), mount: false)
        defer { try? mount.unmount() }
        #expect(
            try run(
                "sqlite3",
                [
                    mount.store.path,
                    "CREATE TRIGGER Z_DA_ZPAGE_Page_x_INSERT AFTER INSERT ON ZPAGE BEGIN SELECT NSCoreDataFutureFunction(NEW.Z_PK); END;"
                ]
            ).status == 0)
        let bytes = try Data(contentsOf: mount.store)
        #expect {
            try mount.mount()
        } throws: { error in
            "\(error)".contains("NSCoreDataFutureFunction") && "\(error)".contains("-o ro")
        }
        #expect(try Data(contentsOf: mount.store) == bytes)
        try mount.mount(options: ["ro"])
        #expect(try run("cat", ["\(mount.path)/Book/p1/title"]).status == 0)
    }

    /// Archived values: `cover.json` beside `cover`, reachable by name, not listed, read-only;
    /// `cover` stays the raw bytes, and `cp -a` of the folder copies only what is listed.
    @Test func archivedValuesHaveAReadableRendering() throws {
        let mount = try MountedStore(copying: Self.corpus("alemar11_CoreDataPlus_SampleModel2_V1.sqlite"))
        defer { try? mount.unmount() }
        let book = "\(mount.path)/Book/p1"
        let json = "{\n  \"$class\": \"CoreDataPlus_Tests.Cover\",\n  \"text\": \"default cover\"\n}\n"
        #expect(try run("cat", ["\(book)/cover.json"]).output == json)
        #expect(try run("stat", ["-c", "%s", "\(book)/cover.json"]).output == "\(json.utf8.count)\n")
        #expect(!(try run("ls", ["-a", book]).lines.contains("cover.json")))
        let renderings = try run("getfattr", ["--only-values", "-n", "user.attribute.renderings", "\(book)/cover"])
        #expect(renderings.output == "json,plist")
        let raw = try Data(contentsOf: URL(fileURLWithPath: "\(book)/cover"))
        #expect(
            raw.map { String(format: "%02X", $0) }.joined()
                == (try Self.sqlite(mount.store, "SELECT hex(ZCOVER) FROM ZBOOK WHERE Z_PK = 1")))
        #expect(try sh("echo x > \(book)/cover.json").status != 0)
        #expect(try run("rm", ["\(book)/cover.json"]).status != 0)
        #expect(try run("ls", ["\(book)/title.json"]).status != 0, "no rendering of a string")
        let copy = mount.directory.appendingPathComponent("copy")
        #expect(try run("cp", ["-a", book, copy.path]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: copy.appendingPathComponent("cover.json").path))
        #expect(try Data(contentsOf: copy.appendingPathComponent("cover")) == raw)
    }

    /// External binary data through a mount: values read from their files, a large value
    /// copied in goes to one new file, and reads back after a remount.
    @Test func externalBinaryDataThroughAMount() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/external-data")
        let mount = try MountedStore(copying: fixture.appendingPathComponent("Attachments.sqlite"), mount: false)
        defer { try? mount.unmount() }
        let support = mount.directory.appendingPathComponent(".Attachments_SUPPORT")
        try FileManager.default.copyItem(at: fixture.appendingPathComponent(".Attachments_SUPPORT"), to: support)
        let model = fixture.appendingPathComponent("Attachments.xcdatamodel").path
        try mount.mount(model: model)
        let external = support.appendingPathComponent("_EXTERNAL_DATA")
        let stored = try Data(contentsOf: external.appendingPathComponent("9F4E2D1C-0B3A-4E5F-8A7B-6C5D4E3F2A10"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(mount.path)/Attachment/p4/data")) == stored)
        #expect(try run("stat", ["-c", "%s", "\(mount.path)/Attachment/p4/data"]).output == "\(stored.count)\n")

        let big = mount.directory.appendingPathComponent("big.bin")
        try Data((0..<(400 * 1024)).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) }).write(to: big)
        #expect(try run("cp", [big.path, "\(mount.path)/Attachment/p8/data"]).status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)")
        let names = try FileManager.default.contentsOfDirectory(atPath: external.path)
        #expect(names.count == 3)
        let reference = try Self.sqlite(mount.store, "SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 8")
        #expect(names.contains(reference), "the row names the new file: \(reference)")
        try mount.mount(model: model)
        #expect(try run("cmp", [big.path, "\(mount.path)/Attachment/p8/data"]).status == 0)
    }
}
