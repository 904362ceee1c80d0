import Foundation
import ObjectGraph
import SQLiteStore
import XMLStore
import BinaryStore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Every "yes" storefs gives means "saved": errors reach the writer at the call that caused them,
/// one change that cannot be saved never blocks or loses another, what cannot be saved at all is
/// kept in a recovery file, unmount returns once the store is written, and the store file changes
/// only by a commit.
@Suite(.serialized) struct SavingTests {
    func sqlite(_ store: URL, _ query: String) throws -> String {
        try run("sqlite3", ["-cmd", ".timeout 5000", store.path, query]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// Runs a Python snippet with the path; prints what it prints.
    func python(_ code: String, _ arguments: String...) throws -> String {
        try run("python3", ["-c", code] + arguments).output
    }

    @Test func aValueThatDoesNotParseFailsAtWriteSoTheShellReportsIt() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let employee = "\(mount.path)/Employee/p40"
        for (attribute, text) in [
            ("hoursPerWeek", "abc"), ("hoursPerWeek", "1e999"), ("hoursPerWeek", "nan"), ("isRemote", "maybe"),
            ("birthDate", "2024-13-45"), ("level", " 5"), ("level", "5 "), ("level", "99999999999999999999"),
            ("rating", "1e-60"),
            ("personID", "not-a-uuid")
        ] {
            let before = try run("cat", ["\(employee)/\(attribute)"])
            let result = try run("bash", ["-c", "echo '\(text)' > \(employee)/\(attribute)"])
            #expect(
                result.status != 0 && result.error.contains("write error: Invalid argument"),
                "\(attribute) = \(text): \(result.error)")
            #expect(try run("cat", ["\(employee)/\(attribute)"]).output == before.output, "\(attribute) kept its value")
        }
        // A Windows line ending and text that is not UTF-8.
        let crlf = try run("bash", ["-c", "printf '7\\r\\n' > \(employee)/level"])
        #expect(crlf.status != 0 && crlf.error.contains("Invalid argument"), "\(crlf.error)")
        let bytes = try run("bash", ["-c", "printf 'ab\\xff\\n' > \(employee)/firstName"])
        #expect(bytes.status != 0 && bytes.error.contains("Invalid argument"), "\(bytes.error)")
        #expect(mount.logText.contains("is not a number"), "the log says why")
        // Forms that denote the value exactly are taken and read back canonical.
        #expect(try sh("echo +7 > \(employee)/level && echo 0.00001 > \(employee)/hoursPerWeek").status == 0)
        #expect(try run("cat", ["\(employee)/level"]).output == "7\n")
        #expect(try run("cat", ["\(employee)/hoursPerWeek"]).output == "1e-05\n")
    }

