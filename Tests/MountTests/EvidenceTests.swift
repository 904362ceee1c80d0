import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Reading touches nothing, and evidence mounts keep every edit in their overlay: a WAL store
/// with committed frames in its -wal, in a folder made read-only twice over (chmod a-w, which
/// root ignores, and a read-only bind mount, which it does not), read by `storefs info` and
/// mounted read-only and as evidence, is byte for byte as it was after, with nothing made beside
/// it and no lock taken on it; an evidence mount's edits, exported as a patch and applied to a
/// copy, show in the copy.
@Suite(.serialized) struct EvidenceTests {
    /// Runs a tool with a time limit: a hung mount must fail the test, not hang the suite.
    func limited(_ tool: String, _ arguments: [String], seconds: Int = 120) throws -> ToolResult {
        let result = try run("timeout", ["-k", "5", String(seconds), tool] + arguments)
        if result.status == 124 || result.status == 137 {
            throw HarnessError("\(tool) \(arguments.joined(separator: " ")) did not finish within \(seconds) s")
        }
        return result
    }

    func storefs(_ arguments: [String], seconds: Int = 120) throws -> ToolResult {
        try limited(try storefsBinary(), arguments, seconds: seconds)
    }

    func shell(_ command: String, seconds: Int = 120) throws -> ToolResult {
        try limited("sh", ["-c", command], seconds: seconds)
    }

    /// A folder holding copies of a store's files, made read-only: its files and itself chmod
    /// a-w, and seen through a read-only bind mount at ``boundPath``.
    final class ReadOnlyFolder {
        let root: URL
        let folder: URL
        let bound: URL
        private var isBound = false

