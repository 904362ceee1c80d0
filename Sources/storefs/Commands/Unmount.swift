import ArgumentParser
import Foundation

/// `storefs unmount MOUNTPOINT`: unmounts and waits until the server has committed, written the
/// store and exited, then exits as the server did.
struct Unmount: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Unmount a store and wait until it is saved.",
        discussion: """
            Unmounts MOUNTPOINT (as fusermount3 -u does), then waits for the storefs server to \
            commit what is pending and write the store, and exits with its status: 0 when every \
            change was saved; 75 when some could not be and were kept in a recovery file (the \
            message names it; apply it with `storefs recover`); 1 when unmounting failed (the \
            mount is busy, for example). Plain `fusermount3 -u` or `umount` return before the \
            store is written.
            """)

    @Argument(help: "The mount point.")
    var mountPoint: String

    @Option(name: .long, help: "Seconds to wait for the server to finish (0: no limit).")
    var timeout: Double = 0

    @Flag(
        name: .shortAndLong,
        help: "Detach a busy mount at once (fusermount3 -z); the server commits when the last user lets go.")
    var lazy = false

    func run() throws {
        let path = MountRegistry.standardized(mountPoint)
        let record = MountRegistry.read(mountPoint: path)
        guard Readiness.isMounted(path) || record.map({ MountRegistry.isRunning($0.pid) }) == true else {
            throw ValidationError("\(mountPoint) is not a storefs mount")
        }
        if Readiness.isMounted(path) {
            var arguments = ["-u"]
            if lazy { arguments.append("-z") }
            let result = try runCommand("fusermount3", arguments + [path])
            guard result == 0 else {
                printError("storefs unmount: fusermount3 could not unmount \(path) (see above); nothing was changed")
                throw ExitCode(1)
            }
        }
        guard let record, record.exitStatus == nil || MountRegistry.isRunning(record.pid) else {
            if record == nil {
                printError(
                    "storefs unmount: \(path) was unmounted, but no running storefs server is recorded for it: cannot tell whether it saved"
                )
            }
            return try finish(path)
        }
        let deadline = timeout > 0 ? Date().addingTimeInterval(timeout) : Date.distantFuture
        while MountRegistry.isRunning(record.pid) {
            guard Date() < deadline else {
                printError(
                    "storefs unmount: the server (pid \(record.pid)) is still saving after \(Int(timeout)) s; it goes on in the background"
                )
                throw ExitCode(1)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        try finish(path)
    }

    /// Reports how the server ended and exits with its status.
    private func finish(_ path: String) throws {
        guard let record = MountRegistry.read(mountPoint: path) else { return }
        MountRegistry.remove(mountPoint: path)
        if let message = record.message { printError(message) }
        guard let status = record.exitStatus else {
            printError("storefs unmount: the server (pid \(record.pid)) ended without saying how; look at its log")
            throw ExitCode(1)
        }
        if status != 0 { throw ExitCode(status) }
    }

    private func runCommand(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
