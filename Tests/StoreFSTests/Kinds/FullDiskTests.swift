import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing
import XMLStore

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// A store on a full disk: a save that finds no room fails with ENOSPC at the call that asks
/// for it (fsync), as for any file, not EIO; the value is taken back and the store is as it was.
/// The disk is a small tmpfs the test mounts (root, as the tests run).
@Suite(.serialized) struct FullDiskTests {
    /// A tmpfs of `megabytes` MiB mounted on a new folder for `body`.
    static func withSmallDisk(megabytes: Int, _ body: (URL) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("full-disk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let mounted = try runTool(
            "mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", folder.path], timeout: 60)
        guard mounted.status == 0 else {
            throw ToolError("this test mounts a tmpfs and needs root: mount -t tmpfs failed: \(mounted.error)")
        }
        defer { _ = try? runTool("umount", ["-l", folder.path], timeout: 60) }
        try body(folder)
    }

    /// Fills what is left of the disk at `folder` but `leaving` bytes.
    static func fill(_ folder: URL, leaving: Int) {
        var info = statvfs()
        guard statvfs(folder.path, &info) == 0 else { return }
        let free = Int(info.f_bavail) * Int(info.f_frsize)
        let fd = open(folder.appendingPathComponent("filler").path, O_WRONLY | O_CREAT, 0o600)
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0xA5, count: 64 << 10)
        var left = max(free - leaving, 0)
        while left > 0 {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, min(left, chunk.count)) }
            guard n > 0 else { break }
            left -= n
        }
    }

    /// A photo may be kept beside a SQLite store (external data); preferences are kept in it.
    @Test(arguments: [("Company.sqlite", "photo"), ("Company.sqlite", "preferences"), ("Company.xml", "photo")])
    func aSaveThatFindsNoRoomIsENOSPCAtFsync(name: String, attribute: String) throws {
        try Self.withSmallDisk(megabytes: 8) { folder in
            let url = folder.appendingPathComponent(name)
            let types: [any PersistentStoreType] = [SQLiteStoreType(), XMLStoreType()]
            let seed = try PersistentStoreCoordinator.open(
                at: url, types: types, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
            try SampleGenerator(objectCount: 100).populate(seed.newContext())
            seed.close()
            let coordinator = try PersistentStoreCoordinator.open(at: url, types: types)
            var configuration = StoreFSConfiguration()
            configuration.commitDelay = 3600
            configuration.changePollInterval = 3600
            let fileSystem = StoreFileSystem(coordinator: coordinator, configuration: configuration)
            let k = EmbeddedKernel(fileSystem)
            let before = try? k.read("Employee/p20/\(attribute)")
            Self.fill(folder, leaving: 64 << 10)
            // A value far larger than the room left (in the store, or beside it as external data).
            let written = errnoOf { try k.write("Employee/p20/\(attribute)", Data(repeating: 0x5A, count: 1 << 20)) }
            if name == "Company.sqlite" && attribute == "photo" {
                // Written into a file of its own (docs/SEMANTICS.md, "Values of any size"): the
                // full disk is ENOSPC at write(2) already, and nothing of the value is set.
                #expect(written == ENOSPC, "a full disk is ENOSPC, not EIO")
            } else {
                #expect(written == nil)
                #expect(
                    errnoOf { try k.fsync("Employee/p20/\(attribute)") } == ENOSPC, "a full disk is ENOSPC, not EIO")
            }
            #expect((try? k.read("Employee/p20/\(attribute)")) == before, "taken back")
            let left = try FileManager.default.subpathsOfDirectory(atPath: folder.path).sorted()
            let temporary = left.filter { $0.contains("storefs-") && !$0.hasSuffix(".storefs-lock") }
            #expect(temporary.isEmpty, "no temporary file is left: \(left)")
            try FileManager.default.removeItem(at: folder.appendingPathComponent("filler"))
            // With room again, the next save goes through.
            try k.write("Employee/p20/lastName", Data("Hopper\n".utf8))
            #expect(errnoOf { try k.fsync("Employee/p20/lastName") } == nil)
            #expect(k.finish().isEmpty)
            coordinator.close()
            let reopened = try PersistentStoreCoordinator.open(
                at: url, types: types, options: StoreOptions(readOnly: true))
            defer { reopened.close() }
            let id = ObjectID(entity: try #require(reopened.model.entityID(named: "Employee")), key: PrimaryKey(20))
            #expect(try reopened.newContext().value(of: "lastName", for: id) == .string("Hopper"))
        }
    }
}
