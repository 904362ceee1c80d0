import Foundation
import TestSupport
import FuseKit
import Synchronization
import Testing

/// Fails (never skips) when this machine cannot mount FUSE filesystems.
func requireFuse() throws {
    let descriptor = open("/dev/fuse", O_RDWR)
    guard descriptor >= 0 else {
        throw HarnessError("needs /dev/fuse: \(String(cString: strerror(errno)))")
    }
    close(descriptor)
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The result of running a tool.
struct ToolResult {
    var status: Int32
    var output: String
    var errorOutput: String
}

/// Runs `arguments` (looked up in PATH) and waits for it.
@discardableResult
func tool(_ arguments: String...) throws -> ToolResult {
    let result = try runTool(arguments[0], Array(arguments.dropFirst()))
    return ToolResult(status: result.status, output: result.output, errorOutput: result.error)
}

/// A ``FuseSession`` mounted at a fresh temporary directory and run on a background thread.
final class TestMount: Sendable {
    let path: String
    let session: FuseSession
    let counters = OperationCounters()
    private let finished = DispatchSemaphore(value: 0)
    private let done = Atomic<Bool>(false)
    let runError = Mutex<FuseError?>(nil)

    init(_ fileSystem: any FileSystem, options: MountOptions = MountOptions(handlesSignals: false)) throws {
        try requireFuse()
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("fusekit-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        do {
            session = try FuseSession(fileSystem: fileSystem, mountPoint: path, options: options, counters: counters)
            try session.mount()
        } catch {
            rmdir(path)
            throw error
        }
        Thread.detachNewThread { [self] in
            do throws(FuseError) {
                try session.run()
            } catch {
                runError.withLock { $0 = error }
            }
            done.store(true, ordering: .sequentiallyConsistent)
            finished.signal()
        }
    }

    func file(_ relative: String) -> String { path + "/" + relative }

    /// Waits (at most `seconds`) for run() to return.
    func waitForRunToEnd(seconds: Double = 10) -> Bool {
        if done.load(ordering: .sequentiallyConsistent) { return true }
        guard finished.wait(timeout: .now() + seconds) == .success else { return false }
        finished.signal()
        return true
    }

    /// `fusermount3 -u`, then waits for run() to return.
    func unmount() throws -> Bool {
        let result = try tool("fusermount3", "-u", path)
        guard result.status == 0 else { throw HarnessError("fusermount3 -u failed: \(result.errorOutput)") }
        return waitForRunToEnd()
    }

    /// Always called (defer): leaves no mount and no directory behind, whatever failed.
    func close() {
        if !done.load(ordering: .sequentiallyConsistent) {
            _ = try? tool("fusermount3", "-u", "-z", path)
            _ = waitForRunToEnd(seconds: 5)
        }
        rmdir(path)  // not removeItem: that would recurse into a mount that failed to go away
    }

    /// Waits until `condition` holds (for the asynchronous invalidation queue).
    func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
