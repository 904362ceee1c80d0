import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Composite attributes (``CompositeFolder``) on a real SwiftData store and on a model built by
/// hand, checked against what SQL reads from the file.
@Suite struct CompositeFolderTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures").standardizedFileURL
    static let cocktails = fixtures.appendingPathComponent(
        "swiftdata/MatthewHunt84_MetaCocktailsSwiftData_PreloadedCocktails.store")
    static let library = fixtures.appendingPathComponent("composites/Library.xcdatamodel")

    /// Rows of `sql` on `file`, as fields split on `|`.
    static func rows(_ file: URL, _ sql: String) throws -> [[String]] {
        let result = try runTool("sqlite3", ["-batch", "-readonly", file.path, sql], timeout: 60)
        try #require(result.status == 0, "sqlite3: \(result.error)")
        return result.output.split(separator: "\n").map {
            $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        }
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02X", $0) }.joined() }

    /// How a column's value shows in its file.
    enum Form { case text, integer, uuid, bytes }

    /// Every value the MetaCocktails store holds in a column of a composite's element is a file
    /// in the composite's folder, with the value SQL reads (and the entity's own columns beside).
    @Test func everyStoredValueOfTheSwiftDataStoreIsAFile() throws {
        let mount = try KernelMount(copying: Self.cocktails, readOnly: true)
        let k = mount.kernel
        let columns: [(table: String, entity: String, column: String, path: String, form: Form)] = [
            ("ZCOCKTAIL", "Cocktail", "ZPERSON", "author/person", .text),
            ("ZCOCKTAIL", "Cocktail", "ZPLACE", "author/place", .text),
            ("ZCOCKTAIL", "Cocktail", "ZYEAR", "author/year", .text),
            ("ZCOCKTAIL", "Cocktail", "ZID", "author/id", .uuid),
            ("ZCOCKTAIL", "Cocktail", "ZID1", "id", .uuid),
            ("ZCOCKTAIL", "Cocktail", "ZCOCKTAILNAME", "cocktailName", .text),
            ("ZCOCKTAIL", "Cocktail", "ZGLASSWARETYPE", "glasswareType/glasswareType", .text),
            ("ZCOCKTAIL", "Cocktail", "ZALGONQUIN", "historicSpec/algonquin", .text),
            ("ZCOCKTAIL", "Cocktail", "ZMODERNCOCKTAIL", "historicSpec/modernCocktail", .text),
            ("ZCOCKTAIL", "Cocktail", "ZICE", "ice/ice", .text),
            ("ZCOCKTAIL", "Cocktail", "ZVARIATION", "variation/variation", .text),
            ("ZCOCKTAIL", "Cocktail", "ZCOLLECTION", "collection/collection", .integer),
            ("ZCOCKTAIL", "Cocktail", "ZINSTRUCTIONS", "buildOrder/instructions", .bytes),
            ("ZCOCKTAIL", "Cocktail", "ZFLAVORS", "compiledTags/flavors", .bytes),
            ("ZCOCKTAIL", "Cocktail", "ZPROFILES", "compiledTags/profiles", .bytes),
            ("ZCOCKTAIL", "Cocktail", "ZSTYLES", "compiledTags/styles", .bytes),
            ("ZCOCKTAIL", "Cocktail", "ZBOOZE", "compiledTags/booze", .bytes),
            ("ZCOCKTAIL", "Cocktail", "ZNA", "compiledTags/nA", .bytes),
            ("ZINGREDIENT", "Ingredient", "ZUNIT", "unit/unit", .text),
            ("ZINGREDIENTBASE", "IngredientBase", "ZID", "id", .uuid),
            ("ZINGREDIENTBASE", "IngredientBase", "ZID1", "prep/id", .uuid),
            ("ZINGREDIENTBASE", "IngredientBase", "ZPREPINGREDIENTNAME", "prep/prepIngredientName", .text),
            ("ZINGREDIENTBASE", "IngredientBase", "ZPREPRECIPE", "prep/prepRecipe", .bytes),
            ("ZINGREDIENTBASE", "IngredientBase", "ZFLAVORS", "tags/flavors", .bytes),
            ("ZINGREDIENTBASE", "IngredientBase", "ZNA", "tags/nA", .bytes)
        ]
        var checked = 0
        for column in columns {
            let rows = try Self.rows(
                mount.url,
                "SELECT Z_PK, hex(\(column.column)), quote(\(column.column)) FROM \(column.table) WHERE \(column.column) IS NOT NULL"
            )
            #expect(!rows.isEmpty, "\(column.table).\(column.column) has values")
            for row in rows {
                let path = "\(column.entity)/p\(row[0])/\(column.path)"
                let data = try k.read(path)
                switch column.form {
                case .text:
                    #expect(Self.hex(data) == row[1] + "0A", "\(path)")
                case .integer:
                    #expect(String(decoding: data, as: UTF8.self) == row[2] + "\n", "\(path)")
                case .bytes:
                    #expect(Self.hex(data) == row[1], "\(path)")
                case .uuid:
                    let text = String(decoding: data, as: UTF8.self)
                    #expect(text.replacingOccurrences(of: "-", with: "").uppercased() == row[1] + "\n", "\(path)")
                }
                checked += 1
            }
        }
        #expect(checked > 5000, "checked \(checked) values")
        // A composite shows as a folder of its elements; a nil one has none; nil elements have no file.
        let first = try k.list("Cocktail/p1")
        #expect(first.contains("author") && first.contains("compiledTags") && !first.contains("author.person"))
        let nilAuthor = try #require(
            try Self.rows(mount.url, "SELECT Z_PK FROM ZCOCKTAIL WHERE ZID IS NULL LIMIT 1").first)
        #expect(!(try k.list("Cocktail/p\(nilAuthor[0])")).contains("author"))
        #expect(errnoOf { _ = try k.stat("Cocktail/p\(nilAuthor[0])/author") } == ENOENT)
        let noYear = try #require(
            try Self.rows(mount.url, "SELECT Z_PK FROM ZCOCKTAIL WHERE ZPERSON IS NOT NULL AND ZYEAR IS NULL LIMIT 1")
                .first)
        #expect(try k.list("Cocktail/p\(noYear[0])/author").sorted() == ["id", "person", "place"])
        #expect(
            String(decoding: try k.getxattr("Cocktail/p1/author", "user.attribute.type"), as: UTF8.self) == "Composite")
        #expect(mount.finish().isEmpty)
    }

    /// The version hashes storefs computes for the SwiftData store's model, composites included,
    /// are the ones SwiftData recorded.
    @Test func theSwiftDataStoresHashesAreTheRecordedOnes() throws {
        let coordinator = try PersistentStoreCoordinator.open(
            at: Self.cocktails, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        let metadata = try coordinator.newContext().metadata()
        guard case .dictionary(let recorded)? = metadata["NSStoreModelVersionHashes"] else {
            Issue.record("no recorded hashes")
            return
        }
        let computed = VersionHash.entityHashes(of: coordinator.model)
        #expect(recorded.count == 4)
        for (name, value) in recorded {
            guard case .data(let hash) = value else { continue }
            #expect(computed[name] == hash, "\(name)")
        }
        #expect(coordinator.model.entity(named: "Cocktail")?.composites.count == 8)
    }

    /// An element edited through its file is in the store as SwiftData wrote it: its own column,
    /// the other columns untouched; a query reaches elements by key path.
    @Test func anEditedElementReadsBackInItsColumn() throws {
        let mount = try KernelMount(copying: Self.cocktails)
        let k = mount.kernel
        let before = try Self.rows(mount.url, "SELECT hex(ZID), hex(ZID1), ZPLACE FROM ZCOCKTAIL WHERE Z_PK = 1")
        try k.write("Cocktail/p1/author/person", Data("Jane Doe\n".utf8))
        try k.write("Cocktail/p1/compiledTags/flavors", Data(#"["Lime","Mint"]"#.utf8))
        try k.fsync("Cocktail/p1/author/person")
        let after = try Self.rows(
            mount.url,
            "SELECT ZPERSON, hex(ZID), hex(ZID1), ZPLACE, CAST(ZFLAVORS AS TEXT) FROM ZCOCKTAIL WHERE Z_PK = 1")
        #expect(after == [["Jane Doe"] + before[0] + [#"["Lime","Mint"]"#]])
        let kenny = try Self.rows(mount.url, "SELECT count(*) FROM ZCOCKTAIL WHERE ZPERSON = 'Kenny Remster'")[0][0]
        let query = try k.read(#".query/Cocktail/author.person == "Kenny Remster"/.count"#)
        #expect(String(decoding: query, as: UTF8.self) == kenny + "\n")
        // rm -r of the composite: every element nil, the folder gone.
        for name in try k.list("Cocktail/p2/author") { try k.unlink("Cocktail/p2/author/\(name)") }
        try k.rmdir("Cocktail/p2/author")
        try k.fsync("Cocktail/p2/cocktailName")
        #expect(
            try Self.rows(mount.url, "SELECT quote(ZPERSON), quote(ZPLACE), quote(ZID) FROM ZCOCKTAIL WHERE Z_PK = 2")
                == [["NULL", "NULL", "NULL"]])
        #expect(!(try k.list("Cocktail/p2")).contains("author"))
        #expect(mount.finish().isEmpty)
    }

    /// A value that would break `#Unique` is refused at the call, the reason on the object.
    @Test func aDuplicateOfAUniqueValueIsRefusedWhenWritten() throws {
        let mount = try KernelMount(copying: Self.cocktails)
        let k = mount.kernel
        let name = try mount.text("Cocktail/p1/cocktailName")
        let own = try mount.text("Cocktail/p2/cocktailName")
        #expect(errnoOf { try k.write("Cocktail/p2/cocktailName", Data(name.utf8)) } == EEXIST)
        #expect(try mount.text("Cocktail/p2/cocktailName") == own)
        let reason = String(decoding: try k.getxattr("Cocktail/p2", "user.storefs.error"), as: UTF8.self)
        #expect(reason.contains("cocktailName") && reason.contains("Cocktail/p1"))
        try k.write("Cocktail/p2/cocktailName", Data("A Name Nobody Has\n".utf8))
        try k.fsync("Cocktail/p2/cocktailName")
        #expect(
            try Self.rows(mount.url, "SELECT ZCOCKTAILNAME FROM ZCOCKTAIL WHERE Z_PK = 2") == [["A Name Nobody Has"]])
        #expect(mount.finish().isEmpty)
    }

    /// A change the store refuses at commit (another process took the unique value meanwhile) is
    /// taken out of the batch; the other changes of the batch are saved.
    @Test func aChangeRefusedAtCommitDoesNotTakeTheOthersDown() throws {
        let mount = try KernelMount(copying: Self.cocktails)
        let k = mount.kernel
        try k.write("Cocktail/p2/cocktailName", Data("Taken Later\n".utf8))
        try k.write("Garnish/p1/name", Data("Renamed Garnish\n".utf8))
        let other = try runTool(
            "sqlite3", ["-batch", mount.url.path, "UPDATE ZCOCKTAIL SET ZCOCKTAILNAME = 'Taken Later' WHERE Z_PK = 3"],
            timeout: 60)
        #expect(other.status == 0, "\(other.error)")
        #expect(errnoOf { try k.fsync("Cocktail/p2/cocktailName") } != nil, "not saved: the name is taken")
        #expect(try Self.rows(mount.url, "SELECT ZNAME FROM ZGARNISH WHERE Z_PK = 1") == [["Renamed Garnish"]])
        #expect(
            try Self.rows(mount.url, "SELECT count(*) FROM ZCOCKTAIL WHERE ZCOCKTAILNAME = 'Taken Later'") == [["1"]])
        _ = mount.finish()
    }

    /// The model built by hand: a hierarchy in one table, nested and optional composites,
    /// colliding element names; its columns, its folders and its rules.
    @Test func compositesOfAHierarchyNestedAndColliding() throws {
        let model = try XcodeModelLoader.load(from: Self.library)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("composites-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("Library.sqlite")
        let seed = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: model, options: StoreOptions(createIfMissing: true))
        seed.close()
        let columns = try Self.rows(url, "SELECT name FROM pragma_table_info('ZPUBLICATION')").map { $0[0] }
        for column in [
            "ZID", "ZNAME", "ZBORN", "ZID1", "ZTITLE", "ZPAGES", "ZEDITION", "ZNAME1", "ZCITY", "ZTITLE1", "ZDATE"
        ] {
            #expect(columns.contains(column), "\(column) in \(columns)")
        }
        let indexes = try Self.rows(
            url, "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ZPUBLICATION'")
        #expect(indexes.contains { $0[0] == "Z_Publication_byTitle" }, "the fetch index: \(indexes)")
        #expect(indexes.contains { $0[1].hasPrefix("CREATE UNIQUE INDEX") }, "the uniqueness constraint: \(indexes)")
        // The model cache written with the store decodes to the same composites and hashes.
        let reopened = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        #expect(reopened.model.entity(named: "Book")?.allComposites.map(\.name) == ["author", "printing"])
        #expect(VersionHash.entityHashes(of: reopened.model) == VersionHash.entityHashes(of: model))
        reopened.close()

        let mount = try KernelMount(copying: url)
        let k = mount.kernel
        try k.mkdir("Book/p1")
        try k.write("Book/p1/title", Data("Dune\n".utf8))
        try k.write("Book/p1/id", Data("6f1c2a5e-52a4-4f5e-9d7c-0a1b2c3d4e5f\n".utf8))
        try k.mkdir("Book/p1/printing")
        try k.mkdir("Book/p1/printing/press")
        try k.write("Book/p1/printing/press/name", Data("Chilton\n".utf8))
        try k.write("Book/p1/printing/press/city", Data("Philadelphia\n".utf8))
        // An author with a year but no name: its name is required once it has a value. A nil
        // composite has no folder: mkdir makes it, as for any folder a file goes in.
        try k.mkdir("Book/p1/author")
        try k.write("Book/p1/author/born", Data("1920\n".utf8))
        #expect(errnoOf { try k.fsync("Book/p1/author/born") } == EINVAL)
        // Not saved, so taken back (docs/SEMANTICS.md, fsync): written again with the name.
        try k.write("Book/p1/author/name", Data("Frank Herbert\n".utf8))
        try k.write("Book/p1/author/born", Data("1920\n".utf8))
        try k.fsync("Book/p1/author/name")
        #expect(
            try Self.rows(
                mount.url, "SELECT ZTITLE, ZNAME, ZBORN, ZEDITION, ZNAME1, ZCITY FROM ZPUBLICATION WHERE Z_PK = 1")
                == [["Dune", "Frank Herbert", "1920", "1", "Chilton", "Philadelphia"]])
        #expect(try k.list("Book/p1/printing").sorted() == ["edition", "press"])
        #expect(try k.list("Publication").contains("p1"), "the subentity's object in its parent's folder")
        // A required composite's folder stays; an optional one goes with its last element.
        #expect(errnoOf { try k.rmdir("Book/p1/printing") } == ENOTEMPTY)
        try k.unlink("Book/p1/author/born")
        #expect(errnoOf { try k.fsync("Book/p1/author/name") } == nil)
        try k.unlink("Book/p1/author/name")
        try k.rmdir("Book/p1/author")
        try k.fsync("Book/p1/title")
        #expect(
            try Self.rows(mount.url, "SELECT quote(ZNAME), quote(ZBORN) FROM ZPUBLICATION WHERE Z_PK = 1") == [
                ["NULL", "NULL"]
            ])
        // A magazine's issue.title is ZTITLE1, beside the publication's title in ZTITLE.
        try k.mkdir("Magazine/p2")
        try k.write("Magazine/p2/title", Data("Analog\n".utf8))
        try k.write("Magazine/p2/id", Data("00000000-0000-4000-8000-000000000002\n".utf8))
        try k.mkdir("Magazine/p2/issue")
        try k.write("Magazine/p2/issue/title", Data("December 1963\n".utf8))
        try k.fsync("Magazine/p2/issue/title")
        #expect(
            try Self.rows(mount.url, "SELECT ZTITLE, ZTITLE1 FROM ZPUBLICATION WHERE Z_PK = 2") == [
                ["Analog", "December 1963"]
            ])
        #expect(try k.read(#".query/Magazine/issue.title BEGINSWITH "Dec"/.count"#) == Data("1\n".utf8))
        // The uniqueness constraint of the parent holds for its subentities.
        #expect(
            errnoOf { try k.write("Magazine/p2/id", Data("6f1c2a5e-52a4-4f5e-9d7c-0a1b2c3d4e5f\n".utf8)) } == EEXIST)
        let leftovers = mount.finish()
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}
