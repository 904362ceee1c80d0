import Foundation
import FuseKit
import ObjectGraph
import SQLiteStore
import Synchronization
import Testing

@testable import StoreFS

/// A folder of stores opens each store once, in a slot claimed before the open: two first
/// lookups of one store share one open (the loser used to find the store locked: EBUSY), and
/// an open that takes long stalls no lookup of another store.
@Suite struct FolderSlotTests {
    /// SQLite stores whose open of one file name waits until the test lets it go, counting opens.
    final class GatedSQLiteStoreType: PersistentStoreType {
        let base = SQLiteStoreType()
        let gatedName: String
        let gate = DispatchSemaphore(value: 0)
        let opens = Atomic<Int>(0)

        init(gating name: String) { gatedName = name }

        var name: String { base.name }
        var fileExtensions: [String] { base.fileExtensions }
        var findsKeptModel: Bool { base.findsKeptModel }
        func metadata(at url: URL) throws(ObjectGraphError) -> StoreMetadata { try base.metadata(at: url) }
        func recognizes(fileStart: Data) -> Bool { base.recognizes(fileStart: fileStart) }
        func consolidate(at url: URL) throws(ObjectGraphError) { try base.consolidate(at: url) }
        func companionFolders(of url: URL) -> [URL] { base.companionFolders(of: url) }
        func open(at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata)
            throws(ObjectGraphError) -> any PersistentStore
        {
            if url.lastPathComponent == gatedName {
                opens.add(1, ordering: .relaxed)
                gate.wait()
            }
            return try base.open(at: url, model: model, options: options, initialMetadata: initialMetadata)
        }
    }

    /// Runs `body` on a thread of its own; the returned function waits for its result, at most
    /// `seconds` (nil: still running).
    static func started<T: Sendable>(_ body: @escaping @Sendable () -> T) -> (Double) -> T? {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        return { seconds in
            guard done.wait(timeout: .now() + seconds) == .success else { return nil }
            done.signal()
            return result.withLock { $0 }
        }
    }

    @Test func twoFirstLookupsShareOneOpenAndOtherStoresDoNotWait() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("folder-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["Slow.sqlite", "Quick.sqlite"] {
            let seed = try PersistentStoreCoordinator.open(
                at: folder.appendingPathComponent(name), types: [SQLiteStoreType()], model: SampleModel.make(),
                options: StoreOptions(createIfMissing: true))
            try SampleGenerator(objectCount: 100).populate(seed.newContext())
            seed.close()
        }
        let type = GatedSQLiteStoreType(gating: "Slow.sqlite")
        let fileSystem = try StoreFolderFileSystem(directory: folder, types: [type])
        defer { fileSystem.willUnmount() }
        let context = RequestContext(uid: 0, gid: 0, pid: 1)
        // A store's folder is a node of the folder's tree; the store opens on the first lookup
        // inside it.
        let folders = try ["Slow.sqlite", "Quick.sqlite"].map { name throws(FileSystemError) in
            (name, try fileSystem.lookup(parent: .root, name: name, context: context).attributes.inode)
        }
        #expect(type.opens.load(ordering: .relaxed) == 0, "looking up a store's folder opens no store")
        let folderOf = Dictionary(uniqueKeysWithValues: folders)
        @Sendable func lookup(_ name: String) -> Result<UInt64, FileSystemError> {
            do throws(FileSystemError) {
                guard let folder = folderOf[name] else { return .failure(.notFound) }
                return .success(
                    try fileSystem.lookup(parent: folder, name: "Employee", context: context).attributes.inode.rawValue)
            } catch {
                return .failure(error)
            }
        }
        let first = Self.started { lookup("Slow.sqlite") }
        #expect(Self.eventually { type.opens.load(ordering: .relaxed) == 1 }, "the first lookup opens the store")
        let second = Self.started { lookup("Slow.sqlite") }
        // Another store answers while the slow one is still opening.
        let quick = Self.started { lookup("Quick.sqlite") }
        let quickResult = quick(30)
        type.gate.signal()
        type.gate.signal()
        #expect(quickResult != nil, "a lookup of another store waited for the slow open")
        if case .failure(let error)? = quickResult { Issue.record("Quick.sqlite: \(error)") }
        let (a, b) = (first(60), second(60))
        guard case .success(let inodeA)? = a, case .success(let inodeB)? = b else {
            Issue.record(
                "both first lookups of Slow.sqlite succeed: \(String(describing: a)), \(String(describing: b))")
            return
        }
        #expect(inodeA == inodeB, "one slot")
        #expect(type.opens.load(ordering: .relaxed) == 1, "the store was opened once")
    }

    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while !condition() {
            if Date() > deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }
}
