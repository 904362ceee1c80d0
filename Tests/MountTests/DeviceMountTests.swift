import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 38 through the kernel: `storefs find` and folder mounts find stores by content at any
/// depth; an iOS backup mounts read-only through its manifest (docs/DEVICES.md).
@Suite(.serialized) struct DeviceMountTests {
    /// A scratch folder with `device/` and `mnt/`, unmounted and removed at the end.
    final class Scratch {
        let folder: URL
        var device: URL { folder.appendingPathComponent("device") }
        var mountPoint: URL { folder.appendingPathComponent("mnt") }
        var log: URL { folder.appendingPathComponent("storefs.log") }
        var mounted = false

        init() throws {
            try requireFuse()
            folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
                "storefs-device-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        }

        func mount() throws {
            let result = try run(
                try storefsBinary(), ["mount", device.path, mountPoint.path, "--log-file", log.path, "-v"])
            guard result.status == 0 else {
                throw HarnessError("storefs mount failed (\(result.status)): \(result.error)\n\(logText)")
            }
            mounted = true
        }

        func unmount() throws {
            guard mounted else { return }
            let result = try run(try storefsBinary(), ["unmount", mountPoint.path])
            mounted = false
            guard result.status == 0 else {
                throw HarnessError("unmount: \(result.status) \(result.error)\n\(logText)")
            }
        }

        var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        func at(_ path: String) -> String { mountPoint.path + "/" + path }

        deinit {
            if mounted { _ = try? run("fusermount3", ["-u", "-z", mountPoint.path]) }
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// `storefs find --json` as objects.
    static func find(_ folder: URL) throws -> [[String: Any]] {
        let result = try run(try storefsBinary(), ["find", "--json", folder.path])
        guard result.status == 0 else { throw HarnessError("storefs find: \(result.status) \(result.error)") }
        return try result.lines.map {
            guard let object = try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] else {
                throw HarnessError("not a JSON object: \($0)")
            }
            return object
        }
    }

    /// Every file under `folder` with its SHA-1, and every name: what must not change.
    static func fingerprint(_ folder: URL) throws -> String {
        let result = try sh(
            "cd '\(folder.path)' && find . -printf '%y %p %s %T@\\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha1sum"
        )
        guard result.status == 0 else { throw HarnessError("fingerprint: \(result.error)") }
        return result.output
    }

    @Test func findListsTheStoresOfAContainerByContentAtAnyDepth() throws {
        let scratch = try Scratch()
        try DeviceFixtures.container(in: scratch.device)
        let found = try Self.find(scratch.device)
        let byPath = Dictionary(uniqueKeysWithValues: found.map { ($0["path"] as? String ?? "", $0) })
        let deep = (0..<40).map { "d\($0)" }.joined(separator: "/")
        #expect(
            Set(byPath.keys) == [
                "Library/Application Support/default.store", "Documents/Notes/NoteStore",
                "Media/PhotoData/Photos.sqlite",
                "tmp/Database", "deep/\(deep)/deep.store"
            ])
        #expect(byPath["tmp/Database"]?["type"] as? String == "XML")
        #expect(byPath["Documents/Notes/NoteStore"]?["type"] as? String == "SQLite")
        for (path, name) in [
            ("Library/Application Support/default.store", DeviceFixtures.swiftData),
            ("Documents/Notes/NoteStore", DeviceFixtures.notes),
            ("Media/PhotoData/Photos.sqlite", DeviceFixtures.photos)
        ] {
            #expect(
                byPath[path]?["objects"] as? Int == (try DeviceFixtures.objectCount(DeviceFixtures.corpus(name))),
                "\(path)")
        }
        // default.store's -wal holds frames; Notes keeps persistent history.
        #expect((byPath["Library/Application Support/default.store"]?["walFrames"] as? Int ?? 0) > 0)
        #expect((byPath["Documents/Notes/NoteStore"]?["historyTransactions"] as? Int ?? 0) > 0)
        #expect(byPath["Documents/Notes/NoteStore"]?["walFrames"] as? Int == 0)
        // Nothing was written beside the stores (no -shm, no lock files).
        #expect(!FileManager.default.fileExists(atPath: scratch.device.path + "/Documents/Notes/NoteStore-shm"))
        #expect(!FileManager.default.fileExists(atPath: scratch.device.path + "/Documents/Notes/NoteStore-wal"))
    }

