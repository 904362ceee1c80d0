import Foundation
import GRDB
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Core Data's triggers run on real stores: the derived `Book.pagesCount` of CoreDataPlus's
/// SampleModel2 and the counters and R-tree of a Photos library follow every kind of write, the
/// hooks' reports refresh the objects the triggers changed, and a store whose triggers call a
/// function storefs does not provide is refused for writing when it opens.
@Suite struct CoreDataTriggerTests {
    static let sampleModel2 = "alemar11_CoreDataPlus_SampleModel2_V1.sqlite"
    static let photos = "RhetTbull_merge_photos_libraries_Photos.sqlite"

    /// Books whose stored count is not their number of pages (0 when the trigger kept them all).
    static func wrongCounts(_ s: CorpusStore) throws -> String {
        try s.value(
            "SELECT COUNT(*) FROM ZBOOK WHERE IFNULL(ZPAGESCOUNT, 0) != (SELECT COUNT(*) FROM ZPAGE WHERE ZPAGE.ZBOOK = ZBOOK.Z_PK)"
        )
    }

    @Test func theDerivedCountFollowsEveryKindOfWrite() throws {
        let s = try CorpusStore(Self.sampleModel2)
        #expect(try Self.wrongCounts(s) == "0")
        let book8 = try s.id("Book", 8)
        let book9 = try s.id("Book", 9)
        // Read both books first: their cached snapshots must not be written back over the
        // triggers' counts later (only changed columns are written).
        #expect(try s.context.value(of: "pagesCount", for: book8) == .integer(99))
        #expect(try s.context.value(of: "pagesCount", for: book9) == .integer(99))
        let version8 = try s.version("ZBOOK", 8)
        let content = try #require(try s.context.value(of: "content", for: try s.id("Page", 1)))

        // Insert (mkdir Page/pN, ln -s ../../Book/p8 book).
        let page = try s.insert("Page", values: ["content": content, "number": .integer(100)])
        try s.context.setDestination(book8, of: "book", for: page)
        var outcome = s.save()
        #expect(outcome.storeEffects.refreshed.contains(book8), "the hook reported the book the trigger changed")
        #expect(try s.value("SELECT ZPAGESCOUNT FROM ZBOOK WHERE Z_PK = 8") == "100")
        #expect(
            try s.context.value(of: "pagesCount", for: book8) == .integer(100), "the engine shows the trigger's value")
        #expect(try s.version("ZBOOK", 8) == version8 + 1, "a to-many change bumps Z_OPT")

        // Relink (ln -sfn ../../Book/p9 book): one count down, one up.
        try s.context.setDestination(book9, of: "book", for: page)
        outcome = s.save()
        #expect(outcome.storeEffects.refreshed.isSuperset(of: [book8, book9]))
        #expect(try s.context.value(of: "pagesCount", for: book8) == .integer(99))
        #expect(try s.context.value(of: "pagesCount", for: book9) == .integer(100))

        // Change a string of the book: the count stays the trigger's.
        try s.context.setValue(.string("Renamed book"), of: "title", for: book9)
        s.save()
        #expect(try s.value("SELECT ZTITLE || '|' || ZPAGESCOUNT FROM ZBOOK WHERE Z_PK = 9") == "Renamed book|100")

        // Delete the page (rm -r Page/pN).
        try s.context.delete(page)
        outcome = s.save()
        #expect(outcome.storeEffects.refreshed.contains(book9))
        #expect(try s.context.value(of: "pagesCount", for: book9) == .integer(99))

        // Delete a book with its pages (Cascade): the reports about the deleted book are dropped.
        let book7 = try s.id("Book", 7)
        try s.context.delete(book7)
        outcome = s.save()
        #expect(!outcome.storeEffects.refreshed.contains(book7))
        #expect(try s.value("SELECT COUNT(*) FROM ZPAGE WHERE ZBOOK = 7") == "0")

