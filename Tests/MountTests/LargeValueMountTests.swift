import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Values of any size in an attribute Core Data may keep outside the store ("Allows External
/// Storage"): written through the mount straight into a file of `.NAME_SUPPORT/_EXTERNAL_DATA`,
/// read back by the kernel from that file (FUSE passthrough), and the in-row limit for the others.
/// The fixture is Tests/Fixtures/external-data (`Attachment.data` allows external storage,
/// `Attachment.thumbnail` does not).
@Suite(.serialized) struct LargeValueMountTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/external-data")
    static let model = fixture.appendingPathComponent("Attachments.xcdatamodel").path

    /// The fixture's store and its external data, copied, not mounted yet.
    static func store() throws -> MountedStore {
        let mount = try MountedStore(copying: fixture.appendingPathComponent("Attachments.sqlite"), mount: false)
        try FileManager.default.copyItem(
            at: fixture.appendingPathComponent(".Attachments_SUPPORT"),
            to: mount.directory.appendingPathComponent(".Attachments_SUPPORT"))
        return mount
    }

    static func externalData(_ mount: MountedStore) -> URL {
        mount.directory.appendingPathComponent(".Attachments_SUPPORT/_EXTERNAL_DATA")
    }

    static func sqlite(_ store: URL, _ query: String) throws -> String {
        try run("sqlite3", ["-batch", "-readonly", store.path, query]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// Writes `dictionary` (a Python expression) as a binary property list, by Python's
    /// plistlib: an encoder that is not storefs's.
    static func writeBinaryPropertyList(_ dictionary: String, to file: URL) throws {
        let made = try run(
            "python3",
            [
                "-c",
                "import plistlib,sys; open(sys.argv[1],'wb').write(plistlib.dumps(\(dictionary),fmt=plistlib.FMT_BINARY))",
                file.path
            ])
        try #require(made.status == 0, "\(made.error)")
    }

    static func serverPID(_ mount: MountedStore) throws -> Int32 {
        let found = try run("pgrep", ["-f", "storefs mount \(mount.store.path) \(mount.path)"]).lines.compactMap {
            Int32($0)
        }
        return try #require(found.first, "the server of \(mount.store.path) runs")
    }

    /// The server's peak resident memory, kB (/proc/PID/status VmHWM).
    static func peakMemory(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        return try #require(Int(line.split(separator: " ").dropFirst().first ?? ""))
    }

    /// READ requests the server has answered (`user.storefs.stats`).
    static func readRequests(_ mount: MountedStore) throws -> Int {
        let stats = try run("getfattr", ["--only-values", "-n", "user.storefs.stats", mount.path]).output
        let object = try #require(try JSONSerialization.jsonObject(with: Data(stats.utf8)) as? [String: Any])
        let fuse = try #require(object["fuse"] as? [String: Any])
        return fuse["read"] as? Int ?? 0
    }

    @Test func aValueOf256MiBIsWrittenIntoItsFileAndReadByTheKernel() throws {
        let mount = try Self.store()
        defer { try? mount.unmount() }
        let big = mount.directory.appendingPathComponent("video.bin")
        #expect(try sh("head -c 268435456 /dev/urandom > \(big.path)").status == 0)
        try mount.mount(model: Self.model)
        let server = try Self.serverPID(mount)
        let before = try Self.peakMemory(server)
        let value = "\(mount.path)/Attachment/p8/data"

        let copy = try run("cp", [big.path, value])
        #expect(copy.status == 0, "\(copy.error)")
        let growth = try Self.peakMemory(server) - before
        #expect(growth < 64 * 1024, "the server's peak memory grew by \(growth) kB for a 256 MiB value")
        #expect(try run("stat", ["-c", "%s", value]).output == "268435456\n")

        let reads = try Self.readRequests(mount)
        #expect(try run("cmp", [big.path, value]).status == 0)
        #expect(mount.logText.contains("FUSE passthrough in use"), "\(mount.logText)")
        #expect(
            try Self.readRequests(mount) == reads, "the kernel read the value's file itself: no READ reached storefs")

        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)")
        let reference = try Self.sqlite(
            mount.store, "SELECT hex(substr(ZDATA, 1, 1)) || substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 8")
        #expect(reference.hasPrefix("02"), "the row holds an external reference: \(reference)")
        let file = Self.externalData(mount).appendingPathComponent(String(reference.dropFirst(2)))
        #expect(try run("cmp", [big.path, file.path]).status == 0, "the row names the file that holds the value")
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.externalData(mount).path)
        #expect(!names.contains { $0.hasSuffix(".storefs-tmp") }, "no temporary file is left: \(names)")

        // Cold, after a remount: read from the file again, by the kernel.
        try mount.mount(model: Self.model)
        #expect(try run("cmp", [big.path, value]).status == 0)
        #expect(try Self.readRequests(mount) == 0)
        try? FileManager.default.removeItem(at: big)
    }

    @Test func smallValuesStayInTheRowAndLargeOnesReplaceTheirFile() throws {
        let mount = try Self.store()
        defer { try? mount.unmount() }
        try mount.mount(model: Self.model)
        let old = try Self.sqlite(mount.store, "SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 4")
        #expect(try sh("head -c 1000 /dev/zero > \(mount.path)/Attachment/p4/data").status == 0)
        #expect(try sh("head -c 200000 /dev/zero | tr '\\0' x > \(mount.path)/Attachment/p1/data").status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)")
        #expect(
            try Self.sqlite(
                mount.store, "SELECT hex(substr(ZDATA, 1, 1)), length(ZDATA) FROM ZATTACHMENT WHERE Z_PK = 4")
                == "01|1001", "1,000 bytes are kept in the row, after Core Data's marker")
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.externalData(mount).path)
        #expect(!names.contains(old), "the replaced value's file is gone")
        let reference = try Self.sqlite(mount.store, "SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 1")
        #expect(names.contains(reference), "200,000 bytes went to a file the row names: \(reference) in \(names)")
        try mount.mount(model: Self.model)
        #expect(try sh("head -c 200000 /dev/zero | tr '\\0' x | cmp - \(mount.path)/Attachment/p1/data").status == 0)
        // Appending to a value kept in a file continues it in a new file.
        #expect(try sh("printf 'end' >> \(mount.path)/Attachment/p1/data").status == 0)
        #expect(try run("stat", ["-c", "%s", "\(mount.path)/Attachment/p1/data"]).output == "200003\n")
        #expect(try sh("tail -c 3 \(mount.path)/Attachment/p1/data").output == "end")
    }

    @Test func killDuringAWriteLeavesTheOldValue() throws {
        let mount = try Self.store()
        defer {
            _ = try? run("fusermount3", ["-u", "-z", mount.path])
            try? FileManager.default.removeItem(at: mount.directory)
        }
        try mount.mount(model: Self.model)
        let original = Self.fixture.appendingPathComponent(
            ".Attachments_SUPPORT/_EXTERNAL_DATA/9F4E2D1C-0B3A-4E5F-8A7B-6C5D4E3F2A10")
        let reference = try Self.sqlite(mount.store, "SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 4")
        let server = try Self.serverPID(mount)
        // A writer still writing 1 GiB into p4 (another value written meanwhile) when the server
        // is killed.
        let writing = try sh(
            "(head -c 1073741824 /dev/zero > \(mount.path)/Attachment/p4/data 2>/dev/null &) ; "
                + "head -c 500000 /dev/zero > \(mount.path)/Attachment/p3/data; sleep 1; kill -9 \(server)")
        #expect(writing.status == 0, "\(writing.error)")
        // A killed process holds its files (and SQLite's locks) until its last thread is out of
        // the kernel (an fsync under load can take seconds): only then is it gone.
        for _ in 0..<600 where kill(server, 0) == 0 { Thread.sleep(forTimeInterval: 0.1) }
        try #require(kill(server, 0) != 0, "the killed server \(server) is gone within 60 s")
        _ = try run("fusermount3", ["-u", "-z", mount.path])
        // The kill may land in p3's commit and leave a hot journal (the fixture is a
        // rollback-journal store): the remount rolls it back (HotJournal) and shows the old value.
        try mount.mount(model: Self.model)
        #expect(try run("cmp", [original.path, "\(mount.path)/Attachment/p4/data"]).status == 0)
        try mount.unmount()
        #expect(try Self.sqlite(mount.store, "SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 4") == reference)
        let kept = Self.externalData(mount).appendingPathComponent(reference)
        #expect(try run("cmp", [original.path, kept.path]).status == 0, "the old value's file is intact")
    }

    /// A writer killed in the middle of a transaction (an app, or a storefs server, during a
    /// commit) leaves a hot rollback journal; SQLite's read-only connections refuse such a file
    /// (SQLITE_READONLY_ROLLBACK, 776). A read-write mount rolls it back first and shows the last
    /// commit.
    @Test func aJournalLeftByAKilledWriterIsRolledBackAtMount() throws {
        let mount = try Self.store()
        defer { try? mount.unmount() }
        let before = try Self.sqlite(mount.store, "SELECT hex(ZDATA) FROM ZATTACHMENT WHERE Z_PK = 1")
        // sqlite3 changes p1's value and enough pages to spill into the store, then is killed.
        let crash = try sh(
            "printf \"PRAGMA cache_size=1;\\nBEGIN;\\nUPDATE ZATTACHMENT SET ZDATA = X'01414243';\\n"
                + "CREATE TABLE filler(x);\\nINSERT INTO filler SELECT randomblob(1000) FROM generate_series(1,300);\\n"
                + ".shell kill -9 \\$PPID\\n\" | sqlite3 \(mount.store.path)")
        #expect(crash.status != 0, "sqlite3 was killed mid-transaction")
        let journal = mount.store.path + "-journal"
        let refused = try run("sqlite3", ["-batch", "-readonly", mount.store.path, "SELECT count(*) FROM ZATTACHMENT"])
        try #require(refused.status != 0, "the journal is hot: a read-only connection refuses the store")
        try mount.mount(model: Self.model)
        let original = Self.fixture.appendingPathComponent(
            ".Attachments_SUPPORT/_EXTERNAL_DATA/9F4E2D1C-0B3A-4E5F-8A7B-6C5D4E3F2A10")
        #expect(try run("cmp", [original.path, "\(mount.path)/Attachment/p4/data"]).status == 0)
        #expect(try run("ls", ["\(mount.path)/Attachment"]).status == 0)
        #expect(mount.logText.contains("rolled back the journal"), "\(mount.logText)")
        #expect(!FileManager.default.fileExists(atPath: journal), "the journal is gone")
        try mount.unmount()
        #expect(try Self.sqlite(mount.store, "SELECT hex(ZDATA) FROM ZATTACHMENT WHERE Z_PK = 1") == before)
        #expect(try Self.sqlite(mount.store, "SELECT count(*) FROM sqlite_master WHERE name = 'filler'") == "0")
    }

    /// A value kept in a file that the unmount cannot save (another process holds the store's
    /// write lock throughout) goes to the recovery file as its bytes: the file, linked beside the
    /// recovery file, not the process's reference; `storefs recover` then sets exactly those bytes.
    @Test func aValueKeptInAFileThatCannotBeSavedIsInTheRecoveryFile() throws {
        let mount = try Self.store()
        var holder: Int32 = 0
        defer {
            if holder > 0 {
                _ = try? run("pkill", ["-KILL", "-P", "\(holder)"])
                kill(holder, SIGKILL)
            }
            _ = try? run("fusermount3", ["-u", "-z", mount.path])
            try? FileManager.default.removeItem(at: mount.directory)
        }
        let source = mount.directory.appendingPathComponent("video")
        #expect(try sh("head -c 3000000 /dev/urandom > \(source.path)").status == 0)
        try mount.mount(model: Self.model)
        #expect(try run("ls", ["\(mount.path)/Attachment/p4"]).status == 0)
        // sqlite3 takes the store's write lock (RESERVED: readers go on) and keeps it.
        let script = mount.directory.appendingPathComponent("hold.sql")
        try Data("BEGIN IMMEDIATE;\n.shell sleep 120\n".utf8).write(to: script)
        let started = try sh("sqlite3 \(mount.store.path) < \(script.path) > /dev/null 2>&1 & echo $!")
        holder = try #require(Int32(started.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try run("cp", [source.path, "\(mount.path)/Attachment/p4/data"]).status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 75, "the unmount could not save: \(status.status) \(status.error)")
        _ = try run("pkill", ["-KILL", "-P", "\(holder)"])
        kill(holder, SIGKILL)
        holder = 0
        let file = try #require(mount.recoveryFiles.first, "no recovery file: \(status.error)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        let changes = try #require(json["changes"] as? [[String: Any]])
        let change = try #require(changes.first { $0["object"] as? String == "Attachment/p4" }, "\(changes)")
        let data = try #require((change["attributes"] as? [String: Any])?["data"] as? [String: Any], "\(change)")
        let kept = try #require(data["file"] as? String, "the value is named by its file: \(data)")
        #expect(data["base64"] == nil)
        #expect(
            kept.hasPrefix(file.deletingPathExtension().path + ".values/"), "kept beside the recovery file: \(kept)")
        #expect(try run("cmp", [source.path, kept]).status == 0, "the kept file holds the value's bytes")
        let leftover = try FileManager.default.contentsOfDirectory(atPath: Self.externalData(mount).path)
        #expect(!leftover.contains { $0.hasSuffix(".storefs-tmp") }, "no temporary file left: \(leftover)")
        let recover = try run(try storefsBinary(), ["recover", mount.store.path, file.path, "--model", Self.model])
        #expect(recover.status == 0, "\(recover.output) \(recover.error)")
        let reference = try Self.sqlite(
            mount.store, "SELECT hex(substr(ZDATA, 1, 1)) || substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 4")
        #expect(reference.hasPrefix("02"), "the row names an external file: \(reference)")
        let stored = Self.externalData(mount).appendingPathComponent(String(reference.dropFirst(2)))
        #expect(try run("cmp", [source.path, stored.path]).status == 0, "the recovered value is the bytes written")
        try mount.mount(model: Self.model)
        #expect(try run("cmp", [source.path, "\(mount.path)/Attachment/p4/data"]).status == 0)
        try mount.unmount()
    }

    /// What shows a value through the engine rather than its file sees the value kept in a file,
    /// not its reference: the renderings beside the attribute (`data.json`), a query folder's
    /// records (`.jsonl`), and the model's min/max length when it is set.
    @Test func renderingsQueryRecordsAndLengthChecksSeeAValueKeptInAFile() throws {
        let mount = try Self.store()
        defer { try? mount.unmount() }
        // A binary property list of 300 KB (past the 128 KiB kept in the row).
        let plist = mount.directory.appendingPathComponent("value.plist")
        try Self.writeBinaryPropertyList("{'title':'visible','blob':bytes(300000)}", to: plist)
        // The model with a length range on `data` (Core Data's min/max length of binary data).
        let model = mount.directory.appendingPathComponent("Ranged.xcdatamodel")
        try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
        let contents = try String(contentsOfFile: Self.model + "/contents", encoding: .utf8).replacingOccurrences(
            of: "allowsExternalBinaryDataStorage=\"YES\"",
            with: "minValueString=\"200000\" maxValueString=\"1000000\" allowsExternalBinaryDataStorage=\"YES\"")
        try contents.write(to: model.appendingPathComponent("contents"), atomically: true, encoding: .utf8)
        try mount.mount(model: model.path)
        let object = "\(mount.path)/Attachment/p4"
        #expect(try run("cp", [plist.path, "\(object)/data"]).status == 0)
        #expect(try sh("printf clip > \(object)/name").status == 0)
        let rendered = try run("cat", ["\(object)/data.json"])
        #expect(
            rendered.status == 0 && rendered.output.contains("visible"),
            "\(rendered.output.prefix(200)) \(rendered.error)")
        let renderings = try run("getfattr", ["--only-values", "-n", "user.attribute.renderings", "\(object)/data"])
        #expect(renderings.output.contains("json"), "\(renderings.output)")
        #expect(try run("sync", [mount.path]).status == 0)
        let line = try run("cat", ["\(mount.path)/.query/Attachment/name == 'clip'/.jsonl"])
        let record = try #require(
            try JSONSerialization.jsonObject(with: Data(line.output.utf8)) as? [String: Any],
            "\(line.output.prefix(300))")
        let shown = try #require((record["data"] as? String).flatMap { Data(base64Encoded: $0) }, "\(record.keys)")
        #expect(shown == (try Data(contentsOf: plist)), "the record holds the value's bytes")
        // Outside the model's 200,000...1,000,000 bytes: refused at close, the value unchanged.
        let short = try sh("head -c 150000 /dev/zero > \(object)/data")
        #expect(short.status != 0 && short.error.contains("Invalid argument"), "\(short.error)")
        let long = try sh("head -c 2000000 /dev/zero > \(object)/data")
        #expect(long.status != 0 && long.error.contains("Invalid argument"), "\(long.error)")
        #expect(try run("cmp", [plist.path, "\(object)/data"]).status == 0, "the value is the last one accepted")
        #expect(try sh("head -c 500000 /dev/zero > \(object)/data").status == 0, "within the range")
        try mount.unmount()
        let reference = try Self.sqlite(mount.store, "SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 4")
        #expect(
            try run("stat", ["-c", "%s", Self.externalData(mount).appendingPathComponent(reference).path]).output
                == "500000\n")
    }

    /// A value kept in a file that cannot be read (here a folder stands where the file was) is an
    /// error for what renders it (EIO), never a
    /// value without renderings (ENOENT, which says there is nothing to look for).
    @Test func aRenderingOfAValueWhoseFileCannotBeReadIsAnIOError() throws {
        let mount = try Self.store()
        defer { try? mount.unmount() }
        let reference = try Self.sqlite(mount.store, "SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 4")
        let file = Self.externalData(mount).appendingPathComponent(reference)
        try Self.writeBinaryPropertyList("{'title':'visible'}", to: file)
        try mount.mount(model: Self.model)
        let object = "\(mount.path)/Attachment/p4"
        let rendered = try run("cat", ["\(object)/data.json"])
        try #require(
            rendered.status == 0 && rendered.output.contains("visible"), "\(rendered.output) \(rendered.error)")
        // A folder where the value's file was: it is there, and it cannot be read as the value.
        try FileManager.default.removeItem(at: file)
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        let gone = try run("cat", ["\(object)/data.json"])
        #expect(gone.status != 0 && gone.error.contains("Input/output error"), "\(gone.error)")
        let renderings = try run("getfattr", ["-n", "user.attribute.renderings", "\(object)/data"])
        #expect(
            renderings.status != 0 && renderings.error.contains("Input/output error"),
            "\(renderings.output) \(renderings.error)")
    }

    /// A query folder's `.json` of large records answers EFBIG at its 64 MiB limit without reading
    /// or encoding every match first: 240 objects with a 1 MiB in-row thumbnail each (320 MiB of
    /// base64) grow the server's peak memory by far less than they hold.
    @Test func aQueryResultOfLargeRecordsStopsAtItsLimitWithoutHoldingThemAll() throws {
        let mount = try Self.store()
        defer { try? mount.unmount() }
        let inserted = try run(
            "sqlite3",
            [
                mount.store.path,
                """
                WITH RECURSIVE n(k) AS (SELECT 9 UNION ALL SELECT k + 1 FROM n WHERE k < 248)
                INSERT INTO ZATTACHMENT (Z_PK, Z_ENT, Z_OPT, ZFOLDER, ZNAME, ZTHUMBNAIL)
                SELECT k, 1, 1, 1, 'big', randomblob(1048576) FROM n;
                UPDATE Z_PRIMARYKEY SET Z_MAX = 248 WHERE Z_NAME = 'Attachment';
                """
            ])
        try #require(inserted.status == 0, "\(inserted.error)")
        try mount.mount(model: Self.model)
        let server = try Self.serverPID(mount)
        let before = try Self.peakMemory(server)
        let result = try run("cat", ["\(mount.path)/.query/Attachment/name == 'big'/.json"])
        #expect(result.status != 0 && result.error.contains("File too large"), "\(result.error)")
        let growth = (try Self.peakMemory(server) - before) / 1024
        #expect(growth < 200, "the server's peak memory grew by \(growth) MiB for a result cut at 64 MiB")
        #expect(try run("cat", ["\(mount.path)/.query/Attachment/name == 'big'/.count"]).output == "240\n")
    }

    /// A read-only mount reads a value kept in a file from that file, a READ at a time, never
    /// into memory: a (sparse) value of 1.25 GiB, past the 1 GiB read whole elsewhere, reads whole.
    @Test func aValuePastOneGiBReadsOnAReadOnlyMount() throws {
        let mount = try Self.store()
        defer { try? mount.unmount() }
        let reference = try Self.sqlite(mount.store, "SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 4")
        let file = Self.externalData(mount).appendingPathComponent(reference)
        let size = 1_342_177_280
        #expect(try sh("truncate -s \(size - 3) \(file.path) && printf END >> \(file.path)").status == 0)
        try mount.mount(options: ["ro"], model: Self.model)
        let value = "\(mount.path)/Attachment/p4/data"
        #expect(try run("stat", ["-c", "%s", value]).output == "\(size)\n")
        #expect(try run("tail", ["-c", "3", value]).output == "END")
        let server = try Self.serverPID(mount)
        let before = try Self.peakMemory(server)
        let compared = try run("timeout", ["300", "cmp", file.path, value])
        #expect(compared.status == 0, "\(compared.output) \(compared.error)")
        let growth = try Self.peakMemory(server) - before
        #expect(growth < 128 * 1024, "the server's peak memory grew by \(growth) kB reading 1.25 GiB")
    }

    /// The in-row limit is `max_value_size` (64 MiB by default, docs/SEMANTICS.md); set to 1 MiB
    /// here, as writing 64 MiB into a value held in memory takes minutes in a debug build.
    @Test func anInRowBinaryValuePastTheLimitIsEFBIG() throws {
        let mount = try Self.store()
        defer { try? mount.unmount() }
        try mount.mount(options: ["max_value_size=1"], model: Self.model)
        let before = try Self.sqlite(mount.store, "SELECT hex(ZTHUMBNAIL) FROM ZATTACHMENT WHERE Z_PK = 1")
        let result = try sh("head -c 1048577 /dev/zero > \(mount.path)/Attachment/p1/thumbnail")
        #expect(result.status != 0 && result.error.contains("File too large"), "\(result.error)")
        #expect(try sh("head -c 1048576 /dev/zero > \(mount.path)/Attachment/p2/thumbnail").status == 0, "1 MiB fits")
        // The attribute that allows external storage has no such limit.
        #expect(try sh("head -c 3145728 /dev/zero > \(mount.path)/Attachment/p3/data").status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)")
        #expect(try Self.sqlite(mount.store, "SELECT hex(ZTHUMBNAIL) FROM ZATTACHMENT WHERE Z_PK = 1") == before)
        #expect(try Self.sqlite(mount.store, "SELECT length(ZTHUMBNAIL) FROM ZATTACHMENT WHERE Z_PK = 2") == "1048576")
        let reference = try Self.sqlite(mount.store, "SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 3")
        let file = Self.externalData(mount).appendingPathComponent(reference)
        #expect(try run("stat", ["-c", "%s", file.path]).output == "3145728\n")
    }
}