    @Test func aFolderMountShowsTheTreeWithItsStoresAsFolders() throws {
        let scratch = try Scratch()
        try DeviceFixtures.container(in: scratch.device)
        try scratch.mount()
        // find(1) walks the whole mount (links not followed: the cycles end nowhere).
        let walk = try run("find", [scratch.mountPoint.path, "-maxdepth", "4"])
        #expect(walk.status == 0, "\(walk.error)")
        let shown = Set(walk.lines.map { String($0.dropFirst(scratch.mountPoint.path.count)) })
        for path in [
            "/Library/Application Support/default.store", "/Documents/Notes/NoteStore",
            "/Media/PhotoData/Photos.sqlite",
            "/Library/cache.db", "/Library/Preferences/com.example.plist", "/tmp/a", "/tmp/b", "/Documents/up",
            "/tmp/Database"
        ] {
            #expect(shown.contains(path), "\(path) missing from \(shown.sorted())")
        }
        // Companions are part of their store, not shown.
        #expect(!shown.contains("/Library/Application Support/default.store-wal"))
        #expect(!shown.contains("/Media/PhotoData/Photos.sqlite-wal"))
        // Stores are folders with their entities; objects as sqlite3 counts them.
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: scratch.at("Documents/Notes/NoteStore"), isDirectory: &isFolder))
        #expect(isFolder.boolValue)
        let items = try run("ls", [scratch.at("Library/Application Support/default.store/Item")])
        let reference = try DeviceFixtures.query(
            DeviceFixtures.corpus(DeviceFixtures.swiftData), "select count(*) from ZITEM")
        #expect(items.lines.count == Int(reference))
        // The deep store opens too.
        let deep = (0..<40).map { "d\($0)" }.joined(separator: "/")
        #expect(try run("ls", [scratch.at("deep/\(deep)/deep.store/Item")]).lines.count == items.lines.count)
        // Other files are their exact bytes, read-only; links are links.
        for path in ["Library/cache.db", "Library/Preferences/com.example.plist"] {
            let compare = try run("cmp", [scratch.at(path), scratch.device.path + "/" + path])
            #expect(compare.status == 0, "\(path): \(compare.output)")
        }
        #expect(try run("readlink", [scratch.at("tmp/a")]).output == "b\n")
        #expect(try run("readlink", [scratch.at("Documents/etc")]).output == "/etc\n")
        let write = try sh("echo x > '\(scratch.at("Library/Preferences/com.example.plist"))'")
        #expect(write.status != 0 && write.error.contains("Read-only file system"), "\(write.error)")
        let create = try run("touch", [scratch.at("Library/new.txt")])
        #expect(create.status != 0 && create.error.contains("Read-only file system"), "\(create.error)")
        // A name past NAME_MAX is refused as too long, not looked for.
        let long = try run("stat", [scratch.at("Library/" + String(repeating: "n", count: 300))])
        #expect(long.status != 0 && long.error.contains("File name too long"), "\(long.error)")
        try scratch.unmount()
    }

    @Test func moreStoresThanSlotsOpenInTurnAsTheKernelLetsGoOfTheOldest() throws {
        let scratch = try Scratch()
        let store = DeviceFixtures.corpus("alemar11_CoreDataPlus_SampleModel3_V1.sqlite")
        let users = Int(try DeviceFixtures.query(store, "select count(*) from ZUSER"))
        for index in 1...70 {
            try DeviceFixtures.copyStore(
                "alemar11_CoreDataPlus_SampleModel3_V1.sqlite",
                to: scratch.device.appendingPathComponent("d\(index)/s.sqlite"))
        }
        try scratch.mount()
        // 70 stores, 63 slots: each is opened in turn; the oldest are closed to make room.
        for index in Array(1...70) + [1, 2] {
            let listed = try run("ls", [scratch.at("d\(index)/s.sqlite/User")])
            #expect(listed.status == 0 && listed.lines.count == users, "d\(index): \(listed.error)")
        }
        #expect(scratch.logText.contains("closed to make room"), "\(scratch.logText.suffix(2000))")
        try scratch.unmount()
    }

    /// The backup of the hostile-manifest test: real stores at their iOS paths (Notes with a -wal
    /// holding its last commit, one store with no suffix), plain files (a property list, a
    /// non-Core-Data database, text), a folder row, a file the folder lacks, and rows that must
    /// not become names.
    static func backupRows(scratch: URL) throws -> [DeviceFixtures.Row] {
        let text = scratch.appendingPathComponent("note.txt")
        try Data("a note\n".utf8).write(to: text)
        let notes = try DeviceFixtures.notesWithWAL(in: scratch)
        let plain = scratch.appendingPathComponent("cache.db")
        let made = try run("sqlite3", ["-batch", plain.path, "create table t(a); insert into t values (1);"])
        guard made.status == 0 else { throw HarnessError("sqlite3: \(made.error)") }
        return [
            .init(domain: "HomeDomain", relativePath: "Library", flags: 2, content: nil, mode: 0o40755),
            .init(
                domain: "HomeDomain", relativePath: "Library/Preferences/com.apple.x.plist", flags: 1,
                content: Corpus.url("momd/Karim-ezzedine_CartKit_CartStorage.momd/VersionInfo.plist")),
            .init(domain: "HomeDomain", relativePath: "Library/Caches/cache.db", flags: 1, content: plain),
            .init(
                domain: "AppDomain-com.example.sample", relativePath: "Documents/Database", flags: 1,
                content: DeviceFixtures.corpus("alemar11_CoreDataPlus_SampleModel3_V1.sqlite")),
            .init(
                domain: "AppDomainGroup-group.com.apple.notes", relativePath: "NoteStore.sqlite", flags: 1,
                content: notes),
            .init(
                domain: "AppDomainGroup-group.com.apple.notes", relativePath: "NoteStore.sqlite-wal", flags: 1,
                content: URL(fileURLWithPath: notes.path + "-wal")),
            .init(
                domain: "CameraRollDomain", relativePath: "Media/PhotoData/Photos.sqlite", flags: 1,
                content: DeviceFixtures.corpus(DeviceFixtures.photos)),
            .init(
                domain: "CameraRollDomain", relativePath: "Media/PhotoData/Photos.sqlite-wal", flags: 1,
                content: URL(fileURLWithPath: DeviceFixtures.corpus(DeviceFixtures.photos).path + "-wal")),
            .init(
                domain: "AppDomain-com.example.resources", relativePath: "Library/Application Support/default.store",
                flags: 1, content: DeviceFixtures.corpus(DeviceFixtures.swiftData)),
            .init(
                domain: "AppDomain-com.example.resources",
                relativePath: "Library/Application Support/default.store-wal",
                flags: 1, content: URL(fileURLWithPath: DeviceFixtures.corpus(DeviceFixtures.swiftData).path + "-wal")),
            .init(domain: "HomeDomain", relativePath: "Library/note.txt", flags: 1, content: text, size: -5),
            .init(domain: "HomeDomain", relativePath: "Library/huge.txt", flags: 1, content: text, size: Int64.max),
            // Listed, not in the folder.
            .init(domain: "HomeDomain", relativePath: "Library/gone.db", flags: 1, content: nil),
            .init(
                domain: "HomeDomain", relativePath: "Library/link", flags: 4, content: nil, mode: 0o120777,
                target: "note.txt"),
            // Hostile rows: none may become a name or reach outside the backup.
            .init(domain: "HomeDomain", relativePath: "../../escape.txt", flags: 1, content: text),
            .init(domain: "HomeDomain", relativePath: "/etc/passwd", flags: 1, content: text),
            .init(domain: "..", relativePath: "x.txt", flags: 1, content: text),
            .init(
                domain: "HomeDomain", relativePath: "Library/" + String(repeating: "l", count: 300), flags: 1,
                content: text),
            .init(
                domain: "HomeDomain", relativePath: "Library/outside.txt", flags: 1, content: nil,
                fileID: "../../../../etc/passwd"),
            .init(
                domain: "HomeDomain", relativePath: "Library/note.txt", flags: 1, content: text,
                fileID: "0000000000000000000000000000000000000000")
        ]
    }

    @Test func anIOSBackupMountsReadOnlyWithItsStoresAtTheirDomainPaths() throws {
        let scratch = try Scratch()
        let rows = try Self.backupRows(scratch: scratch.folder)
        try DeviceFixtures.backup(rows, in: scratch.device)
        let before = try Self.fingerprint(scratch.device)
        // find sees the four stores by content (one without a suffix), at DOMAIN/relativePath,
        // with as many objects as sqlite3 counts in each (Notes's -wal included).
        let found = try Self.find(scratch.device)
        let byPath = Dictionary(found.map { ($0["path"] as? String ?? "", $0) }) { first, _ in first }
        let notes = scratch.folder.appendingPathComponent("notes-wal/NoteStore.sqlite")
        let stores = [
            "AppDomainGroup-group.com.apple.notes/NoteStore.sqlite": notes,
            "CameraRollDomain/Media/PhotoData/Photos.sqlite": DeviceFixtures.corpus(DeviceFixtures.photos),
            "AppDomain-com.example.resources/Library/Application Support/default.store":
                DeviceFixtures.corpus(DeviceFixtures.swiftData),
            "AppDomain-com.example.sample/Documents/Database":
                DeviceFixtures.corpus("alemar11_CoreDataPlus_SampleModel3_V1.sqlite")
        ]
        #expect(found.count == stores.count && Set(byPath.keys) == Set(stores.keys), "\(byPath.keys.sorted())")
        for (path, store) in stores {
            #expect(byPath[path]?["objects"] as? Int == (try DeviceFixtures.objectCount(store)), "\(path)")
        }
        // The token sqlite3 added lives only in the -wal: the corpus store has one object less.
        #expect(
            (try DeviceFixtures.objectCount(notes))
                == (try DeviceFixtures.objectCount(DeviceFixtures.corpus(DeviceFixtures.notes))) + 1)
        #expect(
            (byPath["AppDomainGroup-group.com.apple.notes/NoteStore.sqlite"]?["walFrames"] as? Int ?? 0) > 0)

        try scratch.mount()
        let domains = try run("ls", [scratch.mountPoint.path])
        #expect(
            Set(domains.lines) == [
                "AppDomain-com.example.resources", "AppDomain-com.example.sample",
                "AppDomainGroup-group.com.apple.notes",
                "CameraRollDomain", "HomeDomain"
            ])
        let library = try run("ls", [scratch.at("HomeDomain/Library")])
        // The folder row, the files present and the link; not the missing file (gone.db), not the
        // duplicate row's file, not the row whose file ID names /etc/passwd (outside.txt).
        #expect(Set(library.lines) == ["Caches", "Preferences", "huge.txt", "link", "note.txt"], "\(library.lines)")
        // Stores open, read-only, with their -wal (the SwiftData store's objects are in its log).
        let items = try run(
            "ls", [scratch.at("AppDomain-com.example.resources/Library/Application Support/default.store/Item")])
        let reference = try DeviceFixtures.query(
            DeviceFixtures.corpus(DeviceFixtures.swiftData), "select count(*) from ZITEM")
        #expect(
            items.status == 0
                && items.lines.count == Int(reference))
        #expect(try run("ls", [scratch.at("CameraRollDomain/Media/PhotoData/Photos.sqlite")]).lines.contains("Asset"))
        // Notes reads with its -wal: the title and the object only the -wal holds are shown.
        let notesFolder = "AppDomainGroup-group.com.apple.notes/NoteStore.sqlite"
        #expect(try run("ls", [scratch.at(notesFolder)]).lines.contains("ICNote"))
        #expect(
            try run("cat", [scratch.at("\(notesFolder)/ICNote/\(DeviceFixtures.walNote.object)/title")]).output
                == DeviceFixtures.walNote.title + "\n")
        #expect(try run("ls", [scratch.at("\(notesFolder)/ICServerChangeToken")]).lines == ["p1"])
        #expect(
            try run("ls", [scratch.at("\(notesFolder)/ICNote")]).lines.count
                == Int(try DeviceFixtures.query(notes, "select count(*) from ZICCLOUDSYNCINGOBJECT where Z_ENT=11")))
        // The store with no suffix opens as a store.
        #expect(
            try run("ls", [scratch.at("AppDomain-com.example.sample/Documents/Database/User")]).lines.count
                == Int(
                    try DeviceFixtures.query(
                        DeviceFixtures.corpus("alemar11_CoreDataPlus_SampleModel3_V1.sqlite"),
                        "select count(*) from ZUSER")))
        // Plain files: their exact bytes; facts in xattrs as recorded, huge and negative alike.
        let note = try run("cat", [scratch.at("HomeDomain/Library/note.txt")])
        #expect(note.output == "a note\n")
        for (path, original) in [
            ("HomeDomain/Library/note.txt", scratch.folder.appendingPathComponent("note.txt")),
            ("HomeDomain/Library/huge.txt", scratch.folder.appendingPathComponent("note.txt")),
            ("HomeDomain/Library/Caches/cache.db", scratch.folder.appendingPathComponent("cache.db")),
            (
                "HomeDomain/Library/Preferences/com.apple.x.plist",
                Corpus.url("momd/Karim-ezzedine_CartKit_CartStorage.momd/VersionInfo.plist")
            )
        ] {
            let compare = try run("cmp", [scratch.at(path), original.path])
            #expect(compare.status == 0, "\(path): \(compare.output) \(compare.error)")
        }
        let fileID = try DeviceFixtures.sha1("HomeDomain-Library/note.txt")
        #expect(
            try run(
                "getfattr", ["--only-values", "-n", "user.backup.fileID", scratch.at("HomeDomain/Library/note.txt")]
            ).output == fileID)
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.size", scratch.at("HomeDomain/Library/note.txt")])
                .output == "-5")
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.size", scratch.at("HomeDomain/Library/huge.txt")])
                .output
                == String(Int64.max))
        #expect(try run("stat", ["-c", "%s", scratch.at("HomeDomain/Library/huge.txt")]).output == "7\n")
        #expect(try run("readlink", [scratch.at("HomeDomain/Library/link")]).output == "note.txt\n")
        // The folder row's own facts (a folder only implied by its files' paths has none).
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.mode", scratch.at("HomeDomain/Library")]).output
                == "40755")
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.mode", scratch.at("HomeDomain/Library/Caches")])
                .status != 0)
        // The root counts what is missing and what was refused.
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.missing", scratch.mountPoint.path]).output == "1")
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.skipped", scratch.mountPoint.path]).output == "6")
        // One row for each hostile kind: `..` and absolute paths, a `..` domain, a name past
        // NAME_MAX, a file ID that is a path, a second row for note.txt.
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.skippedReasons", scratch.mountPoint.path]).output
                == "a domain that cannot be a name: 1; absolute paths: 1; duplicate paths (the first row is shown): 1; "
                + "file IDs that are not 40 hexadecimal digits: 1; paths with empty, . or .. components or names too long: 2"
        )
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.device", scratch.mountPoint.path]).output
                == "Test iPhone")
        // Nothing escapes: no name outside the domains, no `..`.
        let all = try run(
            "find", [scratch.mountPoint.path, "-maxdepth", "3", "-name", "*escape*", "-o", "-name", "passwd"])
        #expect(all.lines.isEmpty, "\(all.lines)")
        // Read-only, and the backup stays byte-identical.
        let write = try sh("echo x >> '\(scratch.at("HomeDomain/Library/note.txt"))'")
        #expect(write.status != 0 && write.error.contains("Read-only file system"), "\(write.error)")
        let touch = try run("touch", [scratch.at("HomeDomain/new.txt")])
        #expect(touch.status != 0 && touch.error.contains("Read-only file system"), "\(touch.error)")
        let mkdir = try run("mkdir", [scratch.at("AppDomainGroup-group.com.apple.notes/NoteStore.sqlite/ICNote/p999")])
        #expect(mkdir.status != 0, "\(mkdir.error)")
        try scratch.unmount()
        #expect(try Self.fingerprint(scratch.device) == before)
    }

    @Test func anOldBackupWithManifestMBDBMountsItsStores() throws {
        let scratch = try Scratch()
        try DeviceFixtures.mbdbBackup(
            [
                .init(domain: "HomeDomain", relativePath: "Library", flags: 2, content: nil),
                .init(
                    domain: "HomeDomain", relativePath: "Library/Notes/notes.sqlite", flags: 1,
                    content: DeviceFixtures.corpus(DeviceFixtures.notes)),
                .init(domain: "HomeDomain", relativePath: "Library/readme", flags: 1, content: Corpus.url("README.md")),
                .init(domain: "HomeDomain", relativePath: "Library/gone", flags: 1, content: nil)
            ], in: scratch.device)
        let found = try Self.find(scratch.device)
        #expect(found.compactMap { $0["path"] as? String } == ["HomeDomain/Library/Notes/notes.sqlite"])
        #expect(
            found.first?["objects"] as? Int
                == (try DeviceFixtures.objectCount(DeviceFixtures.corpus(DeviceFixtures.notes))))
        try scratch.mount()
        #expect(try run("ls", [scratch.at("HomeDomain/Library/Notes/notes.sqlite")]).lines.contains("ICNote"))
        #expect(try run("cmp", [scratch.at("HomeDomain/Library/readme"), Corpus.url("README.md").path]).status == 0)
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.format", scratch.mountPoint.path]).output
                == "Manifest.mbdb")
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.backup.missing", scratch.mountPoint.path]).output == "1")
        try scratch.unmount()
    }

    /// Manifests `storefs` cannot read: each is refused by `mount` and `find` with exit 64 and a
    /// message naming the file and what is wrong, within a timeout (nothing hangs), and nothing
    /// is mounted.
    @Test(arguments: ["garbage", "no Files table", "truncated"])
    func aDamagedManifestIsRefusedWithAMessageThatSaysWhy(_ damage: String) throws {
        let scratch = try Scratch()
        try FileManager.default.createDirectory(at: scratch.device, withIntermediateDirectories: true)
        let manifest = scratch.device.appendingPathComponent("Manifest.db")
        let expected: String
        switch damage {
        case "garbage":
            // Bytes no SQLite file starts with (a manifest encrypted whole, or damaged).
            try Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }).write(to: manifest)
            expected = "is not an SQLite database"
        case "no Files table":
            let made = try run(
                "sqlite3", ["-batch", manifest.path, "create table Other(a); insert into Other values (1);"])
            #expect(made.status == 0, "\(made.error)")
            expected = "has no Files table"
        default:
            // A real manifest of 400 rows (4096-byte pages), cut halfway through its second page: a
            // copy that stopped early.
            try DeviceFixtures.backup(
                (0..<400).map { .init(domain: "HomeDomain", relativePath: "Library/f\($0)", flags: 2, content: nil) },
                in: scratch.device)
            let handle = try FileHandle(forWritingTo: manifest)
            try handle.truncate(atOffset: 6_144)
            try handle.close()
            expected = "is truncated"
        }
        for command in [["find", scratch.device.path], ["mount", scratch.device.path, scratch.mountPoint.path]] {
            let result = try run("timeout", ["30", try storefsBinary()] + command)
            #expect(result.status == 64, "\(command[0]): \(result.status) \(result.error)")
            #expect(
                result.error.contains(manifest.path) && result.error.contains(expected),
                "\(command[0]): \(result.error)")
        }
        #expect(try run("mountpoint", ["-q", scratch.mountPoint.path]).status != 0, "a damaged backup was mounted")
    }

    @Test func anEncryptedBackupIsRefusedWithAMessageThatSaysSo() throws {
        let scratch = try Scratch()
        try DeviceFixtures.backup(
            [
                .init(
                    domain: "HomeDomain", relativePath: "Library/x.sqlite", flags: 1,
                    content: DeviceFixtures.corpus(DeviceFixtures.notes))
            ],
            in: scratch.device, encrypted: true)
        let mount = try run(try storefsBinary(), ["mount", scratch.device.path, scratch.mountPoint.path])
        #expect(mount.status != 0)
        #expect(mount.error.contains("encrypted backup"), "\(mount.error)")
        let find = try run(try storefsBinary(), ["find", scratch.device.path])
        #expect(find.status != 0)
        #expect(find.error.contains("encrypted backup"), "\(find.error)")
    }
}
