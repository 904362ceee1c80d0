import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
@testable import StoreFS
import Testing

/// Reading a mounted sample store with the ordinary tools, checked against what the engine holds:
/// what needs the kernel (request counts, read-only opens, concurrent readers, the page cache,
/// corpus stores walked by find and cat). What the mapping lists and reads is kernel-free in
/// StoreFSTests' ReadMappingTests.
@Suite(.serialized) struct ReadPathTests {
    @Test func findGrepDuAndGetfattrWork() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let engine = try mount.engine()
        let context = engine.newContext()
        let model = engine.model
        var folders = 0
        for entity in model.entities { folders += try context.count(of: entity.id) }
        #expect(try run("find", [mount.path, "-mindepth", "2", "-maxdepth", "2", "-type", "d"]).lines.count == folders)
        let lovelaces = try context.objectIDs(of: model.entityID(named: "Employee")!, includingSubentities: true).filter
        {
            try context.value(of: "lastName", for: $0) == .string("Lovelace")
        }
        #expect(!lovelaces.isEmpty)
        let grep = try run("grep", ["-rlx", "Lovelace", "\(mount.path)/Employee", "\(mount.path)/Manager"]).lines
        #expect(Set(grep) == Set(lovelaces.map { "\(mount.path)/\(model[$0.entity].name)/\($0.key)/lastName" }))
        #expect(try run("du", ["-s", mount.path]).status == 0)
        let metadata = try engine.store.metadata()
        let root = try run("getfattr", ["-d", "--absolute-names", mount.path]).output
        #expect(root.contains("user.NSStoreType=\"SQLite\""))
        #expect(root.contains("user.NSStoreUUID=\"\(metadata.storeUUID!)\""))
        let object = try run("getfattr", ["-d", "--absolute-names", "\(mount.path)/Department/p1"]).output
        #expect(object.contains("user.object.uri=\"x-coredata://\(metadata.storeUUID!)/Department/p1\""))
        #expect(object.contains("user.object.version=\"1\""))
        let entity = try run("getfattr", ["-d", "--absolute-names", "\(mount.path)/Manager"]).output
        #expect(entity.contains("user.entity.parent=\"Employee\""))
        #expect(entity.contains("user.entity.count=\"\(try context.count(of: model.entityID(named: "Manager")!))\""))
        let attribute = try run(
            "getfattr", ["--only-values", "-n", "user.attribute.type", "\(mount.path)/Department/p1/budget"])
        #expect(attribute.output == "Decimal")
        let unknown = try run("getfattr", ["-n", "user.no.such.name", mount.path])
        #expect(unknown.status != 0 && unknown.error.contains("No such attribute"))
        // No security labels and no ACLs, said as such (so ls -l stops asking: next test).
        for name in ["security.selinux", "system.posix_acl_access"] {
            let label = try run("getfattr", ["-n", name, "\(mount.path)/Department/p1/budget"])
            #expect(label.status != 0 && label.error.contains("Operation not supported"), "\(name): \(label.error)")
        }
    }

    @Test func listingAndReadingEveryObjectCostsOneQueryPerBatch() throws {
        let mount = try MountedStore(objects: 2_000)
        defer { try? mount.unmount() }
        let before = try mount.storeRequests()
        let lookups = try mount.fuseCount("lookup")
        let getxattrs = try mount.fuseCount("getxattr")
        let count = try run("ls", ["-l", "\(mount.path)/Employee"]).lines.count - 1
        #expect(count == 1_700)
        #expect(try mount.fuseCount("lookup") - lookups < 5, "readdirplus spares the per-entry lookups of ls -l")
        let asked = try mount.fuseCount("getxattr") - getxattrs
        #expect(asked < 10, "ls -l asks for labels and ACLs once per mount, not per entry: \(asked) GETXATTR")
        let cat = try sh("cat \(mount.path)/Employee/*/lastName | wc -l")
        #expect(cat.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1700")
        let requests = try mount.storeRequests() - before
        let batch = EngineConfiguration().batchSize
        // One fault per batch, and a few fixed costs: among them the highest key of the entity's
        // tree, asked once at the first lookup of a name not yet read (KeyBounds).
        #expect(
            requests <= (count + batch - 1) / batch + 5,
            "\(requests) store requests for listing and reading \(count) objects")
    }

    @Test func readOnlyMountsRefuseWritesAndLeaveTheFileAsItWas() throws {
        let mount = try MountedStore(objects: 300, mount: false)
        let before = try run("sha256sum", [mount.store.path]).output.prefix(64)
        try mount.mount(options: ["ro"])
        defer { try? mount.unmount() }
        _ = try run("find", [mount.path])
        let reads = try mount.fuseCount("read")
        #expect(try sh("cat \(mount.path)/Employee/*/lastName > /dev/null").status == 0)
        let listed = try run("ls", ["\(mount.path)/Employee"]).lines.count
        #expect(try listed > 0 && mount.fuseCount("read") - reads >= listed, "every value was read through the mount")
        // Files and folders of a read-only mount open without a round trip: the first OPEN is
        // answered ENOSYS (the kernel's "never ask again"), then cat costs READ alone.
        #expect(try mount.fuseCount("open") <= 1)
        #expect(try mount.fuseCount("release") == 0)
        #expect(try mount.fuseCount("flush") <= 1)
        // Directories too: find listed every folder without OPENDIR and RELEASEDIR.
        #expect(try mount.fuseCount("opendir") <= 1)
        #expect(try mount.fuseCount("releasedir") == 0)
        #expect(try mount.fuseCount("readdirplus") > listed, "every folder was listed through the mount")
        let attempts = [
            "echo x > \(mount.path)/Department/p1/name",
            "mkdir \(mount.path)/Department/p900",
            "rm \(mount.path)/Department/p1/code",
            "rm -r \(mount.path)/Milestone/p1",
            "ln -s ../../Department/p2 \(mount.path)/Project/p1/department",
            "setfattr -n user.note -v hi \(mount.path)",
            "touch \(mount.path)/Department/p1/newfile",
            "truncate -s 0 \(mount.path)/Department/p1/name"
        ]
        for command in attempts {
            let result = try sh(command)
            #expect(result.status != 0 && result.error.contains("Read-only file system"), "\(command): \(result.error)")
        }
        try mount.unmount()
        #expect(try run("sha256sum", [mount.store.path]).output.prefix(64) == before)
    }

    @Test func storesFromTheCorpusMountReadOnlyAndWalkEntirely() throws {
        let corpus = Corpus.directory
        let stores = try FileManager.default.contentsOfDirectory(atPath: corpus.appendingPathComponent("sqlite").path)
            .filter { $0.hasSuffix(".sqlite") }.sorted()
        #expect(stores.count >= 9)
        let wibosco = "wibosco_CoreDataMigration-Example_CoreDataMigration_Example"
        let models: [String: String] = [
            "alemar11_CoreDataPlus_SampleModel_V1.sqlite":
                "alemar11_CoreDataPlus_SampleModel.xcdatamodeld/SampleModel.xcdatamodel",
            "alemar11_CoreDataPlus_SampleModel_V2.sqlite":
                "alemar11_CoreDataPlus_SampleModel.xcdatamodeld/SampleModel2.xcdatamodel",
            "alemar11_CoreDataPlus_SampleModel3_V1.sqlite":
                "alemar11_CoreDataPlus_SampleModel3.xcdatamodeld/SampleModel3.xcdatamodel",
            "\(wibosco)_1.sqlite": "\(wibosco).xcdatamodeld/CoreDataMigration_Example.xcdatamodel",
            "\(wibosco)_2.sqlite": "\(wibosco).xcdatamodeld/CoreDataMigration_Example 2.xcdatamodel",
            "\(wibosco)_3.sqlite": "\(wibosco).xcdatamodeld/CoreDataMigration_Example 3.xcdatamodel",
            "\(wibosco)_WAL.sqlite": "\(wibosco).xcdatamodeld/CoreDataMigration_Example 4.xcdatamodel"
        ]
        for name in stores {
            let withModel = models[name].map { [corpus.appendingPathComponent("models/\($0)").path] } ?? []
            for model in [nil] + withModel {
                let mount = try MountedStore(copying: corpus.appendingPathComponent("sqlite/\(name)"), mount: false)
                try mount.mount(options: ["ro"], model: model)
                defer { try? mount.unmount() }
                let engine = try mount.engine(
                    model: model.map { try XcodeModelLoader.load(from: URL(fileURLWithPath: $0)) })
                var objects = 0
                for entity in engine.model.entities { objects += try engine.store.count(of: entity.id) }
                let folders = try run("find", [mount.path, "-mindepth", "2", "-maxdepth", "2", "-type", "d"]).lines
                    .count
                #expect(folders == objects, "\(name) with model \(model ?? "none")")
                let walk = try sh("find \(mount.path) -type f -print0 | xargs -0 -r cat > /dev/null")
                #expect(walk.status == 0, "\(name): \(walk.error)\n\(mount.logText.suffix(2000))")
            }
        }
    }
    /// Read-only mounts keep one listing per directory for every reader: four processes listing
    /// the same large directories at once each get all of it.
    @Test func concurrentReadersOfAReadOnlyMountEachSeeTheWholeListing() throws {
        let mount = try MountedStore(objects: 2_000, options: ["ro"])
        defer { try? mount.unmount() }
        let engine = try mount.engine()
        let context = engine.newContext()
        for entity in ["Employee", "Person"] {
            let id = try #require(engine.model.entityID(named: entity))
            let expected = try context.objectIDs(of: id, includingSubentities: true).map(\.key.description).sorted()
            let folder = mount.directory.path
            let script =
                (1...4).map { "ls -U \(mount.path)/\(entity) > \(folder)/list\($0) &" }.joined(separator: " ") + " wait"
            #expect(try sh(script).status == 0)
            for reader in 1...4 {
                let listed = try String(contentsOfFile: "\(folder)/list\(reader)", encoding: .utf8)
                    .split(separator: "\n").map(String.init).sorted()
                #expect(listed == expected, "reader \(reader) of \(entity)")
            }
        }
    }

    /// A read-only folder-of-stores mount keeps its root listing like any other, and still shows a
    /// store file added to the folder afterwards (the root carries the folder's time).
    @Test func aReadOnlyFolderMountShowsStoreFilesAddedLater() throws {
        let prepared = try MountedStore(objects: 100, mount: false)
        let stores = prepared.directory.appendingPathComponent("stores")
        try FileManager.default.createDirectory(at: stores, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: prepared.store, to: stores.appendingPathComponent("A.sqlite"))
        let mountPoint = prepared.directory.appendingPathComponent("folder")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let log = prepared.directory.appendingPathComponent("folder.log").path
        #expect(
            try run(try storefsBinary(), ["mount", stores.path, mountPoint.path, "-o", "ro", "--log-file", log]).status
                == 0)
        defer { _ = try? run("fusermount3", ["-u", "-z", mountPoint.path]) }
        #expect(try run("ls", [mountPoint.path]).lines == ["A.sqlite"])
        #expect(try run("ls", [mountPoint.path]).lines == ["A.sqlite"], "listed again (from the kernel's cache)")
        try FileManager.default.copyItem(at: prepared.store, to: stores.appendingPathComponent("B.sqlite"))
        var listed: [String] = []
        for _ in 0..<30 {
            listed = try run("ls", [mountPoint.path]).lines
            if listed.count == 2 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(listed == ["A.sqlite", "B.sqlite"], "the new store shows within the root's 1 s attribute lifetime")
        #expect(try run("ls", [mountPoint.path + "/B.sqlite/Department"]).status == 0)
    }
}
