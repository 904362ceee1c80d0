import Foundation
import TestSupport
import Testing

/// `storefs history`: a real app's history as `sqlite3` reads the same rows, what edits through a
/// mount add to it, and a clear error for stores that keep none.
@Suite struct HistoryCommandTests {
    static func corpus(_ name: String) -> URL { Corpus.url("sqlite/\(name)") }

    /// `storefs history ARGUMENTS`, bounded in time.
    static func history(_ arguments: [String]) throws -> ToolResult {
        try run("timeout", ["120", try storefsBinary(), "history"] + arguments)
    }

    static func sqlite(_ store: URL, _ query: String) throws -> [String] {
        try run("timeout", ["60", "sqlite3", "-batch", "-readonly", store.path, query]).lines
    }

    /// SwiftData's store: every transaction once, in order, with its changes by type; JSON Lines
    /// that parse, with object URIs of the store's UUID; `--since` leaves out what came before.
    @Test func printsAnAppsHistoryAsSQLiteHoldsIt() throws {
        let scratch = try ScratchSpace.folder("history")
        let store = scratch.appendingPathComponent("default.store")
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(
                atPath: Self.corpus("sergd2005_ResourcesManager_default.store").path + suffix,
                toPath: store.path + suffix)
        }
        let json = try Self.history(["--json", store.path])
        #expect(json.status == 0, "\(json.error)")
        var read: [String] = []
        for line in json.lines {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            let changes = try #require(object["changes"] as? [[String: Any]])
            let types = changes.compactMap { $0["type"] as? String }
            read.append(
                "\(object["transaction"] as? Int ?? -1)|\(types.filter { $0 == "inserted" }.count)|\(types.filter { $0 == "updated" }.count)|\(types.filter { $0 == "deleted" }.count)"
            )
            #expect(
                object["bundleID"] as? String == "com.sdsoftware.ResourcesManager"
                    && object["processID"] as? String == "ResourcesManager")
            #expect(
                changes.allSatisfy {
                    ($0["uri"] as? String)?.hasPrefix("x-coredata://") == true
                        && ($0["object"] as? String)?.contains("/p") == true
                })
        }
        let expected = try Self.sqlite(
            store,
            """
            SELECT t.Z_PK || '|' || IFNULL(SUM(c.ZCHANGETYPE = 0), 0) || '|' || IFNULL(SUM(c.ZCHANGETYPE = 1), 0) || '|'
                || IFNULL(SUM(c.ZCHANGETYPE = 2), 0)
            FROM ATRANSACTION t LEFT JOIN ACHANGE c ON c.ZTRANSACTIONID = t.Z_PK GROUP BY t.Z_PK ORDER BY t.Z_PK
            """)
        #expect(read.count == 38 && read == expected)
        let info = try run(try storefsBinary(), ["info", "--json", store.path]).output
        let uuid = try #require(
            (try JSONSerialization.jsonObject(with: Data(info.utf8)) as? [String: Any])?["uuid"] as? String)
        #expect(json.output.contains("\"x-coredata://\(uuid)/Item/p9\""))

        let text = try Self.history([store.path])
        #expect(text.status == 0)
        #expect(text.lines.filter { $0.hasPrefix("t") }.count == 38)
        #expect(
            text.lines.filter { $0.hasPrefix("  ") }.count
                == Int(try Self.sqlite(store, "SELECT COUNT(*) FROM ACHANGE").first ?? ""))
        #expect(text.lines.contains("  updated Item/p9 name"), "\(text.output.prefix(600))")
        let since = try Self.history(["--since", "30", store.path])
        #expect(
            since.lines.filter { $0.hasPrefix("t") }.map { String($0.prefix { $0 != " " }) }
                == (31...38).map { "t\($0)" })
        #expect(try Self.history(["--since", "38", store.path]).output == "")
    }

    /// Edits through a mount of a Notes store are one or more transactions by storefs after the
    /// app's, listing the folder renamed and the note deleted.
    @Test func showsWhatEditsThroughAMountAdded() throws {
        let mount = try MountedStore(
            copying: Self.corpus("RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"), mount: false)
        defer { try? mount.unmount() }
        let last = try #require(Self.sqlite(mount.store, "SELECT MAX(Z_PK) FROM ATRANSACTION").first)
        try mount.mount()
        #expect(try sh("printf 'Renamed\\n' > \(mount.path)/ICFolder/p5/title").status == 0)
        #expect(try run("rm", ["-r", "\(mount.path)/ICNote/p16"]).status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)")

        let text = try Self.history(["--since", last, mount.store.path])
        #expect(text.status == 0, "\(text.error)")
        let headers = text.lines.filter { $0.hasPrefix("t") }
        #expect(
            !headers.isEmpty
                && headers.allSatisfy { $0.hasSuffix(#"author="storefs" bundleID="storefs" processID="storefs""#) },
            "\(headers)")
        #expect(text.lines.contains("  updated ICFolder/p5 title"), "\(text.output)")
        #expect(text.lines.contains { $0.hasPrefix("  deleted ICNote/p16") }, "\(text.output)")
        let json = try Self.history(["--json", "--since", last, mount.store.path])
        #expect(json.lines.count == headers.count)
        #expect(json.output.contains(#""changed":["title"],"object":"ICFolder/p5","type":"updated""#), "\(json.output)")
    }

    /// Stores that keep no history: a SQLite store whose app does not track it, an XML store.
    @Test(arguments: ["sqlite", "xml"])
    func storesWithoutHistoryAreAnError(suffix: String) throws {
        let scratch = try ScratchSpace.folder("history")
        let store = scratch.appendingPathComponent("Company.\(suffix)").path
        #expect(try run(try storefsBinary(), ["sample", "--objects", "100", store]).status == 0)
        let result = try Self.history([store])
        #expect(result.status == 1)
        #expect(result.error.contains("keeps no persistent history"), "\(result.error)")
        #expect(result.output.isEmpty)
    }
}