        // Insert a graphic novel with two pages: the insert trigger counts them.
        let author = try #require(try s.context.destination(of: "author", for: book8))
        let novel = try s.insert(
            "GraphicNovel",
            values: ["title": .string("New novel"), "cover": try #require(try s.context.value(of: "cover", for: book8))]
        )
        try s.context.setDestination(author, of: "author", for: novel)
        for number in 1...2 {
            let p = try s.insert("Page", values: ["content": content, "number": .integer(Int64(number))])
            try s.context.setDestination(novel, of: "book", for: p)
        }
        outcome = s.save()
        #expect(outcome.storeEffects.refreshed.contains(novel))
        #expect(try s.context.value(of: "pagesCount", for: novel) == .integer(2))
        #expect(try s.value("SELECT ZPAGESCOUNT FROM ZBOOK WHERE Z_PK = \(novel.key.rawValue)") == "2")

        #expect(try Self.wrongCounts(s) == "0")
        #expect(try s.integrityCheck() == ["ok"])
        #expect(try s.danglingKeys() == [])
    }

    /// A derived attribute the store's triggers compute cannot be set (EPERM at the mount).
    @Test func aDerivedAttributeIsTheStoresToCompute() throws {
        let s = try CorpusStore(Self.sampleModel2)
        let book = try s.id("Book", 1)
        #expect { try s.context.setValue(.integer(5), of: "pagesCount", for: book) } throws: {
            ($0 as? ObjectGraphError)?.code == .notPermitted && "\($0)".contains("derived")
        }
        #expect(try s.value("SELECT ZPAGESCOUNT FROM ZBOOK WHERE Z_PK = 1") == "99")
    }

    // MARK: - Photos

    /// Counters of a Photos library that disagree with their definitions, read off the
    /// triggers' bodies (0 each when the triggers kept them).
    static func wrongCounters(_ s: CorpusStore) throws -> [String: String] {
        var result: [String: String] = [:]
        result["DetectedFace.assetVisible"] = try s.value(
            """
            SELECT COUNT(*) FROM ZDETECTEDFACE f WHERE IFNULL(f.ZASSETVISIBLE, 0) != (CASE WHEN EXISTS (SELECT 1 FROM ZGENERICASSET a
            WHERE a.Z_PK = f.ZASSET AND a.ZTRASHEDSTATE = 0 AND a.ZVISIBILITYSTATE = 0 AND a.ZHIDDEN = 0) THEN 1 ELSE 0 END)
            """)
        result["Person.faceCount"] = try s.value(
            """
            SELECT COUNT(*) FROM ZPERSON p WHERE IFNULL(p.ZFACECOUNT, 0) != (SELECT COUNT(*) FROM ZDETECTEDFACE f
            WHERE f.ZPERSON = p.Z_PK AND f.ZHIDDEN = 0 AND f.ZASSETVISIBLE = 1)
            """)
        let highlightCounts = [
            ("ZASSETSCOUNT", "ZHIGHLIGHTBEINGASSETS"), ("ZDAYGROUPASSETSCOUNT", "ZDAYGROUPHIGHLIGHTBEINGASSETS"),
            ("ZDAYGROUPEXTENDEDASSETSCOUNT", "ZDAYGROUPHIGHLIGHTBEINGEXTENDEDASSETS"),
            ("ZDAYGROUPSUMMARYASSETSCOUNT", "ZDAYGROUPHIGHLIGHTBEINGSUMMARYASSETS"),
            ("ZEXTENDEDCOUNT", "ZHIGHLIGHTBEINGEXTENDEDASSETS"),
            ("ZSUMMARYCOUNT", "ZHIGHLIGHTBEINGSUMMARYASSETS")
        ]
        for (count, key) in highlightCounts {
            result["PhotosHighlight.\(count)"] = try s.value(
                """
                SELECT COUNT(*) FROM ZPHOTOSHIGHLIGHT h WHERE IFNULL(h.\(count), 0) != (SELECT COUNT(*) FROM ZGENERICASSET a
                WHERE a.\(key) = h.Z_PK AND a.ZHIDDEN = 0 AND a.ZTRASHEDSTATE = 0)
                """)
        }
        result["R-tree"] =
            try s.value("SELECT rtreecheck('Z_RT_GenericAsset_boundedByRect')") == "ok" ? "0" : "rtreecheck fails"
        return result.filter { $0.value != "0" }
    }

    @Test func photosCountersFollowEveryKindOfWrite() throws {
        let s = try CorpusStore(Self.photos)
        #expect(try Self.wrongCounters(s) == [:], "the corpus library agrees before any edit")
        let asset1 = try s.id("Asset", 1)
        let asset4 = try s.id("Asset", 4)

        // Change a string (printf 'renamed.jpg\n' > Asset/p1/filename): only the R-tree trigger runs.
        try s.context.setValue(.string("renamed.jpg"), of: "filename", for: asset1)
        var outcome = s.save()
        #expect(try s.value("SELECT ZFILENAME FROM ZGENERICASSET WHERE Z_PK = 1") == "renamed.jpg")
        #expect(outcome.storeEffects.refreshed.isEmpty)

        // Trash an asset: its face is no longer visible, its person counts one face less, its
        // highlight one asset less, two triggers deep; the hooks name all of them.
        #expect(try s.context.value(of: "faceCount", for: try s.id("Person", 1)) == .integer(1))
        try s.context.setValue(.integer(1), of: "trashedState", for: asset4)
        outcome = s.save()
        let touched = try [s.id("DetectedFace", 1), s.id("Person", 1), s.id("PhotosHighlight", 8)]
        #expect(outcome.storeEffects.refreshed.isSuperset(of: touched), "\(outcome.storeEffects.refreshed)")
        #expect(try s.context.value(of: "faceCount", for: try s.id("Person", 1)) == .integer(0))
        #expect(try s.context.value(of: "assetVisible", for: try s.id("DetectedFace", 1)) == .boolean(false))
        #expect(try Self.wrongCounters(s) == [:])

        // Insert a face on a visible asset with a person (mkdir DetectedFace/pN, ln -s ...).
        let person3 = try s.id("Person", 3)
        let before = try s.value("SELECT ZFACECOUNT FROM ZPERSON WHERE Z_PK = 3")
        let face = try s.insert("DetectedFace")
        try s.context.setDestination(asset1, of: "asset", for: face)
        try s.context.setDestination(person3, of: "person", for: face)
        outcome = s.save()
        #expect(try Self.wrongCounters(s) == [:])
        #expect(try s.value("SELECT ZFACECOUNT FROM ZPERSON WHERE Z_PK = 3") == String((Int(before) ?? 0) + 1))
        #expect(outcome.storeEffects.refreshed.contains(person3))
        #expect(try s.context.value(of: "faceCount", for: person3) == .integer(Int64((Int(before) ?? 0) + 1)))

        // Relink the face to another person (ln -sfn ../../Person/p2 person).
        let person2 = try s.id("Person", 2)
        try s.context.setDestination(person2, of: "person", for: face)
        outcome = s.save()
        #expect(outcome.storeEffects.refreshed.isSuperset(of: [person2, person3]))
        #expect(try Self.wrongCounters(s) == [:])

        // Delete an asset (rm -r Asset/p2) with what its rules reach.
        try s.context.delete(try s.id("Asset", 2))
        s.save()
        #expect(try s.value("SELECT COUNT(*) FROM ZGENERICASSET WHERE Z_PK = 2") == "0")
        #expect(try Self.wrongCounters(s) == [:])
        #expect(try s.integrityCheck() == ["ok"])
        #expect(try s.danglingKeys() == [])
    }

    // MARK: - Functions storefs does not provide

    /// Adds a trigger to a store copy, as another version of Core Data might have written it.
    static func addTrigger(_ sql: String) -> (URL) throws -> Void {
        { url in try Fixtures.sqlite3Write(url, sql) }
    }

    static func fileBytes(_ url: URL) throws -> [Data] {
        ["", "-wal"].map { suffix in
            (try? Data(contentsOf: URL(fileURLWithPath: url.path + suffix))) ?? Data()
        }
    }

    @Test func aStoreWhoseTriggersCallAnUnknownFunctionIsRefusedForWritingOnly() throws {
        let url = try Fixtures.corpusCopy(Self.photos)
        try Self.addTrigger(
            """
            CREATE TRIGGER Z_DA_ZKEYWORD_Keyword_future_INSERT AFTER INSERT ON ZKEYWORD FOR EACH ROW BEGIN
              SELECT NSCoreDataFutureFunction('ZKEYWORD', NEW.Z_PK); END;
            CREATE TRIGGER Z_DA_ZKEYWORD_Keyword_stamp_UPDATE AFTER UPDATE OF ZTITLE ON ZKEYWORD FOR EACH ROW BEGIN
              UPDATE ZKEYWORD SET ZTITLE = NEW.ZTITLE WHERE Z_PK = NEW.Z_PK AND NSCoreDataNow(1) > 0; END;
            """)(url)
        let before = try Self.fileBytes(url)
        #expect {
            _ = try PersistentStoreCoordinator.open(at: url, types: [SQLiteStoreType()])
        } throws: { error in
            let message = "\(error)"
            return (error as? ObjectGraphError)?.code == .unsupported && message.contains("NSCoreDataFutureFunction")
                && message.contains("Z_DA_ZKEYWORD_Keyword_future_INSERT") && message.contains("NSCoreDataNow")
                && message.contains("another number of arguments") && message.contains("-o ro")
        }
        #expect(try Self.fileBytes(url) == before, "the check leaves the store and its -wal as they were")
        let readOnly = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { readOnly.close() }
        let keywords = try readOnly.newContext().objectIDs(of: try #require(readOnly.model.entityID(named: "Asset")))
        #expect(!keywords.isEmpty, "a read-only open reads")
    }

    /// A hook of the family Core Data's triggers call, under a name not seen in the corpus, is
    /// provided with the same five arguments, and its reports refresh the object.
    @Test func aHookOfTheSameFamilyIsProvided() throws {
        let s = try CorpusStore(
            Self.sampleModel2,
            prepare: Self.addTrigger(
                """
                CREATE TRIGGER Z_DA_ZWRITER_Writer_agePlusOne_UPDATE AFTER UPDATE OF ZALIAS ON ZWRITER FOR EACH ROW BEGIN
                  UPDATE ZWRITER SET ZAGE = ZAGE + 1 WHERE Z_PK = NEW.Z_PK;
                  SELECT NSCoreDataDATriggerFutureUpdatedAffectedObjectValue('ZWRITER', Z_ENT, Z_PK, 'age', ZAGE) FROM ZWRITER WHERE Z_PK = NEW.Z_PK;
                END;
                """))
        let author = try s.id("Author", 1)
        #expect(try s.context.value(of: "age", for: author) == .integer(30))
        try s.context.setValue(.string("Andrea B."), of: "alias", for: author)
        let outcome = s.save()
        #expect(outcome.storeEffects.refreshed.contains(author))
        #expect(try s.context.value(of: "age", for: author) == .integer(31))
    }

    /// `NSCoreDataNow()`, the derivation `now()`, gives the time in Core Data's date encoding; the
    /// trigger Core Data writes for it fires on `Z_OPT`, which every update bumps.
    @Test func nowIsCoreDatasDate() throws {
        let s = try CorpusStore(
            Self.sampleModel2,
            prepare: Self.addTrigger(
                """
                CREATE TRIGGER IF NOT EXISTS Z_DA_ZBOOK_Book_publishedAt_UPDATE AFTER UPDATE OF Z_OPT ON ZBOOK FOR EACH ROW BEGIN
                  UPDATE ZBOOK SET ZPUBLISHEDAT = NSCoreDataNow() WHERE Z_PK = NEW.Z_PK;
                  SELECT NSCoreDataDATriggerUpdatedAffectedObjectValue('ZBOOK', Z_ENT, Z_PK, 'publishedAt', ZPUBLISHEDAT) FROM ZBOOK WHERE Z_PK = NEW.Z_PK;
                END;
                """))
        let book = try s.id("Book", 3)
        try s.context.setValue(.string("A new title"), of: "title", for: book)
        let start = Date()
        s.save()
        guard case .date(let stamped)? = try s.context.value(of: "publishedAt", for: book) else {
            Issue.record("no date")
            return
        }
        #expect(abs(stamped.timeIntervalSince(start)) < 5, "\(stamped) is now")
        let stored = Double(try s.value("SELECT ZPUBLISHEDAT FROM ZBOOK WHERE Z_PK = 3")) ?? 0
        #expect(abs(stored - start.timeIntervalSinceReferenceDate) < 5, "seconds since 2001")
    }

    /// A store without triggers: the same kinds of edits, nothing reported.
    @Test func aStoreWithoutTriggersReportsNothing() throws {
        let s = try CorpusStore("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite")
        #expect(try s.value("SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'") == "0")
        let posts = try s.context.objectIDs(of: try s.entity("Post"))
        let post = try #require(posts.first)
        let attribute = try #require(s.model[post.entity].persistentAttributes.first { $0.type == .string })
        try s.context.setValue(.string("changed"), of: attribute.name, for: post)
        let outcome = s.save()
        #expect(outcome.saved.contains(post))
        #expect(outcome.storeEffects.isEmpty)
    }
}
