import Foundation
import ObjectGraph
import TestSupport
import Testing

/// A store file changes only by a commit: opening it, failing to mount it, and mounting it
/// without edits leave it byte-identical, in its journal mode, with nothing left beside it.
@Suite(.serialized) struct StoreFileTests {
    func checksum(_ path: String) throws -> String {
        String(try run("sha256sum", [path]).output.prefix(64))
    }

    func sidecars(of store: URL) -> [String] {
        ["-wal", "-shm", "-journal"].filter { FileManager.default.fileExists(atPath: store.path + $0) }
    }

    /// The journal mode bytes of the header: 1 rollback journal, 2 WAL.
    func journalMode(_ store: URL) throws -> [UInt8] {
        Array(try Data(contentsOf: store)[18..<20])
    }

    @Test func aRollbackJournalStoreReadThroughAReadWriteMountStaysByteIdentical() throws {
        let mount = try MountedStore(
            copying: Corpus.url("sqlite/magicalpanda_MagicalRecord_Recipes.sqlite"), mount: false)
        let before = try checksum(mount.store.path)
        #expect(try journalMode(mount.store) == [1, 1])
        try mount.mount()
        let walk = try sh(
            "find \(mount.path) -type f -print0 | xargs -0 cat > /dev/null; ls -lR \(mount.path) > /dev/null")
        #expect(walk.status == 0, "\(walk.error)")
        try mount.unmount()
        #expect(try checksum(mount.store.path) == before, "byte-identical after a read-write mount with no edits")
        #expect(sidecars(of: mount.store).isEmpty, "nothing left beside it: \(sidecars(of: mount.store))")
    }

    @Test func anEditKeepsTheStoresJournalModeAndLeavesNoWAL() throws {
        let mount = try MountedStore(copying: Corpus.url("sqlite/magicalpanda_MagicalRecord_Recipes.sqlite"))
        #expect(try sh("echo 'Chocolate Torte' > \(mount.path)/Recipe/p1/name").status == 0)
        try mount.unmount()
        #expect(try journalMode(mount.store) == [1, 1], "still a rollback-journal store")
        #expect(sidecars(of: mount.store).isEmpty, "\(sidecars(of: mount.store))")
        #expect(
            try run("sqlite3", [mount.store.path, "select ZNAME from ZRECIPE where Z_PK = 1"]).output
                == "Chocolate Torte\n")
        #expect(try run("sqlite3", [mount.store.path, "pragma integrity_check"]).output == "ok\n")
    }

    @Test func aWALStoreWithPendingWALContentIsNotCheckpointedByAMountWithoutEdits() throws {
        let mount = try MountedStore(
            copying: Corpus.url("sqlite/wibosco_CoreDataMigration-Example_CoreDataMigration_Example_WAL.sqlite"),
            mount: false)
        let main = try checksum(mount.store.path)
        let wal = try checksum(mount.store.path + "-wal")
        try mount.mount()
        #expect(try sh("find \(mount.path) -type f -print0 | xargs -0 cat > /dev/null").status == 0)
        try mount.unmount()
        #expect(try checksum(mount.store.path) == main, "the main file is as it was")
        #expect(try checksum(mount.store.path + "-wal") == wal, "and so is its WAL, still holding what it held")
    }

    @Test func mountsThatFailLeaveTheStoreAsItWas() throws {
        let mount = try MountedStore(objects: 300, mount: false)
        // A store in rollback-journal mode, as many apps leave them.
        #expect(try run("sqlite3", [mount.store.path, "pragma journal_mode = delete"]).output == "delete\n")
        let before = try checksum(mount.store.path)
        #expect(throws: HarnessError.self) { try mount.mount(options: ["bogusopt"]) }
        #expect(try checksum(mount.store.path) == before, "an unknown option")
        let truncated = mount.directory.appendingPathComponent("Truncated.sqlite")
        let bytes = try Data(contentsOf: mount.store)
        try bytes.prefix(bytes.count / 2).write(to: truncated)
        let truncatedBefore = try checksum(truncated.path)
        let result = try run(try storefsBinary(), ["mount", truncated.path, mount.mountPoint.path])
        #expect(result.status != 0 && result.error.contains("truncated"), "\(result.error)")
        #expect(try checksum(truncated.path) == truncatedBefore, "a truncated store")
        #expect(sidecars(of: mount.store).isEmpty && sidecars(of: truncated).isEmpty)
    }

    @Test func aWALStoreInAFolderTheUserCannotWriteIsReadWithItsWAL() throws {
        // The main file alone holds no posts; all 84 are in its -wal. A user who cannot write the
        // folder cannot make the -shm file SQLite needs, so storefs reads a private copy.
        // Under /tmp itself, which every user may enter (the tests' own temporary folder may not be).
        let shared = URL(fileURLWithPath: "/tmp")
        let folder = shared.appendingPathComponent("storefs-walreadonly-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let name = "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_WAL.sqlite"
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(
                at: Corpus.url("sqlite/\(name)\(suffix)"), to: folder.appendingPathComponent(name + suffix))
            try FileManager.default.setAttributes(
                [.posixPermissions: 0o644], ofItemAtPath: folder.appendingPathComponent(name + suffix).path)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        let store = folder.appendingPathComponent(name).path
        let before = try checksum(store)
        // The binary is copied beside it: the build folder may lie where that user cannot go. `cp`
        // copies it, not this process: a file this process held open for writing could be
        // inherited by a child another test forks meanwhile, and exec then fails with ETXTBSY.
        let binary = folder.appendingPathComponent("storefs")
        let copied = try run("cp", [try storefsBinary(), binary.path])
        #expect(copied.status == 0, "\(copied.error)")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary.path)
        let result = try run(
            "setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", binary.path, "info", "--json", store],
            environment: ["TMPDIR": "/tmp"])
        #expect(result.status == 0, "\(result.error)")
        let info = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        let counts = info?["entities"] as? [String: Any] ?? [:]
        #expect((counts["Post"] as? Int) == 84, "the WAL's posts are read: \(result.output.prefix(400))")
        #expect(try checksum(store) == before)
        #expect(sidecars(of: URL(fileURLWithPath: store)) == ["-wal"], "nothing made beside it")
        let contents = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(contents == [name, name + "-wal", "storefs"].sorted(), "\(contents)")
    }
}