        init(copying files: [URL], named names: [String]? = nil) throws {
            guard getuid() == 0 else {
                throw HarnessError("this test bind-mounts a folder read-only and must run as root")
            }
            root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
                "storefs-evidence-test-\(UUID().uuidString.prefix(8))")
            folder = root.appendingPathComponent("evidence")
            bound = root.appendingPathComponent("bound")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: bound, withIntermediateDirectories: true)
            for (i, file) in files.enumerated() {
                let name = names?[i] ?? file.lastPathComponent
                try FileManager.default.copyItem(at: file, to: folder.appendingPathComponent(name))
            }
            let chmod = try run("chmod", ["-R", "a-w", folder.path])
            guard chmod.status == 0 else { throw HarnessError("chmod a-w: \(chmod.error)") }
            let bind = try run("timeout", ["30", "mount", "--bind", folder.path, bound.path])
            guard bind.status == 0 else { throw HarnessError("mount --bind: \(bind.error)") }
            isBound = true
            let remount = try run("timeout", ["30", "mount", "-o", "remount,bind,ro", bound.path])
            guard remount.status == 0 else { throw HarnessError("mount -o remount,bind,ro: \(remount.error)") }
            // Proof that the bind is read-only even for root.
            guard !FileManager.default.createFile(atPath: bound.appendingPathComponent("probe").path, contents: Data())
            else {
                throw HarnessError("the read-only bind mount at \(bound.path) took a new file")
            }
        }

        /// Names, sizes, modification times (ns) and SHA-256 of everything in the folder.
        func state() throws -> [String] {
            let listing = try run("find", [folder.path, "-mindepth", "1", "-printf", "%P %y %s %T@\n"])
            let sums = try run(
                "sh", ["-c", "cd '\(folder.path)' && find . -type f -print0 | sort -z | xargs -0 -r sha256sum"])
            return (listing.lines.sorted() + sums.lines).filter { !$0.isEmpty }
        }

        deinit {
            if isBound { _ = try? run("timeout", ["30", "umount", bound.path]) }
            _ = try? run("chmod", ["-R", "u+w", root.path])
            try? FileManager.default.removeItem(at: root)
        }
    }

    /// The POSIX and flock locks held on the file at `path` (its device and inode in /proc/locks).
    func locks(on path: String) throws -> [String] {
        var info = stat()
        guard stat(path, &info) == 0 else { throw HarnessError("stat \(path): \(String(cString: strerror(errno)))") }
        let device = info.st_dev
        let id = String(
            format: "%02x:%02x:%llu", (device >> 8) & 0xfff, (device & 0xff) | ((device >> 12) & 0xfff00),
            UInt64(info.st_ino))
        let text = (try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init).filter {
            $0.split(separator: " ", omittingEmptySubsequences: true).contains { $0 == id }
        }
    }

    func mount(_ store: String, on mountPoint: URL, options: String, log: URL) throws {
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let result = try storefs(["mount", store, mountPoint.path, "-o", options, "--log-file", log.path, "-v"])
        guard result.status == 0 else {
            throw HarnessError(
                "storefs mount -o \(options) failed (\(result.status)): \(result.error)\n\((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
        }
    }

    func unmount(_ mountPoint: URL) throws -> ToolResult {
        let result = try storefs(["unmount", mountPoint.path])
        if result.status != 0 { _ = try? run("fusermount3", ["-u", "-z", mountPoint.path]) }
        return result
    }

    // MARK: - Reading touches nothing (issue 24 item 9)

    @Test func infoAndReadOnlyMountsOfAWALStoreInAReadOnlyFolderShowTheWALsRowsAndLeaveTheFolderAsItWas() throws {
        try requireFuse()
        // All 84 posts of this store are in its -wal: the main file alone holds none.
        let name = "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_WAL.sqlite"
        let source = Corpus.url("sqlite/\(name)")
        let folder = try ReadOnlyFolder(copying: [source, URL(fileURLWithPath: source.path + "-wal")])
        let mountPoint = folder.root.appendingPathComponent("mnt")
        let log = folder.root.appendingPathComponent("storefs.log")
        let expected = try run(
            "sha256sum",
            [folder.folder.appendingPathComponent(name).path, folder.folder.appendingPathComponent(name + "-wal").path])
        let before = try folder.state()
        // Through the folder root can write (chmod a-w stops only others), and through the read-only bind.
        for directory in [folder.folder, folder.bound] {
            let store = directory.appendingPathComponent(name).path
            let info = try storefs(["info", "--json", store])
            #expect(info.status == 0, "\(info.error)")
            let object = try JSONSerialization.jsonObject(with: Data(info.output.utf8)) as? [String: Any] ?? [:]
            #expect(
                (object["entities"] as? [String: Any])?["Post"] as? Int == 84,
                "the WAL's rows: \(info.output.prefix(300))")
            let read = (object["read"] as? [[String: Any]] ?? []).map {
                "\($0["sha256"] as? String ?? "")  \($0["path"] as? String ?? "")"
            }
            let sums = expected.lines.map { $0.replacingOccurrences(of: folder.folder.path, with: directory.path) }
            #expect(read == sums, "info lists the files it read with their SHA-256, as sha256sum has them")
            let hashes = try storefs(["info", "--hashes", store])
            #expect(hashes.lines == sums)

            try mount(store, on: mountPoint, options: "ro", log: log)
            #expect(
                try shell("ls '\(mountPoint.path)/Post' | wc -l").output.trimmingCharacters(in: .whitespacesAndNewlines)
                    == "84")
            let walk = try shell("find '\(mountPoint.path)' -type f -print0 | xargs -0 cat > /dev/null")
            #expect(walk.status == 0, "\(walk.error)")
            let held = try locks(on: store)
            #expect(held.isEmpty, "no lock on the store while it is mounted: \(held)")
            #expect(try folder.state() == before, "nothing made beside the store while it is mounted")
            let unmounted = try unmount(mountPoint)
            #expect(unmounted.status == 0, "\(unmounted.error)")
            #expect(
                try folder.state() == before,
                "the folder is as it was (names, sizes, modification times, hashes) via \(directory.path)")
        }
    }

    // MARK: - Evidence mounts (issue 26 item 6)

    /// A sample company in a WAL store whose last commit is only in its -wal (copied while the
    /// writer is still open, so nothing checkpointed it): Employee `changed` has last name
    /// "FromTheWAL" there and something else in the main file.
    func walStore(in directory: URL) throws -> (store: URL, wal: URL, changed: ObjectID) {
        let made = try MountedStore(objects: 300, mount: false)
        let source = made.store
        let coordinator = try PersistentStoreCoordinator.open(at: source, types: [SQLiteStoreType()])
        let context = coordinator.newContext()
        let employee = try #require(
            try context.objectIDs(of: context.model.entityID(named: "Employee")!).dropFirst(5).first)
        try context.setValue(.string("FromTheWAL"), of: "lastName", for: employee)
        try context.save()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = directory.appendingPathComponent("Company.sqlite")
        try FileManager.default.copyItem(at: source, to: store)
        try FileManager.default.copyItem(atPath: source.path + "-wal", toPath: store.path + "-wal")
        coordinator.close()
        #expect(try Data(contentsOf: store)[18..<20].elementsEqual([2, 2]), "a WAL store")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: store.path + "-wal")).count > 32,
            "with committed frames in its -wal")
        return (store, URL(fileURLWithPath: store.path + "-wal"), employee)
    }

    @Test func anEvidenceMountKeepsEveryEditInItsOverlayAndItsPatchReplaysThemOnACopy() throws {
        try requireFuse()
        let work = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "storefs-evidence-src-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: work) }
        let (source, sourceWAL, changed) = try walStore(in: work.appendingPathComponent("original"))
        let folder = try ReadOnlyFolder(copying: [source, sourceWAL])
        let store = folder.bound.appendingPathComponent("Company.sqlite").path
        let mnt = folder.root.appendingPathComponent("mnt")
        let log = folder.root.appendingPathComponent("storefs.log")
        let before = try folder.state()

        try mount(store, on: mnt, options: "evidence", log: log)
        var mounted = true
        defer { if mounted { _ = try? unmount(mnt) } }
        let m = mnt.path
        // What was read, with its hashes, on the root.
        let attribute = try run("getfattr", ["--only-values", "-n", "user.storefs.evidence", m])
        #expect(attribute.status == 0, "\(attribute.error)")
        let evidence = try JSONSerialization.jsonObject(with: Data(attribute.output.utf8)) as? [String: Any] ?? [:]
        let files = ((evidence["record"] as? [String: Any])?["files"] as? [[String: Any]] ?? []).map {
            "\($0["sha256"] as? String ?? "")  \($0["path"] as? String ?? "")"
        }
        #expect(
            files == (try run("sha256sum", [store, store + "-wal"])).lines,
            "user.storefs.evidence: \(attribute.output.prefix(400))")
        #expect(try run("getfattr", ["-d", m]).output.contains("user.storefs.evidence"), "listed by getfattr -d")

        // Walk it; the WAL's commit shows. The milestone rm -r deletes below is left out: `rm -r`
        // of a folder another process listed before fails on main too (the kernel answers rm's
        // listing from its cache, so storefs does not see rm empty it).
        let milestone = try #require(try shell("ls '\(m)/Milestone' | sort -V | head -1").lines.first)
        let walk = try shell(
            "find '\(m)' -path '\(m)/Milestone/\(milestone)' -prune -o -type f -print0 | xargs -0 cat > /dev/null")
        #expect(walk.status == 0, "\(walk.error)")
        let employee = "\(m)/Employee/\(changed.key)"
        #expect(try shell("cat '\(employee)/lastName'").output == "FromTheWAL\n")

        // Edit: a value, a new object, a deleted one, a link, metadata.
        let project = try #require(try shell("ls '\(m)/Project' | sort -V | tail -1").lines.first)
        let projects = try shell("ls '\(employee)/projects'").lines
        #expect(!projects.contains(project))
        let edits = try shell(
            """
            set -e
            echo Hopper > '\(employee)/lastName'
            mkdir '\(m)/Department/p5000'
            echo Forensics > '\(m)/Department/p5000/name'
            rm -r '\(m)/Milestone/\(milestone)'
            ln -s ../../../Project/\(project) '\(employee)/projects/'
            setfattr -n user.examiner -v 'case 42' '\(m)'
            """)
        #expect(edits.status == 0, "\(edits.error)\n\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        #expect(try shell("cat '\(employee)/lastName'").output == "Hopper\n")
        #expect(try shell("cat '\(m)/Department/p5000/name'").output == "Forensics\n")
        #expect(!FileManager.default.fileExists(atPath: "\(m)/Milestone/\(milestone)"))

        let patchFile = folder.root.appendingPathComponent("changes.json")
        let export = try storefs(["overlay", "export", m])
        #expect(export.status == 0, "\(export.error)")
        try Data(export.output.utf8).write(to: patchFile)
        let patch = try JSONSerialization.jsonObject(with: Data(export.output.utf8)) as? [String: Any] ?? [:]
        let objects = (patch["objects"] as? [[String: Any]] ?? []).map {
            "\($0["change"] as? String ?? "") \($0["object"] as? String ?? "")"
        }
        #expect(
            objects.contains("updated Employee/\(changed.key)") || objects.contains("updated Manager/\(changed.key)"),
            "\(objects)")
        #expect(objects.contains("inserted Department/p5000"), "\(objects)")
        #expect(objects.contains("deleted Milestone/\(milestone)"), "\(objects)")
        #expect((patch["metadata"] as? [String: Any])?["examiner"] != nil)
        #expect(try folder.state() == before, "nothing written beside the store while mounted and edited")
        #expect(try locks(on: store).isEmpty)

        let unmounted = try unmount(mnt)
        mounted = false
        #expect(unmounted.status == 0, "\(unmounted.error)")
        #expect(
            try folder.state() == before, "every file beside the store byte-identical: names, sizes, mtimes, hashes")
        #expect(
            (try? String(contentsOf: log, encoding: .utf8))?.contains("is as it was when mounted") == true,
            "the log says so too")

        // The patch on a copy of the store (and its -wal) makes the same edits.
        let copyFolder = work.appendingPathComponent("copy")
        try FileManager.default.createDirectory(at: copyFolder, withIntermediateDirectories: true)
        let copy = copyFolder.appendingPathComponent("Company.sqlite")
        try FileManager.default.copyItem(at: source, to: copy)
        try FileManager.default.copyItem(at: sourceWAL, to: URL(fileURLWithPath: copy.path + "-wal"))
        let applied = try storefs(["apply", patchFile.path, copy.path])
        #expect(applied.status == 0, "\(applied.error)")
        let again = try storefs(["apply", patchFile.path, copy.path])
        #expect(
            again.status == 1 && again.error.contains("nothing of"), "a patch applied twice is refused: \(again.error)")
        let check = work.appendingPathComponent("mnt")
        try mount(copy.path, on: check, options: "ro", log: work.appendingPathComponent("copy.log"))
        defer { _ = try? unmount(check) }
        let c = check.path
        let copied = "\(c)/Employee/\(changed.key)"
        #expect(try shell("cat '\(copied)/lastName'").output == "Hopper\n")
        #expect(try shell("cat '\(c)/Department/p5000/name'").output == "Forensics\n")
        #expect(!FileManager.default.fileExists(atPath: "\(c)/Milestone/\(milestone)"))
        #expect(try shell("readlink '\(copied)/projects/\(project)'").output == "../../../Project/\(project)\n")
        #expect(try run("getfattr", ["--only-values", "-n", "user.examiner", c]).output == "case 42")
    }
}
