import EmbeddedKernel
import Foundation
import FuseKit
import Logging
import ObjectGraph
import SQLiteStore
import Synchronization
import TestSupport
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// A sample company store (SQLite, in a temporary folder) served by a ``StoreFileSystem`` on an
/// embedded kernel: the fast layer the node kinds are tested on, without /dev/fuse. Commits happen
/// where a test asks (fsync, ``remount()``, ``unmount()``).
final class KernelMount {
    let folder: URL
    let url: URL
    private(set) var coordinator: PersistentStoreCoordinator
    private(set) var fileSystem: StoreFileSystem
    private(set) var kernel: EmbeddedKernel
    let readOnly: Bool
    /// The model the store is opened with; nil: the store's own.
    let model: ManagedObjectModel?
    /// Changes to the configuration every (re)mount makes (`-o max_value_size=1`, `list_fetched`).
    let configure: @Sendable (inout StoreFSConfiguration) -> Void
    private let log = LogRecord()

    /// What the mapping logged, one message a line (what `--log-file` holds for a real mount).
    var logText: String { log.text }

    /// `sql`, when given, is run on the store by sqlite3 before it is mounted (a store another
    /// program left in a state storefs would not write).
    init(
        objects: Int = 300, readOnly: Bool = false, model: ManagedObjectModel? = nil, sql: String? = nil,
        configure: @escaping @Sendable (inout StoreFSConfiguration) -> Void = { _ in }
    ) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kinds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        url = folder.appendingPathComponent("Company.sqlite")
        let seed = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true)
        )
        try SampleGenerator(objectCount: objects).populate(seed.newContext())
        seed.close()
        if let sql {
            let result = try runTool("sqlite3", [url.path, sql], timeout: 60)
            guard result.status == 0 else { throw ToolError("sqlite3 \(sql): \(result.error)") }
        }
        self.readOnly = readOnly
        self.model = model
        self.configure = configure
        (coordinator, fileSystem, kernel) = try Self.mount(url, readOnly: readOnly, model: model, configure, log)
    }

    /// A copy of corpus store `name` (with its WAL), served like the sample store.
    init(
        corpus name: String, readOnly: Bool = false, prepare: (URL) throws -> Void = { _ in },
        configure: @escaping @Sendable (inout StoreFSConfiguration) -> Void = { _ in }
    ) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kinds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        url = folder.appendingPathComponent(name)
        let source = Corpus.url("sqlite/\(name)").path
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source + suffix) {
            try FileManager.default.copyItem(atPath: source + suffix, toPath: url.path + suffix)
        }
        try prepare(url)
        self.readOnly = readOnly
        self.model = nil
        self.configure = configure
        (coordinator, fileSystem, kernel) = try Self.mount(url, readOnly: readOnly, model: nil, configure, log)
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
        self.model = nil
        self.configure = { _ in }
        (coordinator, fileSystem, kernel) = try Self.mount(url, readOnly: readOnly, model: nil, configure, log)
    }

    private static func mount(
        _ url: URL, readOnly: Bool, model: ManagedObjectModel?,
        _ configure: (inout StoreFSConfiguration) -> Void, _ log: LogRecord
    ) throws -> (PersistentStoreCoordinator, StoreFileSystem, EmbeddedKernel) {
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: model, options: StoreOptions(readOnly: readOnly))
        var configuration = StoreFSConfiguration()
        configuration.commitDelay = 3600
        configuration.changePollInterval = 3600
        configuration.readOnly = readOnly
        configuration.mountPoint = "/mnt/company"
        configure(&configuration)
        let fileSystem = StoreFileSystem(
            coordinator: coordinator, configuration: configuration,
            logger: Logger(label: "storefs", factory: { _ in RecordingLogHandler(record: log) }))
        return (coordinator, fileSystem, EmbeddedKernel(fileSystem))
    }

    /// Finishes the kernel (what it kept must still be true) and mounts the store again: what was
    /// saved is what the new mount shows.
    func remount() throws -> EmbeddedKernel.Leftovers {
        let leftovers = kernel.finish()
        coordinator.close()
        (coordinator, fileSystem, kernel) = try Self.mount(url, readOnly: readOnly, model: model, configure, log)
        return leftovers
    }

    /// Finishes the kernel: what it kept must still be true.
    func finish() -> EmbeddedKernel.Leftovers {
        let leftovers = kernel.finish()
        coordinator.close()
        try? FileManager.default.removeItem(at: folder)
        return leftovers
    }

    /// Finishes the kernel and closes the store, keeping its file for ``stored(_:_:_:)`` and
    /// ``sqlite(_:)``: what an unmount saved is what they find.
    func unmount() -> EmbeddedKernel.Leftovers {
        let leftovers = kernel.finish()
        coordinator.close()
        return leftovers
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// A fresh read-only engine on the store file.
    func engine() throws -> PersistentStoreCoordinator {
        try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: model, options: StoreOptions(readOnly: true))
    }

    /// The value of `attribute` of `entity`/p`key` in the store file, through a fresh engine.
    func stored(_ entity: String, _ key: Int64, _ attribute: String) throws -> AttributeValue? {
        let engine = try engine()
        defer { engine.close() }
        let context = engine.newContext()
        let entityID = try #require(engine.model.entityID(named: entity))
        let id = try #require(try context.objectID(forKey: PrimaryKey(key), in: entityID))
        return try context.value(of: attribute, for: id)
    }

    /// What the sqlite3 tool answers for `query` on the store file (another process reading it).
    func sqlite(_ query: String) throws -> String {
        try runTool("sqlite3", ["-cmd", ".timeout 5000", url.path, query]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
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

/// The messages a mapping logged (every level), in order.
final class LogRecord: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}

/// A swift-log handler that keeps every message in a ``LogRecord``.
struct RecordingLogHandler: LogHandler {
    let record: LogRecord
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) { record.append("\(event.level): \(event.message)") }
}
