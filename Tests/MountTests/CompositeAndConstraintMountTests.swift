import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Composite attributes and uniqueness constraints through the kernel with the real tools: the
/// issue's reproduction on the corpus's Photos library, and editors on a SwiftData store's
/// composite folder.
@Suite(.serialized) struct CompositeAndConstraintMountTests {
    static let cocktails = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/swiftdata/MatthewHunt84_MetaCocktailsSwiftData_PreloadedCocktails.store")
        .standardizedFileURL

    static func sqlite(_ store: URL, _ sql: String) throws -> String {
        let result = try run("sqlite3", ["-batch", store.path, sql])
        guard result.status == 0 else { throw HarnessError("sqlite3: \(result.error)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `ln -sfn ../../Asset/p6 InternalResource/p2/asset` would break Photos' UNIQUE index: EEXIST
    /// at ln, the reason on the object, and the unrelated `rm -r` of the same commit is saved;
    /// unmount exits 0.
    @Test func aLinkThatBreaksPhotosUniqueIndexIsRefusedAtLn() throws {
        let mount = try MountedStore(copying: Corpus.url("sqlite/RhetTbull_merge_photos_libraries_Photos.sqlite"))
        defer { try? mount.unmount() }
        let ln = try sh("ln -sfn ../../Asset/p6 \(mount.path)/InternalResource/p2/asset")
        #expect(ln.status != 0 && ln.error.contains("File exists"), "\(ln.error)")
        #expect(try sh("readlink \(mount.path)/InternalResource/p2/asset").output == "../../Asset/p1\n")
        let reason = try sh("getfattr --only-values -n user.storefs.error \(mount.path)/InternalResource/p2")
        #expect(reason.output.contains("InternalResource/p18"), "\(reason.output)")
        #expect(try sh("rm -r \(mount.path)/AssetDescription/p2").status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)")
        #expect(try Self.sqlite(mount.store, "SELECT ZASSET FROM ZINTERNALRESOURCE WHERE Z_PK = 2") == "1")
        #expect(try Self.sqlite(mount.store, "SELECT count(*) FROM ZASSETDESCRIPTION WHERE Z_PK = 2") == "0")
        #expect(mount.recoveryFiles.isEmpty)
    }

    /// vim and sed -i on an element's file, rm -r of a composite and its mkdir again, a query by
    /// key path: each reads back in the store as SwiftData wrote it.
    @Test func editorsAndToolsOnACompositeFolder() throws {
        let mount = try MountedStore(copying: Self.cocktails)
        defer { try? mount.unmount() }
        let p = mount.path + "/Cocktail"
        #expect(try sh("ls \(p)/p1/author").output == "id\nperson\nplace\n")
        let vim = try run(
            "timeout", ["30", "vim", "-e", "-s", "-c", "%s/Kenny/Kenneth/", "-c", "wq", "\(p)/p1/author/person"])
        #expect(vim.status == 0, "\(vim.error)")
        #expect(try sh("sed -i 's/Denver/Boulder/' \(p)/p1/author/place").status == 0)
        #expect(try sh("rm -r \(p)/p3/author").status == 0)
        #expect(try sh("mkdir \(p)/p4/variation 2>/dev/null; echo 'Stirred' > \(p)/p4/variation/variation").status == 0)
        #expect(try sh("echo '[\"Lime\"]' > \(p)/p1/compiledTags/flavors").status == 0)
        #expect(try sh("echo 'not json' > \(p)/p1/compiledTags/booze").status != 0)
        let query = try sh("cat '\(mount.path)/.query/Cocktail/author.place ENDSWITH \"Boulder\"/.count'")
        #expect(query.output == "1\n", "\(query.output)\(query.error)")
        try mount.unmount()
        let first = try Self.sqlite(
            mount.store,
            "SELECT ZPERSON || '|' || ZPLACE || '|' || CAST(ZFLAVORS AS TEXT) FROM ZCOCKTAIL WHERE Z_PK = 1")
        #expect(first == #"Kenneth Remster|Williams and Graham, Boulder|["Lime"]"#)
        #expect(
            try Self.sqlite(mount.store, "SELECT quote(ZPERSON) || quote(ZID) FROM ZCOCKTAIL WHERE Z_PK = 3")
                == "NULLNULL")
        #expect(try Self.sqlite(mount.store, "SELECT ZVARIATION FROM ZCOCKTAIL WHERE Z_PK = 4") == "Stirred")
    }

    /// `storefs migrate` carries composites: the new SQLite store has their columns (ZID for
    /// `author.id`, ZID1 for `id`), the `#Index` and `#Unique` indexes, and the recorded hashes;
    /// through an XML store and back, every element's value is the same.
    @Test func migrationKeepsCompositesIndexesAndConstraints() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "composites-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("Cocktails.store")
        try FileManager.default.copyItem(at: Self.cocktails, to: source)
        let binary = try storefsBinary()
        let xml = folder.appendingPathComponent("Cocktails.xml")
        let back = folder.appendingPathComponent("Back.sqlite")
        for (from, to) in [(source, xml), (xml, back)] {
            let result = try run(binary, ["migrate", from.path, to.path])
            #expect(result.status == 0, "\(result.error)")
        }
        let hashes = try run(binary, ["model", "--hashes", back.path])
        #expect(hashes.output.contains("all 4 entities have the store's recorded hash"), "\(hashes.output)")
        let indexes = try Self.sqlite(
            back, "SELECT group_concat(name, ' ') FROM sqlite_master WHERE tbl_name = 'ZCOCKTAIL' AND type = 'index'")
        #expect(
            indexes.contains("Z_Cocktail_UNIQUE_cocktailName")
                && indexes.contains("Z_Cocktail_SwiftDataIndexOnBinarycocktailName"))
        // Export and diff carry the elements under their key paths.
        let export = try run(binary, ["export", back.path, "--entity", "Cocktail"])
        #expect(export.status == 0 && export.output.contains(#""author.person":"Kenny Remster""#))
        let diff = try run(binary, ["diff", source.path, back.path])
        #expect(diff.status == 0, "no difference: \(diff.output.prefix(500))")
        let sql =
            "SELECT group_concat(Z_PK || ZPERSON || hex(ZID) || hex(ZID1) || CAST(ZFLAVORS AS TEXT), ',') FROM (SELECT * FROM ZCOCKTAIL ORDER BY Z_PK)"
        #expect(try Self.sqlite(back, sql) == (try Self.sqlite(source, sql)))
    }
}
