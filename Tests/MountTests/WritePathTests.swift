import Foundation
import ObjectGraph
import SQLiteStore
@testable import StoreFS
import Testing

/// Editing through the mount with standard tools; every result is checked after unmount, through
/// the engine and with sqlite3 on the file. The mapping's answers to those edits (typed values,
/// removals, delete rules and inverses) are kernel-free in StoreFSTests' WriteMappingTests.
@Suite(.serialized) struct WritePathTests {
    /// The value of `attribute` of `Entity/pKey` in the store file, through a fresh engine.
    func stored(_ mount: MountedStore, _ entity: String, _ key: Int64, _ attribute: String) throws -> AttributeValue? {
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let id = try #require(try context.objectID(forKey: PrimaryKey(key), in: engine.model.entityID(named: entity)!))
        return try context.value(of: attribute, for: id)
    }

    func sqlite(_ mount: MountedStore, _ query: String) throws -> String {
        try run("sqlite3", ["-cmd", ".timeout 5000", mount.store.path, query]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    @Test func eachToolEditsAValue() throws {
        let mount = try MountedStore(objects: 2_000)
        defer { try? mount.unmount() }
        let d = "\(mount.path)/Department"
        // Each edit targets its own department's `name` or `code` (strings) and ends with the value shown.
        let edits: [(String, Int64, String, String)] = [
            ("echo 'Echoed' > \(d)/p1/name", 1, "name", "Echoed"),
            ("printf 'Printed' > \(d)/p2/name", 2, "name", "Printed"),
            ("printf 'Start\\n' > \(d)/p3/name && printf 'More\\n' >> \(d)/p3/name", 3, "name", "Start\nMore"),
            (
                "printf 'ABCDEFG\\n' > \(d)/p4/code && printf 'xy' | dd of=\(d)/p4/code bs=1 seek=2 conv=notrunc status=none",
                4, "code", "ABxyEFG"
            ),
            ("printf 'Truncated away\\n' > \(d)/p5/code && truncate -s 9 \(d)/p5/code", 5, "code", "Truncated"),
            ("echo 'Teed' | tee \(d)/p6/name > /dev/null", 6, "name", "Teed"),
            (
                "printf 'Copied\\n' > \(mount.directory.path)/src && cp \(mount.directory.path)/src \(d)/p7/name", 7,
                "name", "Copied"
            ),
            ("vim -e -s -c '%s/.*/Vimmed/' -c 'wq' \(d)/p8/name", 8, "name", "Vimmed"),
            ("sed -i 's/.*/Sedded/' \(d)/p9/name", 9, "name", "Sedded"),
            ("perl -pi -e 's/.*/Perled/' \(d)/p10/name", 10, "name", "Perled"),
            (
                """
                python3 -c "import os,tempfile; f=tempfile.NamedTemporaryFile('w',dir='\(d)/p11',delete=False); f.write('Pythoned\\n'); f.flush(); os.fsync(f.fileno()); f.close(); os.replace(f.name,'\(d)/p11/name')"
                """, 11, "name", "Pythoned"
            ),
            ("printf 'Moved\\n' > \(d)/p12/scratch.tmp && mv \(d)/p12/scratch.tmp \(d)/p12/name", 12, "name", "Moved"),
            (
                "printf 'Rsynced\\n' > \(mount.directory.path)/name && rsync \(mount.directory.path)/name \(d)/p13/name",
                13, "name", "Rsynced"
            ),
            (
                "printf 'Inplace\\n' > \(mount.directory.path)/name && rsync --inplace \(mount.directory.path)/name \(d)/p14/name",
                14, "name", "Inplace"
            )
        ]
        for (command, _, _, _) in edits {
            let result = try sh(command)
            #expect(result.status == 0, "\(command): \(result.error)\n\(mount.logText.suffix(1500))")
        }
        for (command, key, attribute, value) in edits {
            #expect(
                try run("cat", ["\(d)/p\(key)/\(attribute)"]).output == value + "\n", "through the mount: \(command)")
        }
        #expect(try run("ls", ["\(d)/p12"]).lines.contains("scratch.tmp") == false, "the scratch file became the value")
        try mount.unmount()
        for (command, key, attribute, value) in edits {
            #expect(
                try stored(mount, "Department", key, attribute) == .string(value), "engine after remount: \(command)")
            #expect(
                try sqlite(mount, "select Z\(attribute.uppercased()) from ZDEPARTMENT where Z_PK=\(key)") == value,
                "sqlite3: \(command)")
        }
    }

    @Test func aSecondReadWriteMountIsRefusedWhileReadOnlyMountsSeeTheEdits() throws {
        let first = try MountedStore(objects: 300)
        defer { try? first.unmount() }
        let second = MountedStoreAlias(of: first)
        #expect(throws: HarnessError.self) { try second.mount() }
        #expect(
            second.lastError.contains("is open for writing by another storefs"),
            "the refusal says why: \(second.lastError)")
        #expect(second.lastError.contains("-o ro"), "and what to do instead")
        try second.mount(options: ["ro"])
        defer { try? second.unmount() }
        let a = "\(first.path)/Department/p3/name"
        let b = "\(second.path)/Department/p3/name"
        _ = try run("cat", [b])
        #expect(try sh("echo FromFirst > \(a) && sync").status == 0)
        var seen = ""
        for _ in 0..<60 {
            seen = try run("cat", [b]).output
            if seen == "FromFirst\n" { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(seen == "FromFirst\n", "the read-only mount shows the first mount's edit")
    }

    @Test func anotherProcessesChangeIsNeverRevertedAndAConflictIsReported() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let department = "\(mount.path)/Department/p3"
        _ = try run("cat", ["\(department)/name", "\(department)/code"])
        // Another process changes a column this mount does not edit, without bumping Z_OPT.
        #expect(try sqlite(mount, "update ZDEPARTMENT set ZCODE = 'EXTERNAL' where Z_PK = 3; select changes()") == "1")
        #expect(try sh("echo Mine > \(department)/name").status == 0)
        // Another process changes the same column this mount is about to write.
        _ = try run("cat", ["\(mount.path)/Department/p2/name"])
        #expect(try sqlite(mount, "update ZDEPARTMENT set ZNAME = 'Theirs' where Z_PK = 2; select changes()") == "1")
        let py = """
            import os, sys
            fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC); os.write(fd, b"Ours\\n")
            try:
                os.fsync(fd); print("ok")
            except OSError as e:
                print("error", e.errno)
            os.close(fd)
            """
        let ours = try run("python3", ["-c", py, "\(mount.path)/Department/p2/name"]).output
        try mount.unmount()
        #expect(
            try sqlite(mount, "select ZNAME, ZCODE from ZDEPARTMENT where Z_PK = 3") == "Mine|EXTERNAL",
            "their column stays")
        let stored = try sqlite(mount, "select ZNAME from ZDEPARTMENT where Z_PK = 2")
        if ours == "ok\n" {
            // The mount saw their change before it wrote (it polls for them): its value is the later one.
            #expect(stored == "Ours")
        } else {
            #expect(ours == "error \(EBUSY)\n", "the conflict reaches the writer at fsync: \(ours)")
            #expect(stored == "Theirs", "and their value survives")
            #expect(mount.logText.contains("changed by another process"), "the log says why")
        }
    }

    @Test func copyingManyObjectFoldersInCommitsThemAll() throws {
        let mount = try MountedStore(objects: 200)
        defer { try? mount.unmount() }
        let source = mount.directory.appendingPathComponent("incoming")
        for key in 1001...1300 {
            let folder = source.appendingPathComponent("p\(key)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data("Milestone \(key)\n".utf8).write(to: folder.appendingPathComponent("title"))
            try Data("true\n".utf8).write(to: folder.appendingPathComponent("done"))
        }
        let copy = try run("cp", ["-a", source.path + "/.", "\(mount.path)/Milestone/"])
        #expect(copy.status == 0, "\(copy.error)")
        let commitsBefore = try mount.stats()["commits"] as? Int ?? 0
        try mount.unmount()
        #expect(
            try run(
                "sqlite3",
                [mount.store.path, "select count(*) from ZMILESTONE where Z_PK between 1001 and 1300 and ZDONE = 1"]
            ).output == "300\n")
        #expect(
            try run("sqlite3", [mount.store.path, "select ZTITLE from ZMILESTONE where Z_PK = 1234"]).output
                == "Milestone 1234\n")
        #expect(commitsBefore < 100, "copying 300 folders took \(commitsBefore) commits, not one per file")
    }
}

/// A second mount of the same store file as `first`.
final class MountedStoreAlias {
    let first: MountedStore
    let mountPoint: URL
    let log: URL
    private var mounted = false
    var path: String { mountPoint.path }

    init(of first: MountedStore) {
        self.first = first
        mountPoint = first.directory.appendingPathComponent("mnt2")
        log = first.directory.appendingPathComponent("storefs2.log")
        try? FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
    }

    private(set) var lastError = ""

    func mount(options: [String] = []) throws {
        var arguments = ["mount", first.store.path, mountPoint.path, "--log-file", log.path, "-v"]
        if !options.isEmpty { arguments += ["-o", options.joined(separator: ",")] }
        let result = try run(try storefsBinary(), arguments)
        lastError = result.error
        guard result.status == 0 else { throw HarnessError("second mount failed: \(result.error)") }
        mounted = true
    }

    func unmount() throws {
        guard mounted else { return }
        _ = try run("fusermount3", ["-u", mountPoint.path])
        mounted = false
        Thread.sleep(forTimeInterval: 0.5)
    }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    deinit { if mounted { _ = try? run("fusermount3", ["-u", "-z", mountPoint.path]) } }
}
