import Foundation
import ObjectGraph
import PostgresStore
import SQLiteStore
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A tool run on a thread of its own while the test goes on (a write that waits for a stalled
/// save), collected later.
final class BackgroundTool: Sendable {
    private let result = Mutex<ToolResult?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ executable: String, _ arguments: [String], timeout: TimeInterval = 120) {
        Thread { [self] in
            let output =
                (try? runTool(executable, arguments, timeout: timeout)).map {
                    ToolResult(status: $0.status, output: $0.output, error: $0.error)
                } ?? ToolResult(status: -1, output: "", error: "\(executable) did not run")
            result.withLock { $0 = output }
            done.signal()
        }.start()
    }

    /// Its output, waiting at most `seconds` for it; nil if it has not ended by then.
    func wait(seconds: Double) -> ToolResult? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        done.signal()
        return result.withLock { $0 }
    }
}

/// A mount whose save waits (a PostgreSQL server stopped with SIGSTOP, then killed; an SQLite
/// store another process holds locked) keeps answering: reads of what it loaded come from
/// memory at once, edits of other objects go on and are saved when the store answers again,
/// and what cannot be saved is refused at fsync or close (ObjectContext+Saving.swift).
@Suite(.serialized) struct StalledSaveMountTests {
    /// A write of `value` to `path` through one descriptor, as a user's program makes it: it
    /// prints how long open+write took ("written SECONDS"), then fsyncs when asked, closes, and
    /// prints "ok" or the errno's name.
    static let writer = """
        import errno, os, sys, time
        path, value, sync = sys.argv[1], sys.argv[2], sys.argv[3] == "fsync"
        started = time.monotonic()
        try:
            f = os.open(path, os.O_WRONLY | os.O_TRUNC)
            os.write(f, value.encode() + b"\\n")
            print("written %.3f" % (time.monotonic() - started), flush=True)
            if sync:
                os.fsync(f)
            os.close(f)
            print("ok")
        except OSError as e:
            print(errno.errorcode[e.errno])
        """

    static func write(_ path: String, _ value: String, fsync: Bool) -> BackgroundTool {
        BackgroundTool("timeout", ["90", "python3", "-c", writer, path, value, fsync ? "fsync" : "close"])
    }

    /// Seconds one read of `path` takes through the kernel (open, read to the end, close); nil
    /// when it failed.
    static func timedRead(_ path: String) -> (seconds: Double, text: String)? {
        let started = Date()
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return (Date().timeIntervalSince(started), String(decoding: data, as: UTF8.self))
    }

    /// Object folders of `entity` in a mount, by name: folders, not the links to objects of its
    /// subentities.
    static func objects(_ mount: String, _ entity: String) throws -> [String] {
        try run("find", [mount + "/" + entity, "-mindepth", "1", "-maxdepth", "1", "-type", "d", "-printf", "%f\n"])
            .lines.sorted { $0.count == $1.count ? $0 < $1 : $0.count < $1.count }
    }

    /// The stored lastName of the Employee folders `names` (`pN`), read back from the store.
    static func lastNames(of names: [String], in url: URL, type: any PersistentStoreType) throws -> [AttributeValue?] {
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [type], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let employee = coordinator.model.entityID(named: "Employee")!
        return try names.map { name in
            try context.objectID(forKey: PrimaryKey(Int64(name.dropFirst()) ?? 0), in: employee).flatMap {
                try context.value(of: "lastName", for: $0)
            }
        }
    }

    /// Seconds each first read of a loaded Employee's lastName takes, each expected to answer with
    /// text `while` the store does not.
    static func readLoaded(_ loaded: [String], in mount: String, while what: String) -> [Double] {
        loaded.map { name in
            let read = timedRead("\(mount)/Employee/\(name)/lastName")
            #expect(read != nil && read?.text.isEmpty == false, "a loaded object reads while \(what)")
            return read?.seconds ?? 99
        }
    }

    /// Seconds `ls -l` of the first five loaded objects' folders takes, each expected to list
    /// `while` the store does not answer. Not the entity's folder: a listing of an entity asks
    /// the store which objects it holds (ObjectContext.objectIDs(of:)), so it answers in an outage
    /// only while the kernel still caches it, which a loaded machine's timing decides.
    static func listLoaded(_ loaded: [String], in mount: String, while what: String) throws -> [Double] {
        try loaded.prefix(5).map { "Employee/\($0)" }.map { folder in
            let started = Date()
            let listed = try run("timeout", ["30", "ls", "-l", "\(mount)/\(folder)"])
            #expect(listed.status == 0 && !listed.output.isEmpty, "ls \(folder) while \(what): \(listed.error)")
            return Date().timeIntervalSince(started)
        }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? -1 : sorted[sorted.count / 2]
    }

