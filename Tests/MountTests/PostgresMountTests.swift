import Foundation
import ObjectGraph
import PostgresStore
import SQLiteStore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL store mounted by `storefs mount postgresql://...`, through the kernel, on a server
/// the test starts: several read-write mounts of one store, each seeing the others' commits
/// within a second; a conflicting change refused at close with EBUSY and named in
/// `user.storefs.error`; `cp -a` of a mounted store into a mount of an empty PostgreSQL store;
/// a server killed mid-write.
@Suite struct PostgresMountTests {
    /// A mount of a store URL by the storefs binary, in its own folder.
    final class URLMount {
        let url: URL
        let folder: URL
        let mountPoint: URL
        let log: URL
        private(set) var isMounted = false
        var path: String { mountPoint.path }

        /// Mounts `url`; with `namespace`, storefs runs in that network namespace (a client host of
        /// a ``HostPair``), and the mount is seen here as any other.
        init(_ url: URL, options: [String] = [], inside namespace: String? = nil) throws {
            try requireFuse()
            self.url = url
            folder = try ScratchSpace.folder("pgmount")
            mountPoint = folder.appendingPathComponent("mnt")
            log = folder.appendingPathComponent("storefs.log")
            try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
            var arguments = ["mount", url.absoluteString, mountPoint.path, "--log-file", log.path, "-v"]
            if !options.isEmpty { arguments += ["-o", options.joined(separator: ",")] }
            let command = [try storefsBinary()] + arguments
            let words = namespace.map { HostPair.inside($0, command) } ?? command
            let result = try run(words[0], Array(words.dropFirst()))
            guard result.status == 0 else {
                throw HarnessError("storefs mount \(url) failed (\(result.status)): \(result.error)\n\(logText)")
            }
            isMounted = true
        }

        @discardableResult
        func unmount() throws -> ToolResult {
            guard isMounted else { return ToolResult(status: 0, output: "", error: "") }
            let result = try run(try storefsBinary(), ["unmount", mountPoint.path])
            if result.status != 1 { isMounted = false }
            return result
        }

        var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
    }

    /// A sample store of `objects` objects migrated into a new schema of the shared server by
    /// `storefs migrate`; returns its URL.
    static func sampleStore(objects: Int, server: PostgresServer, name: String) throws -> URL {
        let folder = try ScratchSpace.folder("pgsample")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = folder.appendingPathComponent("Company.sqlite")
        #expect(try run(try storefsBinary(), ["sample", "--objects", String(objects), sqlite.path]).status == 0)
        let url = server.url(schema: PostgresServer.uniqueSchema(name))
        let migrated = try run(try storefsBinary(), ["migrate", sqlite.path, url.absoluteString])
        guard migrated.status == 0 else { throw HarnessError("storefs migrate into PostgreSQL: \(migrated.error)") }
        return url
    }

