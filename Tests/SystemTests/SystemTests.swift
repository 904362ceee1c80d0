import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// The system tests drive the storefs binary the way an administrator does: mount(8) and the
// helper, /etc/fstab lines, systemd units, SIGTERM, NOTIFY_SOCKET, the install script. This file
// holds what they share: finding the binary and the tools, running them, scratch folders, mounts.

/// A failure whose description says what is wrong and what to do.
struct SystemTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The package root, found from this file's path (Tests/SystemTests/SystemTests.swift).
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The storefs binary that `swift build` put next to the test bundle.
func storefsBinary() throws -> String {
    let beside = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    let candidates = [
        beside.appendingPathComponent("storefs").path,
        packageRoot.appendingPathComponent(".build/debug/storefs").path
    ]
    for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
        return candidate
    }
    throw SystemTestError(
        "the storefs binary is missing (looked at \(candidates.joined(separator: ", "))); "
            + "run `swift build` before `swift test --skip-build`")
}

/// The absolute path of `name`, or an error naming the Debian package that provides it.
func tool(_ name: String, package: String) throws -> String {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    let folders =
        path.split(separator: ":").map(String.init) + ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"]
    for folder in folders where FileManager.default.isExecutableFile(atPath: folder + "/" + name) {
        return folder + "/" + name
    }
    throw SystemTestError("\(name) is missing: install package \(package) (apt-get install -y \(package))")
}

/// The result of running a program to completion.
struct ToolResult {
    var status: Int32
    var output: String
    var errorOutput: String
    var succeeded: Bool { status == 0 }
}

/// Runs `executable` and waits for it (TestSupport's runTool: posix_spawn, output in files).
@discardableResult
func run(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:]
) throws -> ToolResult {
    let result = try runTool(executable, arguments, environment: environment)
    return ToolResult(status: result.status, output: result.output, errorOutput: result.error)
}

/// Waits for `process` to exit; kills it and returns false after `timeout` seconds.
func waitForExit(_ process: Process, timeout: TimeInterval) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning {
        if Date() > deadline {
            kill(process.processIdentifier, SIGKILL)
            // One stuck in the kernel (on a dead FUSE connection) may not die: not waited for
            // beyond a few seconds.
            let grace = Date().addingTimeInterval(5)
            while process.isRunning && Date() < grace { Thread.sleep(forTimeInterval: 0.02) }
            return false
        }
        Thread.sleep(forTimeInterval: 0.02)
    }
    process.waitUntilExit()
    return true
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: TimeInterval = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() > deadline { return false }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return true
}

/// A temporary folder for one test, with a sample store and a mount point in it.
struct Scratch {
    let url: URL
    var path: String { url.path }
    var store: String { path + "/Library.sqlite" }
    var mountPoint: String { path + "/mnt" }

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "storefs-system-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: url.path + "/mnt", withIntermediateDirectories: true)
    }

    /// Writes a small sample store at ``store``.
    func makeStore(objects: Int = 100) throws {
        let result = try run(try storefsBinary(), ["sample", "--objects", String(objects), store])
        guard result.succeeded else { throw SystemTestError("storefs sample failed: \(result.errorOutput)") }
    }

    /// Unmounts whatever is left at the mount point and removes the folder.
    func remove() {
        if isMounted(mountPoint) {
            _ = try? run("/bin/umount", [mountPoint])
            if isMounted(mountPoint) { _ = try? run("/usr/bin/fusermount3", ["-u", "-z", mountPoint]) }
        }
        try? FileManager.default.removeItem(at: url)
    }
}

/// Whether a FUSE filesystem is mounted at `path` now.
func isMounted(_ path: String) -> Bool {
    guard let table = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
    return table.split(separator: "\n").contains { line in
        let fields = line.split(separator: " ")
        return fields.count > 2 && fields[1].replacingOccurrences(of: "\\040", with: " ") == path
            && fields[2].hasPrefix("fuse")
    }
}

/// The mount table's type for `path` (e.g. "fuse.storefs"), if mounted.
func mountType(_ path: String) -> String? {
    guard let table = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return nil }
    for line in table.split(separator: "\n") {
        let fields = line.split(separator: " ")
        if fields.count > 2 && fields[1] == path { return String(fields[2]) }
    }
    return nil
}

/// One value of the store file itself, read with sqlite3 (not through storefs).
func storedLastName(_ store: String, key: Int = 6) throws -> String {
    let result = try run(
        try tool("sqlite3", package: "sqlite3"), [store, "select ZLASTNAME from ZPERSON where Z_PK=\(key)"])
    guard result.succeeded else { throw SystemTestError("sqlite3 \(store) failed: \(result.errorOutput)") }
    return result.output.trimmingCharacters(in: .newlines)
}

/// Runs a shell command line (for redirections like `echo X > FILE`).
func shell(_ command: String) throws -> ToolResult {
    try run("/bin/sh", ["-c", command])
}

/// Quotes `text` for a shell command line.
func quoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// The man pages scripts/manpages generated (swift-argument-parser's manual generator, run by
/// scripts/test before the tests, since SwiftPM cannot run a plugin while `swift test` holds the
/// build folder).
func generatedManPages() throws -> URL {
    let folder = packageRoot.appendingPathComponent(".build/plugins/GenerateManual/outputs/storefs")
    guard FileManager.default.fileExists(atPath: folder.path + "/storefs.1") else {
        throw SystemTestError(
            "no generated man pages in \(folder.path): run `scripts/manpages debug` before `swift test` (scripts/test does)"
        )
    }
    return folder
}

/// The names of the pages in `folder` (`storefs.1`, `storefs.mount.1`, ...), sorted.
func manPageNames(in folder: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".1") }.sorted()
}

/// The mount(8)/umount(8) helpers scripts/install.sh installs, read from its HELPERS list (the
/// one list install, uninstall and scripts/package share).
func installScriptHelpers() throws -> [(source: String, installedName: String)] {
    let text = try String(contentsOf: packageRoot.appendingPathComponent("scripts/install.sh"), encoding: .utf8)
    guard let start = text.range(of: "\nHELPERS=\""),
        let end = text.range(of: "\"", range: start.upperBound..<text.endIndex)
    else { throw SystemTestError("scripts/install.sh has no HELPERS=\"...\" list") }
    let helpers = text[start.upperBound..<end.lowerBound].split(separator: "\n").compactMap {
        line -> (String, String)? in
        let fields = line.split(separator: " ").map(String.init)
        return fields.count == 2 ? (fields[0], fields[1]) : nil
    }
    guard helpers.contains(where: { $0.1 == "mount.fuse.storefs" }) else {
        throw SystemTestError("scripts/install.sh's HELPERS list lacks mount.fuse.storefs")
    }
    return helpers
}

/// The storefs processes whose command line names `mountPoint` (a background server: the daemon mount(8) or `storefs mount` started).
func serverProcesses(of mountPoint: String) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry -> pid_t? in
        guard let pid = pid_t(entry),
            let line = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
        else { return nil }
        let arguments = line.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        guard arguments.contains(mountPoint), arguments.contains(where: { $0.hasSuffix("storefs") }) else {
            return nil
        }
        return pid
    }
}
