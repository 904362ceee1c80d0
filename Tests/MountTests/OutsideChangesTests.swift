import BinaryStore
import Foundation
import ObjectGraph
import TestSupport
import Testing
import XMLStore

/// Another process that rewrites a mounted XML or binary store: the mount shows its change within
/// its poll, keeps it when it commits its own, and a change of the same value made through the
/// mount on the old value fails at fsync with EBUSY, as on SQLite stores.
@Suite(.serialized) struct OutsideChangesTests {
    static func storeType(_ suffix: String) -> any PersistentStoreType {
        suffix == "xml" ? XMLStoreType() : BinaryStoreType()
    }

    /// A sample company store of `suffix`'s type, made by `storefs sample`, mounted.
    static func mounted(_ suffix: String, options: [String] = []) throws -> MountedStore {
        let folder = try ScratchSpace.folder("outside")
        let source = folder.appendingPathComponent("Company.\(suffix)")
        let made = try run(try storefsBinary(), ["sample", "--objects", "300", source.path])
        guard made.status == 0 else { throw HarnessError("storefs sample failed: \(made.error)") }
        defer { try? FileManager.default.removeItem(at: folder) }
        return try MountedStore(copying: source, options: options)
    }

    /// What another program does: opens the file (no mount, no lock), changes names, saves, and
    /// the file is replaced by a rename.
    static func rewrite(_ store: URL, suffix: String, names: [Int64: String]) throws {
        let opened = try storeType(suffix).open(
            at: store, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        let coordinator = PersistentStoreCoordinator(store: opened)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let department = try #require(coordinator.model.entityID(named: "Department"))
        for (key, name) in names {
            let id = try #require(try context.objectID(forKey: PrimaryKey(key), in: department))
            try context.setValue(.string(name), of: "name", for: id)
        }
        try context.save()
    }

    static func storedNames(_ store: URL, suffix: String, keys: [Int64]) throws -> [String?] {
        let opened = try storeType(suffix).open(
            at: store, model: nil, options: StoreOptions(readOnly: true), initialMetadata: StoreMetadata())
        let coordinator = PersistentStoreCoordinator(store: opened)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let department = try #require(coordinator.model.entityID(named: "Department"))
        return try keys.map { key in
            let id = try #require(try context.objectID(forKey: PrimaryKey(key), in: department))
            if case .string(let name)? = try context.value(of: "name", for: id) { return name }
            return nil
        }
    }

    @Test(arguments: ["xml", "binary"]) func anotherProcessesChangeShowsAndIsKept(suffix: String) throws {
        let mount = try Self.mounted(suffix)
        defer { try? mount.unmount() }
        let departments = "\(mount.path)/Department"
        _ = try run("cat", ["\(departments)/p2/name", "\(departments)/p3/name"])  // cached by the mount
        try Self.rewrite(mount.store, suffix: suffix, names: [2: "Outside Two", 3: "Outside Three"])
        #expect(
            eventuallyTrue(timeout: 10) { (try? run("cat", ["\(departments)/p2/name"]).output) == "Outside Two\n" },
            "the mount shows the other process's change: \(mount.logText.suffix(800))")
        #expect(try run("cat", ["\(departments)/p3/name"]).output == "Outside Three\n")
        #expect(try sh("echo Mounted > \(departments)/p1/name").status == 0)
        try mount.unmount()
        #expect(
            try Self.storedNames(mount.store, suffix: suffix, keys: [2, 3, 1]) == [
                "Outside Two", "Outside Three", "Mounted"
            ])
    }

    @Test(arguments: ["xml", "binary"]) func aWriteMadeOnTheOldValueFailsAtFsync(suffix: String) throws {
        // A long commit delay keeps the mount's change pending while the other process saves.
        let mount = try Self.mounted(suffix, options: ["commit_delay=60"])
        defer { try? mount.unmount() }
        let file = "\(mount.path)/Department/p2/name"
        #expect(try sh("echo Mine > \(file)").status == 0)
        try Self.rewrite(mount.store, suffix: suffix, names: [2: "Theirs"])
        let fsync = try run(
            "python3", ["-c", "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)", file])
        #expect(fsync.status != 0 && fsync.error.contains("Device or resource busy"), "fsync: \(fsync.error)")
        #expect(try run("cat", [file]).output == "Theirs\n", "the other process's value stays")
        try mount.unmount()
        #expect(try Self.storedNames(mount.store, suffix: suffix, keys: [2]) == ["Theirs"])
    }
}

/// Polls `condition` until it holds or `timeout` seconds pass.
func eventuallyTrue(timeout: TimeInterval, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() > deadline { return false }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return true
}