    @Test func aServerStoppedMidSaveFreezesNoReadOfWhatTheMountHolds() throws {
        let server = try PostgresServer(name: "stalled")
        defer { server.remove() }
        let folder = try ScratchSpace.folder("pgstalled")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = folder.appendingPathComponent("Company.sqlite")
        #expect(try run(try storefsBinary(), ["sample", "--objects", "300", sqlite.path]).status == 0)
        // A statement timeout of 10 s: what a read that needs the server may take in an outage.
        let url = URL(string: server.url(schema: "stalled").absoluteString + "&timeout=10")!
        #expect(try run(try storefsBinary(), ["migrate", sqlite.path, url.absoluteString]).status == 0)
        let mount = try PostgresMountTests.URLMount(url)
        defer { _ = try? mount.unmount() }
        let employees = try Self.objects(mount.path, "Employee").filter { $0.hasPrefix("p") }
        #expect(employees.count > 40)
        // Rows loaded (every object folder listed with its files' sizes), files never read: a
        // read of them reaches storefs, not only the kernel's page cache.
        let loaded = Array(employees[10..<40])
        #expect(try run("ls", ["-l"] + loaded.map { "\(mount.path)/Employee/\($0)" }).status == 0)
        // The edit is of another loaded object: one whose row the mount must fetch would wait for
        // the server as any read that needs it does.
        let (saved, edited) = (employees[0], loaded[loaded.count - 1])

        try server.signalAll(SIGSTOP)
        var stopped = true
        defer { if stopped { try? server.signalAll(SIGCONT) } }
        let stalled = Self.write("\(mount.path)/Employee/\(saved)/lastName", "Stalled", fsync: true)
        Thread.sleep(forTimeInterval: 1)
        #expect(stalled.wait(seconds: 0) == nil, "the save waits for the stopped server")

        let latencies = Self.readLoaded(loaded, in: mount.path, while: "the save waits")
        // Listings of what the mount holds answer too: loaded objects' folders.
        let listings = try Self.listLoaded(loaded, in: mount.path, while: "the save waits")
        #expect((listings.max() ?? 99) < 2, "listings while the save waits: \(listings)")
        let edit = Self.write("\(mount.path)/Employee/\(edited)/lastName", "Edited", fsync: false)
        let writtenLine = edit.wait(seconds: 3)?.output ?? "(still waiting at close)"
        Thread.sleep(forTimeInterval: 1)
        print(
            "stalled save: \(latencies.count) reads of loaded objects, median \(String(format: "%.1f", Self.median(latencies) * 1000)) ms, "
                + "max \(String(format: "%.1f", (latencies.max() ?? 0) * 1000)) ms; ls max \(String(format: "%.1f", (listings.max() ?? 0) * 1000)) ms; "
                + "edit of another object: \(writtenLine)"
        )
        // Far below the 10 s the save waits (before: each read waited for it, up to 59 s).
        #expect((latencies.max() ?? 99) < 2, "reads of loaded objects: \(latencies)")

        try server.signalAll(SIGCONT)
        stopped = false
        let first = stalled.wait(seconds: 30)
        #expect(
            first?.output.hasSuffix("ok\n") == true,
            "the stalled save commits once the server answers: \(first?.output ?? "none")")
        let second = edit.wait(seconds: 30)
        // Opened and written at once; only its close, which commits, waited for the server.
        let writeSeconds = second?.output.split(separator: "\n").first.flatMap {
            $0.hasPrefix("written ") ? Double($0.dropFirst(8)) : nil
        }
        #expect(
            (writeSeconds ?? 99) < 2, "the edit was written without waiting: \(second?.output ?? "none")")
        #expect(
            second?.output.hasSuffix("ok\n") == true, "the edit made meanwhile is saved: \(second?.output ?? "none")")

        // Stopped again, then killed: a save that cannot finish fails at fsync with EIO; a read
        // that needs the server fails within the statement timeout; loaded objects still read.
        let notLoaded = try Self.objects(mount.path, "Milestone").filter { $0.hasPrefix("p") }.last ?? "p1"
        try server.signalAll(SIGSTOP)
        stopped = true
        let doomed = Self.write("\(mount.path)/Employee/\(employees[2])/lastName", "NotSaved", fsync: true)
        Thread.sleep(forTimeInterval: 1)
        let stillRead = Self.timedRead("\(mount.path)/Employee/\(loaded[0])/lastName")
        #expect(stillRead.map { $0.seconds < 2 } == true)
        let started = Date()
        let needsServer = try run("timeout", ["60", "cat", "\(mount.path)/Milestone/\(notLoaded)/title"])
        let waited = Date().timeIntervalSince(started)
        #expect(needsServer.status != 0 && needsServer.error.contains("Input/output error"), "\(needsServer)")
        #expect(waited < 30, "a read that needs the server fails within the statement timeout: \(waited) s")
        try server.killAll()
        stopped = false
        let failed = doomed.wait(seconds: 60)
        #expect(
            failed?.output.hasSuffix("EIO\n") == true,
            "a save that never reaches the server fails at fsync: \(failed?.output ?? "none")")
        #expect(Self.timedRead("\(mount.path)/Employee/\(loaded[1])/lastName") != nil)

        try server.start()
        let after = Self.write("\(mount.path)/Employee/\(employees[3])/lastName", "AfterRestart", fsync: true)
        #expect(after.wait(seconds: 60)?.output.hasSuffix("ok\n") == true, "the mount reconnects by itself")
        #expect(try mount.unmount().status == 0)

        let values = try Self.lastNames(
            of: [saved, edited, employees[2], employees[3]], in: url, type: PostgresStoreType())
        #expect(values[0] == .string("Stalled") && values[1] == .string("Edited"))
        #expect(values[2] != .string("NotSaved") && values[3] == .string("AfterRestart"))
    }

    @Test func anSQLiteStoreLockedByAnotherProcessFreezesNoReadOfWhatTheMountHolds() throws {
        let mounted = try MountedStore(objects: 300)
        defer { try? mounted.unmount() }
        let mount = mounted.path
        let employees = try Self.objects(mount, "Employee").filter { $0.hasPrefix("p") }
        let loaded = Array(employees[10..<40])
        #expect(try run("ls", ["-l"] + loaded.map { "\(mount)/Employee/\($0)" }).status == 0)
        // Another process holds the store's write lock for 6 s (its busy wait is 10 s).
        let ready = mounted.directory.appendingPathComponent("locked")
        let holder = BackgroundTool(
            "timeout",
            [
                "60", "python3", "-c",
                """
                import sqlite3, sys, time, pathlib
                db = sqlite3.connect(sys.argv[1], isolation_level=None)
                db.execute("BEGIN EXCLUSIVE")
                pathlib.Path(sys.argv[2]).touch()
                time.sleep(6)
                db.execute("COMMIT")
                print("released")
                """,
                mounted.store.path, ready.path
            ])
        let locked = PostgresMountTests.seconds(until: { FileManager.default.fileExists(atPath: ready.path) }) != nil
        #expect(locked, "the other process took the lock")
        let stalled = Self.write("\(mount)/Employee/\(employees[0])/lastName", "Stalled", fsync: true)
        Thread.sleep(forTimeInterval: 1)
        #expect(stalled.wait(seconds: 0) == nil, "the save waits for the lock")
        var latencies: [Double] = []
        for name in loaded {
            latencies.append(Self.timedRead("\(mount)/Employee/\(name)/lastName")?.seconds ?? 99)
        }
        let edit = Self.write("\(mount)/Employee/\(employees[1])/lastName", "Edited", fsync: false)
        let edited = edit.wait(seconds: 3)
        print(
            "sqlite store locked by another process: median read \(String(format: "%.1f", Self.median(latencies) * 1000)) ms, "
                + "max \(String(format: "%.1f", (latencies.max() ?? 0) * 1000)) ms; edit: \(edited?.output ?? "waiting")"
        )
        #expect((latencies.max() ?? 99) < 2, "reads of loaded objects: \(latencies)")
        #expect(
            edited?.output.hasSuffix("ok\n") == true, "an edit of another object goes on: \(edited?.output ?? "none")")
        #expect(holder.wait(seconds: 30)?.output == "released\n")
        let through = stalled.wait(seconds: 30)
        #expect(
            through?.output.hasSuffix("ok\n") == true,
            "the save goes through after the lock: \(through.map { "\($0.status) \($0.output.debugDescription) \($0.error.debugDescription)" } ?? "none")\n\(mounted.logText.suffix(3000))"
        )
        #expect(try run("sync", [mount]).status == 0)
        #expect(try mounted.unmountReportingStatus().status == 0)
        let values = try Self.lastNames(of: [employees[0], employees[1]], in: mounted.store, type: SQLiteStoreType())
        #expect(values == [.string("Stalled"), .string("Edited")])
    }
}
