import Foundation
import TestSupport
import Testing

/// A real Photos library whose asset breaks its own model (Photos leaves mandatory attributes of
/// real assets nil; here `curationScore`, set to NULL by SQL on a copy of the corpus library):
/// an edit of another attribute is saved, through the kernel and the shell's tools, the unmount
/// saves everything (exit 0, no recovery file) and leaves no -wal or -shm beside the library.
@Suite struct PhotosEditTests {
    static let library = "RhetTbull_merge_photos_libraries_Photos.sqlite"

    @Test func anAssetWhoseOtherValuesBreakTheModelIsEditable() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let binary = try storefsBinary()
        let sqlite3 = try tool("sqlite3", package: "sqlite3")
        let store = try ExportCommandTests.corpusCopy(Self.library, into: scratch)
        let nulled = try run(sqlite3, [store, "UPDATE ZGENERICASSET SET ZCURATIONSCORE = NULL WHERE Z_PK = 3"])
        #expect(nulled.succeeded, "\(nulled.errorOutput)")
        let before = try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted()
        let mounted = try run(binary, ["mount", store, scratch.mountPoint, "--log-file", scratch.path + "/log"])
        #expect(mounted.succeeded, "\(mounted.errorOutput)")
        let asset = scratch.mountPoint + "/Asset/p3"
        #expect(try run("cat", [asset + "/favorite"]).output == "true\n")
        #expect(!FileManager.default.fileExists(atPath: asset + "/curationScore"), "nil: no file")
        #expect(try shell("echo false > \(quoted(asset + "/favorite"))").succeeded, "the write is taken")
        let synced = try run("sync", [asset + "/favorite"])
        #expect(synced.succeeded, "fsync: \(synced.errorOutput)")
        #expect(try run("cat", [asset + "/favorite"]).output == "false\n")
        let unmounted = try run(binary, ["unmount", scratch.mountPoint])
        #expect(unmounted.status == 0, "everything was saved: \(unmounted.errorOutput)")
        let log = try String(contentsOfFile: scratch.path + "/log", encoding: .utf8)
        #expect(log.contains("curationScore"), "the log warns of the value the edit did not touch")
        #expect(try run(sqlite3, [store, "SELECT ZFAVORITE FROM ZGENERICASSET WHERE Z_PK = 3"]).output == "0\n")
        let after = try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0 != "log" }.sorted()
        #expect(!after.contains { $0.contains("recovery") }, "no recovery file: \(after)")
        #expect(!after.contains(Self.library + "-shm"), "no -shm beside the library: \(after)")
        #expect(after.filter { $0.hasSuffix("-wal") }.allSatisfy { before.contains($0) }, "\(before) → \(after)")
    }
}
