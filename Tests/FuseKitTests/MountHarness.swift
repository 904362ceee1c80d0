import Foundation
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
///
/// Output goes through temporary files, not pipes: libfuse forks fusermount3 for every mount made
/// in this process, and a forked fusermount3 keeps a pipe's write end open for as long as its mount
/// lives, so reading a pipe to EOF could hang while another test's mount is up.
@discardableResult
func tool(_ arguments: String...) throws -> ToolResult {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tool-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let outURL = folder.appendingPathComponent("out")
    let errURL = folder.appendingPathComponent("err")
    FileManager.default.createFile(atPath: outURL.path, contents: nil)
    FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let output = try FileHandle(forWritingTo: outURL)
    let errorOutput = try FileHandle(forWritingTo: errURL)
    defer {
        try? output.close()
        try? errorOutput.close()
    }
    process.standardOutput = output
    process.standardError = errorOutput
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return ToolResult(
        status: process.terminationStatus, output: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
        errorOutput: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
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
        path = FileManager.default.temporaryDirectory
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
