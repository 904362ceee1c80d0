import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// A sample company store (SQLite, in a temporary folder) served by a ``StoreFileSystem`` on an
/// embedded kernel: the fast layer the node kinds are tested on, without /dev/fuse. Commits happen
/// where a test asks (fsync, ``remount()``).
final class KernelMount {
    let folder: URL
    let url: URL
    private(set) var coordinator: PersistentStoreCoordinator
    private(set) var fileSystem: StoreFileSystem
    private(set) var kernel: EmbeddedKernel
    let readOnly: Bool

    init(objects: Int = 300, readOnly: Bool = false) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kinds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        url = folder.appendingPathComponent("Company.sqlite")
        let seed = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true)
        )
        try SampleGenerator(objectCount: objects).populate(seed.newContext())
        seed.close()
        self.readOnly = readOnly
        (coordinator, fileSystem, kernel) = try Self.mount(url, readOnly: readOnly)
    }

    /// A copy of corpus store `name` (with its WAL), served like the sample store.
    init(corpus name: String, readOnly: Bool = false) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kinds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        url = folder.appendingPathComponent(name)
        let source = Corpus.url("sqlite/\(name)").path
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source + suffix) {
            try FileManager.default.copyItem(atPath: source + suffix, toPath: url.path + suffix)
        }
        self.readOnly = readOnly
        (coordinator, fileSystem, kernel) = try Self.mount(url, readOnly: readOnly)
    }

    /// A copy of the store at `source` (with its WAL), served like the sample store.
    init(copying source: URL, readOnly: Bool = false) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kinds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        url = folder.appendingPathComponent(source.lastPathComponent)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: url.path + suffix)
        }
        self.readOnly = readOnly
        (coordinator, fileSystem, kernel) = try Self.mount(url, readOnly: readOnly)
    }

    private static func mount(_ url: URL, readOnly: Bool) throws -> (
        PersistentStoreCoordinator, StoreFileSystem, EmbeddedKernel
    ) {
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: readOnly))
        var configuration = StoreFSConfiguration()
        configuration.commitDelay = 3600
        configuration.changePollInterval = 3600
        configuration.readOnly = readOnly
        configuration.mountPoint = "/mnt/company"
        let fileSystem = StoreFileSystem(coordinator: coordinator, configuration: configuration)
        return (coordinator, fileSystem, EmbeddedKernel(fileSystem))
    }

    /// Finishes the kernel (what it kept must still be true) and mounts the store again: what was
    /// saved is what the new mount shows.
    func remount() throws -> EmbeddedKernel.Leftovers {
        let leftovers = kernel.finish()
        coordinator.close()
        (coordinator, fileSystem, kernel) = try Self.mount(url, readOnly: readOnly)
        return leftovers
    }

    /// Finishes the kernel: what it kept must still be true.
    func finish() -> EmbeddedKernel.Leftovers {
        let leftovers = kernel.finish()
        coordinator.close()
        try? FileManager.default.removeItem(at: folder)
        return leftovers
    }

    /// The keys of `entity`'s own objects (not its subentities'), as the store has them.
    func keys(_ entity: String) throws -> [Int64] {
        let id = try #require(coordinator.model.entityID(named: entity))
        return try coordinator.newContext().objectIDs(of: id).map(\.key.rawValue)
    }

    func text(_ path: String) throws -> String { String(decoding: try kernel.read(path), as: UTF8.self) }
}

/// The errno a call failed with, nil when it succeeded (-1 for an error that is not a call's).
func errnoOf(_ body: () throws -> Void) -> Int32? {
    do {
        try body()
        return nil
    } catch {
        return (error as? EmbeddedKernel.KernelError)?.errno ?? -1
    }
}