    /// Seconds until `condition` holds, polled every 20 ms; nil when it does not within `limit`.
    static func seconds(until condition: () throws -> Bool, limit: Double = 5) rethrows -> Double? {
        let started = Date()
        while Date().timeIntervalSince(started) < limit {
            if try condition() { return Date().timeIntervalSince(started) }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    func cat(_ path: String) -> String { (try? run("cat", [path]).output) ?? "" }

    @Test func eachMountSeesTheOthersCommitsWithinASecond() throws {
        let server = try PostgresServer.shared()
        let url = try Self.sampleStore(objects: 300, server: server, name: "visible")
        let info = try run(try storefsBinary(), ["info", url.absoluteString])
        #expect(
            info.status == 0 && info.output.contains("objects:  300") && info.output.contains("PostgreSQL"),
            "\(info.output)\(info.error)")
        let a = try URLMount(url)
        defer { _ = try? a.unmount() }
        let b = try URLMount(url)
        defer { _ = try? b.unmount() }
        // B holds everything in its caches first (names, attributes, pages).
        _ = try run("ls", ["-lR", b.path + "/Employee", b.path + "/Department"])
        #expect(
            !cat(b.path + "/Employee/p156/lastName").isEmpty && cat(b.path + "/Employee/p156/lastName") != "Hopper\n")
        var delays: [String: Double] = [:]

        #expect(try sh("echo Hopper > \(a.path)/Employee/p156/lastName").status == 0)
        delays["attribute"] = Self.seconds { cat(b.path + "/Employee/p156/lastName") == "Hopper\n" } ?? -1

        #expect(try run("mkdir", [a.path + "/Department/p900"]).status == 0)
        #expect(try run("sync", [a.path]).status == 0)
        delays["mkdir"] =
            Self.seconds { ((try? run("ls", [b.path + "/Department"]).lines) ?? []).contains("p900") } ?? -1

        let before = try run("readlink", [b.path + "/Employee/p157/department"]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let oldDepartment = String(before.split(separator: "/").last ?? "")
        #expect(try run("ln", ["-sfn", "../../Department/p900", a.path + "/Employee/p157/department"]).status == 0)
        delays["ln -sfn"] =
            Self.seconds {
                (try? run("readlink", [b.path + "/Employee/p157/department"]).output) == "../../Department/p900\n"
                    && !(((try? run("ls", [b.path + "/Department/\(oldDepartment)/employees"]).lines) ?? ["p157"])
                        .contains("p157"))
                    && ((try? run("ls", [b.path + "/Department/p900/employees"]).lines) ?? []) == ["p157"]
            } ?? -1

        #expect(try run("rm", ["-r", a.path + "/Employee/p158"]).status == 0)
        #expect(try run("sync", [a.path]).status == 0)
        delays["rm -r"] = Self.seconds { !FileManager.default.fileExists(atPath: b.path + "/Employee/p158") } ?? -1

        // And the other way round.
        #expect(try sh("echo Lamarr > \(b.path)/Employee/p159/lastName").status == 0)
        delays["back"] = Self.seconds { cat(a.path + "/Employee/p159/lastName") == "Lamarr\n" } ?? -1

        for (what, delay) in delays.sorted(by: { $0.key < $1.key }) {
            #expect(
                delay >= 0 && delay < 1,
                "\(what): seen by the other mount after \(delay < 0 ? "never (5 s)" : String(format: "%.2f s", delay))")
        }
        print(
            "postgresql: commits seen by the other mount after "
                + delays.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.3f", $0.value)) s" }.joined(
                    separator: ", "))
        #expect(try a.unmount().status == 0 && b.unmount().status == 0)
        #expect(!a.logText.contains("password"))
    }

    @Test func aConflictingChangeFailsAtCloseWithEBUSYAndTheObjectSaysWhy() throws {
        let server = try PostgresServer.shared()
        let url = try Self.sampleStore(objects: 100, server: server, name: "conflict")
        let a = try URLMount(url)
        defer { _ = try? a.unmount() }
        let b = try URLMount(url)
        defer { _ = try? b.unmount() }
        // Both open the same file for writing (O_TRUNC reads it as it is now); A closes first.
        let script = """
            import errno, os, sys
            a = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
            b = os.open(sys.argv[2], os.O_WRONLY | os.O_TRUNC)
            os.write(a, b"FromA\\n"); os.write(b, b"FromB\\n")
            os.close(a)
            try:
                os.close(b); print("b closed")
            except OSError as e:
                print(errno.errorcode[e.errno])
            """
        let raced = try run(
            "python3", ["-c", script, a.path + "/Employee/p7/lastName", b.path + "/Employee/p7/lastName"])
        #expect(raced.output == "EBUSY\n", "the second writer's close: \(raced.output)\(raced.error)")
        #expect(cat(b.path + "/Employee/p7/lastName") == "FromA\n", "the first writer's value is kept and shown")
        let reason = try run("getfattr", ["--only-values", "-n", "user.storefs.error", b.path + "/Employee/p7"]).output
        #expect(reason.contains("Employee p7") && reason.contains("another writer"), "user.storefs.error: \(reason)")
        // Changes of different properties of one object are not conflicts.
        let script2 = """
            import os, sys
            a = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
            b = os.open(sys.argv[2], os.O_WRONLY | os.O_TRUNC)
            os.write(a, b"Ada\\n"); os.write(b, b"Byron\\n")
            os.close(a); os.close(b); print("both closed")
            """
        let both = try run(
            "python3", ["-c", script2, a.path + "/Employee/p8/firstName", b.path + "/Employee/p8/lastName"])
        #expect(both.output == "both closed\n", "\(both.output)\(both.error)")
        let shown = Self.seconds {
            cat(a.path + "/Employee/p8/lastName") == "Byron\n" && cat(b.path + "/Employee/p8/firstName") == "Ada\n"
        }
        #expect(shown != nil, "both changes are kept and both mounts show them")
        #expect(try a.unmount().status == 0)
        #expect(try b.unmount().status == 0)
    }

    @Test func cpOfAMountedStoreIntoAnEmptyPostgresStoreGivesWhatMigrateGives() throws {
        let server = try PostgresServer.shared()
        let source = try MountedStore(objects: 300, options: ["ro"])
        defer { try? source.unmount() }
        let copied = server.url(schema: PostgresServer.uniqueSchema("copied"))
        let migrated = server.url(schema: PostgresServer.uniqueSchema("migrated"))
        #expect(try run(try storefsBinary(), ["create", "--model", "sample", copied.absoluteString]).status == 0)
        #expect(try run(try storefsBinary(), ["migrate", source.store.path, migrated.absoluteString]).status == 0)
        let target = try URLMount(copied)
        defer { _ = try? target.unmount() }
        let copy = try run("cp", ["-a", source.path + "/.", target.path + "/"])
        #expect(copy.status == 0, "cp -a: \(copy.error)")
        #expect(try run("sync", [target.path]).status == 0)
        let diff = try run("diff", ["-r", "--no-dereference", source.path, target.path])
        #expect(diff.status == 0, "diff -r of the two mounts: \(diff.output.prefix(2000))\(diff.error.prefix(2000))")
        #expect(try target.unmount().status == 0)
        #expect(!target.logText.contains(" error "), "the copy logged no error: \(target.logText.suffix(1500))")
        let types: [any PersistentStoreType] = [SQLiteStoreType(), PostgresStoreType()]
        func open(_ url: URL) throws -> PersistentStoreCoordinator {
            try PersistentStoreCoordinator.open(at: url, types: types, options: StoreOptions(readOnly: true))
        }
        let original = try open(source.store)
        let byCopy = try open(copied)
        let byMigrate = try open(migrated)
        defer { [original, byCopy, byMigrate].forEach { $0.close() } }
        try CopyMigrationTests().expectSameGraph(original.store, byCopy.store, "cp -a into PostgreSQL")
        try CopyMigrationTests().expectSameGraph(
            byMigrate.store, byCopy.store, "cp -a and storefs migrate into PostgreSQL")
    }

    @Test func aServerKilledMidWriteFailsAtFsyncWithEIOAndLosesNothingAcknowledged() throws {
        let server = try PostgresServer(name: "killed")
        defer { server.remove() }
        let folder = try ScratchSpace.folder("pgkilled")
        let sqlite = folder.appendingPathComponent("Company.sqlite")
        #expect(try run(try storefsBinary(), ["sample", "--objects", "100", sqlite.path]).status == 0)
        let url = server.url(schema: "killed")
        #expect(try run(try storefsBinary(), ["migrate", sqlite.path, url.absoluteString]).status == 0)
        let mount = try URLMount(url)
        defer { _ = try? mount.unmount() }
        /// Writes `value` to p`key`'s lastName and fsyncs it; the errno name, or "ok".
        func write(_ key: Int, _ value: String) throws -> String {
            let script = """
                import errno, os, sys
                try:
                    f = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC); os.write(f, sys.argv[2].encode() + b"\\n"); os.fsync(f); os.close(f); print("ok")
                except OSError as e:
                    print(errno.errorcode[e.errno])
                """
            return try run("timeout", ["60", "python3", "-c", script, "\(mount.path)/Employee/p\(key)/lastName", value])
                .output
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for key in 1...5 { #expect(try write(key, "Acknowledged\(key)") == "ok") }
        #expect(cat(mount.path + "/Employee/p6/lastName").count > 1, "p6 is in the mount's caches")
        try server.stop(mode: "immediate")
        let started = Date()
        #expect(try write(6, "NotSaved") == "EIO", "a write whose commit cannot reach the server fails at fsync")
        #expect(Date().timeIntervalSince(started) < 45, "within the statement and connect timeouts")
        let held = cat(mount.path + "/Employee/p6/lastName")
        #expect(held.count > 1 && held != "NotSaved\n", "reads answer from what the mount holds: \(held)")
        try server.start()
        #expect(try write(7, "AfterRestart") == "ok", "the mount reconnects by itself")
        #expect(try mount.unmount().status == 0)
        let store = try PersistentStoreCoordinator.open(
            at: url, types: [PostgresStoreType()], options: StoreOptions(readOnly: true))
        defer { store.close() }
        let context = store.newContext()
        let employee = store.model.entityID(named: "Employee")!
        func stored(_ key: Int) throws -> AttributeValue? {
            // Employee/pN may be a manager (a subentity): the folder is a link to Manager/pN.
            let id = try #require(try context.objectID(forKey: PrimaryKey(Int64(key)), in: employee))
            return try context.value(of: "lastName", for: id)
        }
        for key in 1...5 { #expect(try stored(key) == .string("Acknowledged\(key)"), "acknowledged write \(key) kept") }
        #expect(try stored(6) != .string("NotSaved"), "the write that failed was not saved later either")
        #expect(try stored(7) == .string("AfterRestart"))
    }
}

/// `CorpusWriteAcceptanceTests`' four edits (a string, mkdir, `ln -sfn`, `rm -r`) through a mount
/// of each corpus store migrated into PostgreSQL: the app's real model and data, written by
/// storefs into Core Data's schema on the server, edited as a developer would, and read back.
@Suite struct PostgresCorpusWriteTests {
    @Test(arguments: Corpus.names(in: "sqlite") { $0.hasSuffix(".sqlite") || $0.hasSuffix(".store") })
    func corpusStoreEditedThroughAMountOfItsPostgreSQLCopy(_ name: String) throws {
        let server = try PostgresServer.shared()
        let folder = try ScratchSpace.folder("pgcorpus")
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent(name)
        for suffix in ["", "-wal"]
        where FileManager.default.fileExists(atPath: Corpus.url("sqlite/\(name)").path + suffix) {
            try FileManager.default.copyItem(
                atPath: Corpus.url("sqlite/\(name)").path + suffix, toPath: copy.path + suffix)
        }
        let (plan, sqliteModel) = try CorpusWriteAcceptanceTests.plan(for: copy)
        let url = server.url(schema: PostgresServer.uniqueSchema("corpus"))
        let migrated = try run(try storefsBinary(), ["migrate", copy.path, url.absoluteString])
        #expect(migrated.status == 0, "storefs migrate into PostgreSQL: \(migrated.error)")
        guard migrated.status == 0 else { return }
        let types: [any PersistentStoreType] = [PostgresStoreType()]
        func open() throws -> PersistentStoreCoordinator {
            try PersistentStoreCoordinator.open(at: url, types: types, options: StoreOptions(readOnly: true))
        }
        let model: ManagedObjectModel
        var countBefore: Int?
        var versionBefore: Int64?
        do {
            let before = try open()
            defer { before.close() }
            model = before.model
            #expect(
                model.entities.map(\.name) == sqliteModel.entities.map(\.name),
                "the model kept in the store is the app's")
            countBefore = try plan.insert.map { try before.newContext().count(of: $0) }
            versionBefore = try plan.string.map { try before.newContext().version(of: $0.object) }
        }
        let mount = try PostgresMountTests.URLMount(url)
        defer { _ = try? mount.unmount() }
        func folderOf(_ id: ObjectID) -> String { "\(mount.path)/\(model[id.entity].name)/\(id.key)" }
        var edits: [String] = []
        if let (object, attribute) = plan.string {
            #expect(try sh("printf 'storefs edit\\n' > \(folderOf(object))/\(attribute)").status == 0)
            edits.append("string")
        }
        if let entity = plan.insert {
            #expect(try run("mkdir", ["\(mount.path)/\(model[entity].name)/new"]).status == 0)
            edits.append("mkdir")
        }
        if let (object, relationship, destination) = plan.relink {
            #expect(
                try run(
                    "ln",
                    [
                        "-sfn", "../../\(model[destination.entity].name)/\(destination.key)",
                        "\(folderOf(object))/\(relationship)"
                    ]
                ).status == 0)
            edits.append("ln -sfn")
        }
        if let object = plan.delete {
            let removed = try run("rm", ["-r", folderOf(object)])
            #expect(removed.status == 0, "\(removed.error)")
            edits.append("rm -r")
        }
        let status = try mount.unmount()
        #expect(status.status == 0, "\(name): \(status.error)\n\(mount.logText.suffix(1500))")
        print("postgresql corpus write \(name): \(edits.joined(separator: ", "))")
        let hasToOne = model.entities.contains { $0.persistentRelationships.contains { !$0.isToMany } }
        #expect(edits.count == (hasToOne ? 4 : 3), "\(name): found edits \(edits)")
        let check = try open()
        defer { check.close() }
        let context = check.newContext()
        try CorpusWriteAcceptanceTests.expectEdits(
            plan, in: context, countBefore: countBefore, versionBefore: versionBefore)
        // Every save left a history transaction naming what it changed.
        let history = try #require(check.store as? PostgresStore).persistentHistory()
        #expect(!history.isEmpty, "the edits are in the store's persistent history")
    }
}
