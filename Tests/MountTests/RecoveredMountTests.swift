import Foundation
import TestSupport
import Testing

/// The corpus's real Notes store (macOS 14) with two notes deleted as the app deletes them (the
/// note's row and its body's, each in a transaction of its own, secure_delete off, the WAL kept),
/// in a read-only folder, mounted as evidence and read-only through the kernel: `ls
/// MNT/.recovered/ICNote` shows the deleted notes, `cat` their titles, `.wal` the store before
/// and after each deletion; the folder is byte for byte as it was afterwards.
@Suite(.serialized) struct RecoveredMountTests {
    static let store = "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"
    static let deleted = ["This note is in a folder", "This note has special formatting"]

    /// The Notes store with ``deleted`` gone, in a new folder: the store and its -wal.
    static func notesWithDeletions(in work: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let store = work.appendingPathComponent("NoteStore.sqlite")
        try FileManager.default.copyItem(at: Corpus.url("sqlite/" + Self.store), to: store)
        var commands = [".dbconfig no_ckpt_on_close on", "PRAGMA secure_delete = OFF"]
        for title in deleted {
            let key = "(SELECT Z_PK FROM ZICCLOUDSYNCINGOBJECT WHERE Z_ENT = 11 AND ZTITLE1 = '\(title)')"
            commands.append(
                "BEGIN; DELETE FROM ZICNOTEDATA WHERE ZNOTE = \(key); DELETE FROM ZICCLOUDSYNCINGOBJECT WHERE Z_PK = \(key); COMMIT;"
            )
        }
        let result = try run("timeout", ["60", "sqlite3", store.path] + commands)
        guard result.status == 0 else { throw HarnessError("sqlite3: \(result.error)") }
        try? FileManager.default.removeItem(atPath: store.path + "-shm")
        return [store, URL(fileURLWithPath: store.path + "-wal")]
    }

    @Test(arguments: ["evidence", "ro"])
    func deletedNotesAreRecoveredWithTheirTitles(options: String) throws {
        try requireFuse()
        let harness = EvidenceTests()
        let work = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "storefs-recovered-src-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: work) }
        let folder = try EvidenceTests.ReadOnlyFolder(copying: try Self.notesWithDeletions(in: work))
        let store = folder.bound.appendingPathComponent("NoteStore.sqlite").path
        let mnt = folder.root.appendingPathComponent("mnt")
        let log = folder.root.appendingPathComponent("storefs.log")
        let before = try folder.state()
        try harness.mount(store, on: mnt, options: options, log: log)
        var mounted = true
        defer { if mounted { _ = try? harness.unmount(mnt) } }
        let m = mnt.path

        let names = try harness.shell("ls '\(m)/.recovered/ICNote'").lines.filter { !$0.isEmpty }
        #expect(!names.isEmpty, "ls .recovered/ICNote: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        let titles = try harness.shell("cat '\(m)/.recovered/ICNote'/*/title").lines
        for title in Self.deleted { #expect(titles.contains(title), "\(title) among \(titles)") }
        let keyed = names.filter { $0.hasPrefix("p") }
        #expect(keyed.count >= 2, "the deleted notes' keys survive in the pages the WAL replaced: \(names)")
        for name in keyed {
            let live = try harness.shell(
                "getfattr --only-values -n user.recovered.live '\(m)/.recovered/ICNote/\(name)'")
            let source = try harness.shell(
                "getfattr --only-values -n user.recovered.source '\(m)/.recovered/ICNote/\(name)'")
            #expect(["deleted", "differs"].contains(live.output), "\(name): \(live.output)")
            #expect(source.output.contains("page"), "\(name): \(source.output)")
        }
        // The store before the first deletion, and after both.
        let versions = try harness.shell("ls '\(m)/.wal'").lines.filter { !$0.isEmpty }
        #expect(versions.first == "c0" && versions.count >= 3, "\(versions)")
        let first = try harness.shell("cat '\(m)/.wal/c0/ICNote'/*/title").lines
        let last = try harness.shell("cat '\(m)/.wal/\(versions.last ?? "c0")/ICNote'/*/title").lines
        for title in Self.deleted {
            #expect(first.contains(title))
            #expect(!last.contains(title))
        }
        #expect(try harness.shell("ls '\(m)/.timeline'").lines.contains("2025"))
        #expect(try harness.shell("touch '\(m)/.recovered/ICNote/\(names[0])/title'").status != 0, "read-only")

        #expect(try harness.unmount(mnt).status == 0)
        mounted = false
        #expect(try folder.state() == before, "the evidence is byte for byte as it was")
    }
}
