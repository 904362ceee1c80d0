import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The result of running a tool.
struct ToolResult {
    var status: Int32
    var output: String
    var error: String
    var lines: [String] { output.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
}

/// Runs `tool` (looked up on PATH) with `arguments`, capturing its output.
@discardableResult
func run(_ tool: String, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil) throws
    -> ToolResult
{
    let result = try runTool(tool, arguments, input: input, environment: environment)
    return ToolResult(status: result.status, output: result.output, error: result.error)
}

/// Runs a shell command line.
@discardableResult
func sh(_ command: String) throws -> ToolResult { try run("sh", ["-c", command]) }

/// The storefs binary `swift build` made, next to this test bundle.
func storefsBinary() throws -> String {
    let candidates = [
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("storefs").path,
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/storefs").path
    ]
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw HarnessError(
            "the storefs binary was not built (looked at \(candidates.joined(separator: ", "))); run `swift build` before `swift test`"
        )
    }
    return found
}

/// Fails the test with a clear message when FUSE cannot be used here.
func requireFuse() throws {
    let fd = open("/dev/fuse", O_RDWR)
    guard fd >= 0 else {
        throw HarnessError(
            "this test mounts a filesystem and needs /dev/fuse: \(String(cString: strerror(errno))) (run as root or in a container with --device /dev/fuse)"
        )
    }
    close(fd)
    guard
        FileManager.default.isExecutableFile(atPath: "/usr/bin/fusermount3")
            || FileManager.default.isExecutableFile(atPath: "/bin/fusermount3")
    else {
        throw HarnessError("this test needs fusermount3: install the Debian package fuse3")
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A temporary folder with a sample store, mounted through the kernel by `storefs mount`.
final class MountedStore {
    let directory: URL
    let store: URL
    let mountPoint: URL
    let log: URL
    private(set) var isMounted = false

    var path: String { mountPoint.path }

    /// Makes a sample store of `objects` objects (or copies `copying`) and mounts it.
    init(
        objects: Int = 1_000, copying source: URL? = nil, suffix: String = "sqlite", options: [String] = [],
        model: String? = nil, mount: Bool = true
    ) throws {
        try requireFuse()
        directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "storefs-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        mountPoint = directory.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        log = directory.appendingPathComponent("storefs.log")
        if let source {
            store = directory.appendingPathComponent(source.lastPathComponent)
            for extra in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: source.path + extra) {
                try FileManager.default.copyItem(atPath: source.path + extra, toPath: store.path + extra)
            }
        } else {
            store = directory.appendingPathComponent("Company.\(suffix)")
            let coordinator = try PersistentStoreCoordinator.open(
                at: store, types: [SQLiteStoreType()], model: SampleModel.make(),
                options: StoreOptions(createIfMissing: true))
            try SampleGenerator(objectCount: objects).populate(coordinator.newContext())
            coordinator.close()
        }
        if mount { try self.mount(options: options, model: model) }
    }

    func mount(options: [String] = [], model: String? = nil) throws {
        var arguments = ["mount", store.path, mountPoint.path, "--log-file", log.path, "-v"]
        if !options.isEmpty { arguments += ["-o", options.joined(separator: ",")] }
        if let model { arguments += ["--model", model] }
        let result = try run(try storefsBinary(), arguments)
        guard result.status == 0 else {
            throw HarnessError("storefs mount failed (\(result.status)): \(result.error)\n\(logText)")
        }
        isMounted = true
    }

    /// `storefs unmount`: returns once the server has saved and exited, with its status (0 saved,
    /// 75 changes kept in a recovery file, 1 failed) and message.
    @discardableResult
    func unmountReportingStatus() throws -> ToolResult {
        let result = try run(try storefsBinary(), ["unmount", mountPoint.path])
        if result.status != 1 { isMounted = false }
        return result
    }

    /// The recovery files unmounts left beside the store.
    var recoveryFiles: [URL] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter {
            $0.contains(".storefs-recovery-")
        }
        .sorted().map { directory.appendingPathComponent($0) }
    }

    /// Unmounts with `storefs unmount`, which returns once the store is saved; throws unless every
    /// change was saved.
    func unmount() throws {
        guard isMounted else { return }
        let result = try unmountReportingStatus()
        guard result.status == 0 else {
            throw HarnessError("storefs unmount ended with \(result.status): \(result.error)\n\(logText.suffix(1500))")
        }
    }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// The mount's counters (`user.storefs.stats`).
    func stats() throws -> [String: Any] {
        let result = try run("getfattr", ["--only-values", "-n", "user.storefs.stats", mountPoint.path])
        guard result.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        else {
            throw HarnessError("cannot read user.storefs.stats: \(result.error)")
        }
        return object
    }

    func storeRequests() throws -> Int { try stats()["storeRequests"] as? Int ?? -1 }

    func fuseCount(_ operation: String) throws -> Int {
        (try stats()["fuse"] as? [String: Any])?[operation] as? Int ?? 0
    }

    /// A read-only coordinator on the store file, to check what the engine holds.
    func engine(model: ManagedObjectModel? = nil) throws -> PersistentStoreCoordinator {
        try PersistentStoreCoordinator.open(
            at: store, types: [SQLiteStoreType()], model: model, options: StoreOptions(readOnly: true))
    }

    deinit {
        if isMounted { _ = try? run("fusermount3", ["-u", "-z", mountPoint.path]) }
        try? FileManager.default.removeItem(at: directory)
    }
}
