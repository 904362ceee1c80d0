import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Core Data's persistent history: the changes apps recorded in the corpus stores decode with
/// the slot rule storefs writes by, and each storefs save appends one transaction that an app
/// reading the history back sees as the edits made.
@Suite struct PersistentHistoryTests {
    static let notes13 = "RhetTbull_apple-notes-parser_NoteStore-macOS-13-Ventura.sqlite"
    static let notes14 = "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"
    static let photos = "RhetTbull_merge_photos_libraries_Photos.sqlite"
    static let swiftData = "sergd2005_ResourcesManager_default.store"
    static let sampleModel2 = "alemar11_CoreDataPlus_SampleModel2_V1.sqlite"

    /// Every update Core Data recorded in the corpus (485 rows in four stores) decodes to the
    /// entity's slots exactly: the right number of bytes, no bit past the last slot.
    @Test func everyRecordedUpdateOfTheCorpusDecodes() throws {
        var updates = 0
        for name in [Self.notes13, Self.notes14, Self.photos, Self.swiftData] {
            let s = try CorpusStore(name, readOnly: true)
            for transaction in try s.store.persistentHistory() {
                for change in transaction.changes where change.kind == .update {
                    updates += 1
                    #expect(!change.updatedProperties.isEmpty, "\(name) change \(change.changeID)")
                    #expect(
                        !change.updatedProperties.contains { $0.hasPrefix("<") },
                        "\(name) change \(change.changeID): \(change.updatedProperties)")
                }
            }
        }
        #expect(updates == 485)
    }

    /// What the decoded updates say matches what the data says happened.
    @Test func recordedUpdatesReadAsTheAppsChanges() throws {
        let notes = try CorpusStore(Self.notes14, readOnly: true)
        let changes = try notes.store.persistentHistory().flatMap(\.changes)
        func change(_ id: Int64) -> HistoryChange? { changes.first { $0.changeID == id } }
        #expect(change(18)?.updatedProperties == ["mergeableData"])
        #expect(change(18).map { notes.model[$0.objectID.entity].name } == "ICAccountData")
        #expect(change(20)?.updatedProperties == ["markedForDeletion", "parentModificationDate"])
        #expect(change(28)?.updatedProperties == ["dateForLastTitleModification", "title"], "a folder renamed")
        let noteData = try notes.entity("ICNoteData")
        let noteDataUpdates = changes.filter { $0.kind == .update && $0.objectID.entity == noteData }
        #expect(!noteDataUpdates.isEmpty && noteDataUpdates.allSatisfy { $0.updatedProperties == ["data"] })
        let cloudStates = changes.filter {
            $0.kind == .update && notes.model[$0.objectID.entity].name == "ICCloudState"
        }
        #expect(
            cloudStates.contains {
                $0.updatedProperties == [
                    "cloudSyncingObject", "cloudSyncingObject#entity", "currentLocalVersion", "localVersionDate"
                ]
            })

        let swift = try CorpusStore(Self.swiftData, readOnly: true)
        let item9 = try swift.id("Item", 9)
        let names = try swift.store.persistentHistory().flatMap(\.changes).filter {
            $0.objectID == item9 && $0.kind == .update
        }
        .map(\.updatedProperties)
        #expect(names == [["craftingRecipe"], ["name"], ["name"], ["name"]])

        let photos = try CorpusStore(Self.photos, readOnly: true)
        let album46 = try photos.id("Album", 46)
        let albumUpdates = try photos.store.persistentHistory().flatMap(\.changes).filter { $0.objectID == album46 }
            .map(\.updatedProperties)
        #expect(
            albumUpdates.contains([
                "keyAsset", "secondaryKeyAsset", "tertiaryKeyAsset", "keyAsset#entity", "secondaryKeyAsset#entity",
                "tertiaryKeyAsset#entity"
            ]))
        let tombstones = try photos.store.persistentHistory().flatMap(\.changes).filter {
            $0.kind == .delete && photos.model[$0.objectID.entity].name == "InternalResource"
                && $0.objectID.key == PrimaryKey(11)
        }.map(\.tombstone)
        #expect(
            tombstones == [
                [
                    "cloudDeleteAssetUUIDWithResourceType": .string("FE291698-3C93-4425-A47A-E19027DBCAA0-@-0"),
                    "cloudDeleteState": .integer(0)
                ]
            ])
    }

    /// The bytes storefs writes for a folder's rename are the ones Notes wrote for one.
    @Test func theColumnsOfAnUpdateAreCoreDatasBytes() throws {
        let s = try CorpusStore(Self.notes14)
        let coreDatas = try s.value("SELECT hex(ZCOLUMNS) FROM ACHANGE WHERE Z_PK = 28")
        let folder = try s.id("ICFolder", 5)
        let before = try s.lastTransaction()
        try s.context.setValue(.string("Renamed"), of: "title", for: folder)
        try s.context.setValue(.date(Date()), of: "dateForLastTitleModification", for: folder)
        s.save()
        let written = try s.value("SELECT hex(ZCOLUMNS) FROM ACHANGE WHERE ZTRANSACTIONID = \(before + 1)")
        #expect(written == coreDatas)
        #expect(written == "000000000410")
    }

    /// The issue's edits on Notes, read back as an app would: one transaction per save, by
    /// storefs, listing exactly the objects changed and their properties.
    @Test func notesEditsAreReadBackAsMade() throws {
        let s = try CorpusStore(Self.notes14)
        let note = try s.id("ICNote", 11)
        let folder5 = try s.id("ICFolder", 5)
        let folder7 = try s.id("ICFolder", 7)
        #expect(try s.context.destination(of: "folder", for: note) == folder5)
        var last = try s.lastTransaction()
        func nextTransaction(sourceLocation: SourceLocation = #_sourceLocation) throws -> HistoryTransaction? {
            let transactions = try s.store.persistentHistory(after: last)
            #expect(transactions.count == 1, sourceLocation: sourceLocation)
            last = transactions.last?.number ?? last
            guard let transaction = transactions.first else { return nil }
            #expect(
                transaction.author == "storefs" && transaction.bundleID == "storefs"
                    && transaction.processID == "storefs", sourceLocation: sourceLocation)
            #expect(transaction.contextName == nil, sourceLocation: sourceLocation)
            #expect(abs(transaction.timestamp.timeIntervalSinceNow) < 60, sourceLocation: sourceLocation)
            return transaction
        }
        func summary(_ t: HistoryTransaction?) -> [String] {
            (t?.changes ?? []).map {
                "\($0.kind) \(s.model[$0.objectID.entity].name) \($0.objectID.key) \($0.updatedProperties.joined(separator: ","))"
            }
        }

        // Change a string.
        try s.context.setValue(.string("Renamed"), of: "title", for: folder5)
        s.save()
        #expect(summary(try nextTransaction()) == ["update ICFolder p5 title"])

        // Relink: the note and both folders (their to-many `notes`), each once.
        let folderVersion = try s.version("ZICCLOUDSYNCINGOBJECT", 5)
        try s.context.setDestination(folder7, of: "folder", for: note)
        s.save()
        #expect(
            Set(summary(try nextTransaction())) == [
                "update ICNote p11 folder", "update ICFolder p5 notes", "update ICFolder p7 notes"
            ])
        #expect(try s.version("ZICCLOUDSYNCINGOBJECT", 5) == folderVersion + 1, "a to-many-only change bumps Z_OPT")

        // Insert.
        let inserted = try s.insert("ICFolder", values: ["title": .string("New folder")])
        let account = try #require(try s.context.destination(of: "owner", for: folder7))
        try s.context.setDestination(account, of: "owner", for: inserted)
        try s.context.setDestination(account, of: "account", for: inserted)
        s.save()
        let insertion = summary(try nextTransaction())
        #expect(insertion.contains("insert ICFolder \(inserted.key) "))
        #expect(
            insertion.contains {
                $0.hasPrefix("update ICAccount \(account.key) ") && $0.contains("folders")
                    && $0.contains("ownerInverse")
            })

        // Delete.
        let victim = try s.id("ICNote", 16)
        let victimFolder = try #require(try s.context.destination(of: "folder", for: victim))
        try s.context.delete(victim)
        let outcome = s.save()
        let deletion = summary(try nextTransaction())
        #expect(deletion.contains("delete ICNote p16 "))
        #expect(deletion.contains { $0.hasPrefix("update ICFolder \(victimFolder.key) ") && $0.contains("notes") })
        #expect(deletion.count == outcome.saved.count, "one change per object the save wrote: \(deletion)")

        // Keys and strings as Core Data keeps them.
        for (zent, table) in [("16001", "ACHANGE"), ("16002", "ATRANSACTION"), ("16003", "ATRANSACTIONSTRING")] {
            let max = Int(try s.value("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = \(zent)")) ?? -1
            let top = Int(try s.value("SELECT MAX(Z_PK) FROM \(table)")) ?? Int.max
            #expect(max >= top, "\(table): Z_MAX \(max), largest key \(top)")
        }
        #expect(try s.value("SELECT COUNT(*) FROM ATRANSACTIONSTRING WHERE ZNAME = 'storefs'") == "1", "interned once")
        #expect(try s.value("SELECT COUNT(*) FROM ATRANSACTION WHERE Z_OPT IS NOT NULL OR ZAUTHOR IS NOT NULL") == "0")
        #expect(try s.integrityCheck() == ["ok"])
    }

    /// SwiftData's store and a Photos library: inserts, updates and deletes with tombstones.
    @Test func swiftDataAndPhotosEditsAreReadBackAsMade() throws {
        let swift = try CorpusStore(Self.swiftData)
        var last = try swift.lastTransaction()
        let item9 = try swift.id("Item", 9)
        try swift.context.setValue(.string("Plank"), of: "name", for: item9)
        let item = try swift.insert("Item", values: ["name": .string("Nail")])
        swift.save()
        var changes = try swift.store.persistentHistory(after: last).flatMap(\.changes)
        #expect(changes.map(\.kind) == [.insert, .update])
        #expect(changes.first?.objectID == item)
        #expect(changes.last?.updatedProperties == ["name"])
        last = try swift.lastTransaction()

        let photos = try CorpusStore(Self.photos)
        last = try photos.lastTransaction()
        let resource = try photos.id("InternalResource", 1)
        let asset = try #require(try photos.context.destination(of: "asset", for: resource))
        try photos.context.delete(resource)
        photos.save()
        changes = try photos.store.persistentHistory(after: last).flatMap(\.changes)
        let deleted = try #require(changes.first { $0.kind == .delete })
        #expect(deleted.objectID == resource)
        #expect(Set(deleted.tombstone.keys) == ["cloudDeleteAssetUUIDWithResourceType", "cloudDeleteState"])
        #expect(deleted.tombstone["cloudDeleteState"] == .some(.integer(0)))
        #expect(
            changes.contains {
                $0.objectID == asset && $0.kind == .update && $0.updatedProperties == ["modernResources"]
            })
        #expect(
            try photos.value("SELECT quote(ZTOMBSTONE1) FROM ACHANGE WHERE ZCHANGETYPE = 2 ORDER BY Z_PK DESC LIMIT 1")
                == "0")
    }

    /// Stores without history, or whose app turned tracking off (tables emptied), get none.
    @Test func storesWithoutTrackedHistoryGetNone() throws {
        let plain = try CorpusStore("alemar11_CoreDataPlus_SampleModel_V1.sqlite")
        let person = try #require(try plain.context.objectIDs(of: try plain.entity("Person")).first)
        try plain.context.setValue(.string("Renamed"), of: "firstName", for: person)
        plain.save()
        #expect(
            try plain.value("SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'A%'") == "0", "no history tables made")

        let emptied = try CorpusStore(Self.notes14) { url in
            try Fixtures.sqlite3Write(url, "DELETE FROM ACHANGE; DELETE FROM ATRANSACTION;")
        }
        try emptied.context.setValue(.string("Renamed"), of: "title", for: try emptied.id("ICFolder", 5))
        emptied.save()
        #expect(try emptied.value("SELECT COUNT(*) FROM ATRANSACTION") == "0")
        #expect(try emptied.value("SELECT COUNT(*) FROM ACHANGE") == "0")
        #expect(try emptied.value("SELECT ZTITLE2 FROM ZICCLOUDSYNCINGOBJECT WHERE Z_PK = 5") == "Renamed")
    }

    /// History needs the app's model: a store that keeps history but holds no model is refused
    /// for writing (the message says --model); read-only opens work.
    @Test func historyWithoutTheAppsModelIsRefusedForWriting() throws {
        let url = try Fixtures.corpusCopy(Self.swiftData)
        try Fixtures.sqlite3Write(url, "DELETE FROM Z_MODELCACHE;")
        #expect {
            _ = try PersistentStoreCoordinator.open(at: url, types: [SQLiteStoreType()])
        } throws: { error in
            (error as? ObjectGraphError)?.code == .unsupported && "\(error)".contains("--model")
                && "\(error)".contains("-o ro")
        }
        let readOnly = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        readOnly.close()
    }

    /// History rows with values of the wrong kind (a damaged or hostile file) are read by storage
    /// class: opening the store for writing, saving and reading the history back never trap in a
    /// typed read (they did: `row[i] as Int64?` on text).
    @Test func damagedHistoryValuesAreReadWithoutATrap() throws {
        let notes = try CorpusStore(Self.notes14) { url in
            try Fixtures.sqlite3Write(
                url,
                """
                UPDATE ACHANGE SET ZENTITY = 'abc' WHERE Z_PK IN (SELECT Z_PK FROM ACHANGE ORDER BY Z_PK DESC LIMIT 3);
                UPDATE ACHANGE SET ZCOLUMNS = 42 WHERE Z_PK = (SELECT MIN(Z_PK) FROM ACHANGE WHERE ZCHANGETYPE = 1);
                UPDATE ATRANSACTION SET ZTIMESTAMP = 'yesterday' WHERE Z_PK = (SELECT MIN(Z_PK) FROM ATRANSACTION);
                UPDATE ATRANSACTIONSTRING SET ZNAME = x'ff00' WHERE Z_PK = (SELECT MIN(Z_PK) FROM ATRANSACTIONSTRING);
                UPDATE Z_PRIMARYKEY SET Z_MAX = 'many' WHERE Z_NAME = 'CHANGE';
                """)
        }
        let before = try notes.store.persistentHistory()
        #expect(before.count == 51, "every transaction is still read")
        #expect(
            before.first?.timestamp == Date(timeIntervalSinceReferenceDate: 0),
            "a timestamp that is not a number reads as 0")
        let folder = try notes.entity("ICFolder")
        let id = try #require(try notes.context.objectIDs(of: folder).first)
        try notes.context.setValue(.string("renamed by storefs"), of: "title", for: id)
        let outcome = notes.context.save(holding: [])
        #expect(outcome.failed.isEmpty && outcome.storeError == nil, "\(outcome)")
        let after = try notes.store.persistentHistory()
        #expect(after.count == 52, "the save appended one transaction")
        #expect(after.last?.changes.contains { $0.objectID == id && $0.kind == .update } == true)
    }
}
