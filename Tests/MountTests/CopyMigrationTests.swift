import BinaryStore
import Foundation
import ObjectGraph
import SQLiteStore
import Testing
import XMLStore

/// Migration by copying: `cp -a` of a mounted store into a mount of an empty store of another
/// type rebuilds the same graph as `storefs migrate`, links to objects not yet copied included.
@Suite(.serialized) struct CopyMigrationTests {
    static let types: [any PersistentStoreType] = [SQLiteStoreType(), XMLStoreType(), BinaryStoreType()]

    func open(_ url: URL) throws -> PersistentStoreCoordinator {
        try PersistentStoreCoordinator.open(at: url, types: Self.types, options: StoreOptions(readOnly: true))
    }

    /// With `listFetched` both mounts list fetched properties' folders: cp -a then copies their
    /// links too, and the target takes them as the computed folders they are.
    @Test(arguments: [("xml", false), ("binary", false), ("sqlite", true)])
    func cpIntoAnEmptyStoreOfAnotherTypeGivesWhatMigrateGives(_ suffix: String, listFetched: Bool) throws {
        let extra = listFetched ? ["list_fetched"] : []
        let source = try MountedStore(objects: 300, options: ["ro"] + extra)
        defer { try? source.unmount() }
        let folder = source.directory
        let copied = folder.appendingPathComponent("Copied.\(suffix)")
        let migrated = folder.appendingPathComponent("Migrated.\(suffix)")
        #expect(try run(try storefsBinary(), ["create", "--model", "sample", copied.path]).status == 0)
        let migrate = try run(try storefsBinary(), ["migrate", source.store.path, migrated.path])
        #expect(migrate.status == 0, "\(migrate.error)")

        let target = folder.appendingPathComponent("target")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        let log = folder.appendingPathComponent("target.log").path
        let targetOptions = listFetched ? ["-o", "list_fetched"] : []
        #expect(
            try run(try storefsBinary(), ["mount", copied.path, target.path, "--log-file", log] + targetOptions).status
                == 0)
        let copy = try run("cp", ["-a", source.path + "/.", target.path + "/"])
        #expect(copy.status == 0, "cp -a: \(copy.error)")
        // The copy is done: `sync` says so (every copied folder settles and is committed). Without
        // it, a fetched folder may differ for the two seconds its folder takes to settle
        // (docs/SEMANTICS.md, Known limits).
        #expect(try run("sync", [target.path]).status == 0)
        let diff = try run("diff", ["-r", "--no-dereference", source.path, target.path])
        #expect(diff.status == 0, "diff -r of the two mounts: \(diff.output.prefix(2000))\(diff.error.prefix(2000))")
        #expect(try run("fusermount3", ["-u", target.path]).status == 0)
        for _ in 0..<200 where (try? run("pgrep", ["-f", "storefs mount \(copied.path)"]).status) == 0 {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let logText = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(!logText.contains(" error "), "the copy logged no error: \(logText.suffix(1500))")

        let original = try open(source.store)
        let byCopy = try open(copied)
        let byMigrate = try open(migrated)
        defer { [original, byCopy, byMigrate].forEach { $0.close() } }
        try expectSameGraph(original.store, byCopy.store, "cp -a into .\(suffix)")
        try expectSameGraph(byMigrate.store, byCopy.store, "cp -a and storefs migrate")
        #expect(try byCopy.store.metadata().storeType == byMigrate.store.metadata().storeType)
    }

    @Test func copyingAStoreFolderInAFolderMountMakesANewStoreByMigration() throws {
        let prepared = try MountedStore(objects: 300, mount: false)
        let stores = prepared.directory.appendingPathComponent("stores")
        try FileManager.default.createDirectory(at: stores, withIntermediateDirectories: true)
        let library = stores.appendingPathComponent("Library.sqlite")
        try FileManager.default.copyItem(at: prepared.store, to: library)
        let mountPoint = prepared.directory.appendingPathComponent("folder")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let log = prepared.directory.appendingPathComponent("folder.log").path
        #expect(try run(try storefsBinary(), ["mount", stores.path, mountPoint.path, "--log-file", log]).status == 0)
        var mounted = true
        defer { if mounted { _ = try? run("fusermount3", ["-u", "-z", mountPoint.path]) } }
        #expect(try run("ls", [mountPoint.path]).lines == ["Library.sqlite"])
        let copy = try run("cp", ["-a", mountPoint.path + "/Library.sqlite", mountPoint.path + "/Library.xml"])
        #expect(copy.status == 0, "\(copy.error)")
        #expect(try run("ls", [mountPoint.path]).lines == ["Library.sqlite", "Library.xml"])
        let diff = try run(
            "diff", ["-r", "--no-dereference", mountPoint.path + "/Library.sqlite", mountPoint.path + "/Library.xml"])
        #expect(diff.status == 0, "\(diff.output.prefix(2000))")
        #expect(try run("fusermount3", ["-u", mountPoint.path]).status == 0)
        mounted = false
        for _ in 0..<200 where (try? run("pgrep", ["-f", "storefs mount \(stores.path)"]).status) == 0 {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let xml = stores.appendingPathComponent("Library.xml")
        #expect(FileManager.default.fileExists(atPath: xml.path), "the folder holds the new store file")
        let original = try open(library)
        let migrated = try open(xml)
        defer { [original, migrated].forEach { $0.close() } }
        try expectSameGraph(original.store, migrated.store, "cp -a in a folder mount")
        #expect(try migrated.store.metadata().storeType == "XML")
    }

    /// The same objects, keys, values bit for bit, to-ones, and to-manys (ordered ones in order).
    func expectSameGraph(_ a: any PersistentStore, _ b: any PersistentStore, _ what: String) throws {
        let model = a.model
        for entity in model.entities {
            let idsA = try a.objectIDs(of: entity.id)
            let idsB = try b.objectIDs(of: entity.id)
            #expect(idsA == idsB, "\(what): objects of \(entity.name)")
            guard idsA == idsB, !idsA.isEmpty else { continue }
            let snapshotsA = try a.snapshots(for: idsA)
            let snapshotsB = try b.snapshots(for: idsB)
            for (x, y) in zip(snapshotsA, snapshotsB) {
                #expect(x.attributes == y.attributes, "\(what): values of \(entity.name)/\(x.objectID.key)")
                #expect(x.toOne == y.toOne, "\(what): to-ones of \(entity.name)/\(x.objectID.key)")
            }
            for relationship in entity.persistentRelationships where relationship.isToMany {
                let listsA = try a.toManyDestinations(of: relationship.name, in: entity.id, for: idsA)
                let listsB = try b.toManyDestinations(of: relationship.name, in: entity.id, for: idsB)
                for id in idsA {
                    if relationship.isOrdered {
                        #expect(
                            listsA[id] == listsB[id], "\(what): \(entity.name)/\(id.key).\(relationship.name) in order")
                    } else {
                        #expect(
                            Set(listsA[id] ?? []) == Set(listsB[id] ?? []),
                            "\(what): \(entity.name)/\(id.key).\(relationship.name)")
                    }
                }
            }
        }
    }
}