    @Test func oneChangeThatCannotBeSavedNeverBlocksOrLosesAnother() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        // An object whose mandatory lastName is below its minimum length can never be saved as it is.
        #expect(try run("mkdir", ["\(mount.path)/Employee/stranded"]).status == 0)
        let made = try #require(
            try run("ls", ["\(mount.path)/Employee"]).lines.compactMap { PrimaryKey(reference: $0) }.max())
        #expect(try sh("echo Hopper > \(mount.path)/Employee/p30/lastName").status == 0)
        // The folder settles two seconds after its last change, then a commit tries it and saves the rest.
        var reason = ""
        for _ in 0..<80 where reason.isEmpty {
            Thread.sleep(forTimeInterval: 0.1)
            reason = try run(
                "getfattr", ["--only-values", "-n", "user.storefs.error", "\(mount.path)/Employee/\(made)"]
            ).output
        }
        #expect(reason.contains("lastName"), "the object says why it is not saved: \(reason)")
        #expect(
            try sqlite(mount.store, "select ZLASTNAME from ZPERSON where Z_PK = 30") == "Hopper",
            "the other edit is saved meanwhile")
        #expect(try sh("echo Hopper2 > \(mount.path)/Employee/p31/lastName").status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 75, "the unmount says not everything was saved: \(status.status) \(status.error)")
        #expect(status.error.contains("recovery"), "\(status.error)")
        #expect(try sqlite(mount.store, "select ZLASTNAME from ZPERSON where Z_PK = 31") == "Hopper2")
        #expect(try sqlite(mount.store, "select count(*) from ZPERSON where Z_PK = \(made.rawValue)") == "0")
        let file = try #require(mount.recoveryFiles.first)
        var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        var changes = try #require(json["changes"] as? [[String: Any]])
        let index = try #require(changes.firstIndex { $0["object"] as? String == "Employee/\(made)" })
        #expect((changes[index]["reason"] as? String)?.contains("lastName") == true, "\(changes[index])")
        var attributes = try #require(changes[index]["attributes"] as? [String: Any])
        #expect((attributes["lastName"] as? [String: Any])?["text"] as? String == "", "the value as text")
        // Fixed in the file, the change applies.
        attributes["lastName"] = ["text": "Fixed"]
        changes[index]["attributes"] = attributes
        json["changes"] = changes
        try JSONSerialization.data(withJSONObject: json).write(to: file)
        let recover = try run(try storefsBinary(), ["recover", mount.store.path, file.path])
        #expect(recover.status == 0, "\(recover.output) \(recover.error)")
        #expect(try sqlite(mount.store, "select ZLASTNAME from ZPERSON where Z_PK = \(made.rawValue)") == "Fixed")
    }

    @Test func aFolderMadeByMkdirShowsItsDefaultsTwoSecondsAfterItsLastChange() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        #expect(try run("mkdir", ["\(mount.path)/Project/p800"]).status == 0)
        #expect(try run("ls", ["\(mount.path)/Project/p800"]).lines.isEmpty, "fresh: only what was written through it")
        Thread.sleep(forTimeInterval: 2.6)
        let listing = try run("ls", ["\(mount.path)/Project/p800"]).lines
        #expect(listing.contains("members") && listing.contains("milestones") && listing.contains("name"), "\(listing)")
        #expect(try run("cat", ["\(mount.path)/Project/p800/name"]).output == "New Project\n")
        // No other change happened, and it is saved.
        #expect(try sqlite(mount.store, "select ZNAME from ZPROJECT where Z_PK = 800") == "New Project")
    }

    @Test(arguments: ["sqlite", "xml", "binary"])
    func unmountReturnsOnceTheStoreIsSaved(suffix: String) throws {
        let sample = try MountedStore(objects: 300, mount: false)
        var source = sample.store
        if suffix != "sqlite" {
            source = sample.directory.appendingPathComponent("Company.\(suffix)")
            let migrate = try run(try storefsBinary(), ["migrate", sample.store.path, source.path])
            #expect(migrate.status == 0, "\(migrate.error)")
        }
        let mount = try MountedStore(copying: source)
        let keys = try run("ls", ["\(mount.path)/Milestone"]).lines.compactMap { PrimaryKey(reference: $0) }.prefix(20)
        #expect(keys.count == 20)
        for key in keys {
            #expect(try sh("echo Saved\(key) > \(mount.path)/Milestone/\(key)/title").status == 0)
        }
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)")
        // At once, with no wait: the file holds every edit.
        let engine = try PersistentStoreCoordinator.open(
            at: mount.store, types: [SQLiteStoreType(), XMLStoreType(), BinaryStoreType()],
            options: StoreOptions(readOnly: true))
        defer { engine.close() }
        let context = engine.newContext()
        let milestone = try #require(engine.model.entityID(named: "Milestone"))
        for key in keys {
            let id = try #require(try context.objectID(forKey: key, in: milestone))
            #expect(try context.value(of: "title", for: id) == .string("Saved\(key)"))
        }
    }

    @Test func theUmountHelperWaitsAndReportsLikeStorefsUnmount() throws {
        let mount = try MountedStore(objects: 300)
        #expect(try sh("echo Helped > \(mount.path)/Department/p1/name").status == 0)
        let helper = Corpus.directory.deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("scripts/umount.fuse.storefs").path
        let result = try run(helper, [mount.path], environment: ["STOREFS": try storefsBinary()])
        #expect(result.status == 0, "\(result.error)")
        #expect(
            try sqlite(mount.store, "select ZNAME from ZDEPARTMENT where Z_PK = 1") == "Helped",
            "saved before the helper returned")
        #expect(try run("mountpoint", ["-q", mount.path]).status != 0, "and unmounted")
    }

    @Test func readersNeverSeeATornOrEmptyValueWhileAWriterRewritesIt() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let file = "\(mount.path)/Department/p1/code"
        let values = (0..<20).map { "value-\($0)-" + String(repeating: "x", count: 3000) }
        #expect(try sh("echo '\(values[0])' > \(file)").status == 0)
        let script = """
            import os, sys, threading
            path = sys.argv[1]
            values = [("value-%d-" % i + "x" * 3000 + "\\n").encode() for i in range(20)]
            stop = False
            def writer():
                i = 0
                while not stop:
                    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
                    os.write(fd, values[i % 20]); os.close(fd); i += 1
            t = threading.Thread(target=writer); t.start()
            bad = 0; reads = 0
            for _ in range(1500):
                with open(path, "rb") as f:
                    data = f.read()
                reads += 1
                if data not in values: bad += 1
            stop = True; t.join()
            print(reads, bad)
            """
        let output = try python(script, file).split(separator: " ").map {
            Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        #expect(output.count == 2 && output[0] == 1500, "\(output)")
        #expect(output.last == 0, "reads that were empty or torn: \(output)")
    }

    @Test func readingALargeValueRendersItOnceNotOncePerRead() throws {
        let mount = try MountedStore(objects: 300, mount: false)
        let big = String(repeating: "0123456789abcdef", count: 2 << 20)  // 32 MiB
        #expect(
            try sqlite(
                mount.store,
                "update ZDEPARTMENT set ZCODE = printf('%.*c', \(big.utf8.count), 'x') where Z_PK = 1; select length(ZCODE) from ZDEPARTMENT where Z_PK = 1"
            ) == "\(big.utf8.count)")
        for options in [[String](), ["ro"]] {
            try mount.mount(options: options)
            let before = try mount.stats()["valuesRendered"] as? Int ?? -1
            let read = try run("sh", ["-c", "dd if=\(mount.path)/Department/p1/code bs=128k status=none | wc -c"])
            #expect(read.output.trimmingCharacters(in: .whitespacesAndNewlines) == "\(big.utf8.count + 1)")
            let after = try mount.stats()["valuesRendered"] as? Int ?? -1
            #expect(after - before == 1, "\(options): 257 reads rendered the value \(after - before) times")
            try mount.unmount()
        }
    }
}
