import Foundation
import TestSupport
import Testing

/// `MNT/.history`: a real app's persistent history as folders, read with ls, cat, readlink,
/// getfattr and find, against what `sqlite3` reads from the same rows and `storefs history` prints.
/// A commit showing up as a new transaction, and stores without history, are kernel-free in
/// StoreFSTests' RealStoreRenderingTests.
@Suite(.serialized) struct HistoryFolderTests {
    static func sqlite(_ store: URL, _ query: String) throws -> [String] {
        try run("timeout", ["60", "sqlite3", "-batch", "-readonly", store.path, query]).lines
    }

    /// Photos' history (112 transactions, with inserts, updates and deletes): every transaction in
    /// order, every change in its folder, an update's changed properties, a delete's tombstone.
    @Test func photosHistoryReadsAsFolders() throws {
        let mount = try MountedStore(
            copying: Corpus.url("sqlite/RhetTbull_merge_photos_libraries_Photos.sqlite"), options: ["ro"])
        defer { try? mount.unmount() }
        let history = "\(mount.path)/.history"
        // Directory order (ls -U) is the transactions' order.
        let listed = try run("ls", ["-U", history])
        #expect(listed.status == 0, "\(listed.error)")
        let numbers = try Self.sqlite(mount.store, "SELECT Z_PK FROM ATRANSACTION ORDER BY Z_PK")
        #expect(numbers.count == 112 && listed.lines == numbers.map { "t\($0)" })
        #expect(!(try run("ls", ["-a", mount.path]).lines.contains(".history")), "reachable, not listed")

        // Every change, by folder, as ACHANGE holds them (find lists links and tombstone folders).
        let found = try run("find", [history, "-mindepth", "3", "-maxdepth", "3"])
        #expect(found.status == 0, "\(found.error)")
        let counts = try Self.sqlite(mount.store, "SELECT ZCHANGETYPE, COUNT(*) FROM ACHANGE GROUP BY 1 ORDER BY 1")
        for (type, folder) in ["inserted", "updated", "deleted"].enumerated() {
            let inFolder = found.lines.filter { $0.contains("/\(folder)/") }.count
            #expect(counts.contains("\(type)|\(inFolder)"), "\(folder): \(inFolder), sqlite3: \(counts)")
        }
        let links = try run("find", [history, "-type", "l"]).lines
        #expect(links.count == found.lines.filter { !$0.contains("/deleted/") }.count)

        // One update: its link leads to the object, its xattr names what changed.
        let update = try #require(
            Self.sqlite(
                mount.store,
                """
                SELECT c.ZTRANSACTIONID, e.Z_NAME, c.ZENTITYPK FROM ACHANGE c JOIN Z_PRIMARYKEY e ON e.Z_ENT = c.ZENTITY
                WHERE c.ZCHANGETYPE = 1 ORDER BY c.Z_PK LIMIT 1
                """
            ).first?.split(separator: "|").map(String.init))
        let link = "\(history)/t\(update[0])/updated/\(update[1])-p\(update[2])"
        #expect(try run("readlink", [link]).output == "../../../\(update[1])/p\(update[2])\n")
        #expect(try run("test", ["-d", link]).status == 0, "the link leads to the object's folder")
        // The kernel answers no user.* xattr of a symlink: the folder says it per link.
        let changed = try run(
            "getfattr",
            [
                "--only-values", "-n", "user.history.changed.\(update[1])-p\(update[2])",
                "\(history)/t\(update[0])/updated"
            ])
        #expect(changed.status == 0 && !changed.output.isEmpty, "\(changed.error)")
        let text = try run(
            try storefsBinary(), ["history", "--since", String((Int(update[0]) ?? 1) - 1), mount.store.path]
        ).lines
        #expect(
            text.contains("  updated \(update[1])/p\(update[2]) \(changed.output)"),
            "\(changed.output) \(text.prefix(4))")

        // The transaction's fields, as the rows hold them.
        let fields = try Self.sqlite(
            mount.store,
            """
            SELECT IFNULL(s.ZNAME, '-') FROM ATRANSACTION t LEFT JOIN ATRANSACTIONSTRING s ON s.Z_PK = t.ZBUNDLEIDTS
            WHERE t.Z_PK = \(update[0])
            """)
        let bundle = try run("cat", ["\(history)/t\(update[0])/bundleID"])
        #expect(fields == [bundle.status == 0 ? String(bundle.output.dropLast()) : "-"], "\(fields) \(bundle)")
        #expect(try run("cat", ["\(history)/t\(update[0])/timestamp"]).output.hasSuffix("Z\n"))

        // A delete: the values its tombstone keeps, as `storefs history` prints them.
        let deleted = try #require(try run("find", [history, "-path", "*/deleted/*", "-type", "f"]).lines.first)
        let value = try run("cat", [deleted])
        #expect(value.status == 0 && value.output.hasSuffix("\n"))
        let resource = try #require(
            Self.sqlite(
                mount.store,
                """
                SELECT c.ZTRANSACTIONID FROM ACHANGE c JOIN Z_PRIMARYKEY e ON e.Z_ENT = c.ZENTITY
                WHERE e.Z_NAME = 'InternalResource' AND c.ZENTITYPK = 11 AND c.ZCHANGETYPE = 2
                """
            ).first)
        let tombstone = "\(history)/t\(resource)/deleted/InternalResource-p11"
        #expect(try run("ls", [tombstone]).lines == ["cloudDeleteAssetUUIDWithResourceType", "cloudDeleteState"])
        #expect(try run("cat", ["\(tombstone)/cloudDeleteState"]).output == "0\n")
        #expect(
            try run("cat", ["\(tombstone)/cloudDeleteAssetUUIDWithResourceType"]).output
                == "FE291698-3C93-4425-A47A-E19027DBCAA0-@-0\n")
        #expect(try run("touch", [deleted]).status != 0, "read-only")
        #expect(try run("rm", ["-f", link]).status != 0, "read-only")
    }
}
