import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `storefs mount --foreground` as systemd runs it: readiness through NOTIFY_SOCKET, and SIGTERM
/// committing pending changes before the process exits.
@Suite struct ForegroundMountTests {
    /// Starts `storefs mount --foreground -o OPTIONS ARGUMENTS STORE MOUNTPOINT` with its stderr in
    /// the scratch folder's server.log.
    static func start(
        _ scratch: Scratch, options: String, arguments: [String] = [], environment: [String: String] = [:]
    ) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try storefsBinary())
        process.arguments = ["mount", "--foreground", "-o", options] + arguments + [scratch.store, scratch.mountPoint]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        let log = scratch.path + "/server.log"
        if !FileManager.default.fileExists(atPath: log) {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
        }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
        return process
    }

    static func log(_ scratch: Scratch) -> String {
        (try? String(contentsOfFile: scratch.path + "/server.log", encoding: .utf8)) ?? ""
    }

    /// Ends `process` if a test left it running.
    static func stop(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        if !waitForExit(process, timeout: 30) { return }
    }

    @Test func sigtermCommitsPendingChangesBeforeExiting() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let before = try storedLastName(scratch.store)
        #expect(before != "NewName")
        let server = try Self.start(scratch, options: "commit_delay=3600")
        defer { Self.stop(server) }
        #expect(
            eventually { isMounted(scratch.mountPoint) || !server.isRunning },
            "the mount did not appear: \(Self.log(scratch))")
        try #require(isMounted(scratch.mountPoint), "storefs exited: \(Self.log(scratch))")

        let file = scratch.mountPoint + "/Employee/p6/lastName"
        _ = try run("/bin/ls", [scratch.mountPoint + "/Employee"])
        let write = try shell("echo NewName > \(quoted(file))")
        #expect(write.succeeded, "the write failed: \(write.errorOutput)")
        #expect(try run("/bin/cat", [file]).output == "NewName\n")
        // With commit_delay=3600 nothing is committed yet: SIGTERM is what must commit it.
        #expect(try storedLastName(scratch.store) == before, "the change was committed before SIGTERM")

        kill(server.processIdentifier, SIGTERM)
        #expect(waitForExit(server, timeout: 60), "storefs did not exit after SIGTERM")
        #expect(server.terminationReason == .exit && server.terminationStatus == 0, "log: \(Self.log(scratch))")
        #expect(!isMounted(scratch.mountPoint))
        #expect(try storedLastName(scratch.store) == "NewName")
    }

    /// A small program that binds a datagram socket as systemd does, waits for READY=1, and at
    /// that instant checks the mount point: is it mounted, and does it answer?
    static let listener = """
        import json, os, socket, sys
        path, mount_point = sys.argv[1], sys.argv[2]
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        listener.bind(path)
        listener.settimeout(60)
        messages = []
        while True:
            message = listener.recv(4096).decode()
            messages.append(message)
            if "READY=1" in message.split("\\n"):
                break
        mounted = os.path.ismount(mount_point)
        try:
            answered = os.path.isdir(os.path.join(mount_point, "Employee")) and \\
                "p6" in os.listdir(os.path.join(mount_point, "Employee"))
        except OSError as error:
            answered = str(error)
        print(json.dumps({"mounted": mounted, "answered": answered, "messages": messages}))
        """

    @Test func readyIsSentOnceTheMountAnswers() throws {
        let python = try tool("python3", package: "python3")
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let socketPath = scratch.path + "/notify.sock"
        let script = scratch.path + "/listener.py"
        try Self.listener.write(toFile: script, atomically: true, encoding: .utf8)

        let output = scratch.path + "/listener.out"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let listener = Process()
        listener.executableURL = URL(fileURLWithPath: python)
        listener.arguments = [script, socketPath, scratch.mountPoint]
        listener.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        listener.standardError = listener.standardOutput
        try listener.run()
        defer { if listener.isRunning { kill(listener.processIdentifier, SIGKILL) } }
        try #require(eventually { FileManager.default.fileExists(atPath: socketPath) || !listener.isRunning })
        try #require(
            listener.isRunning, "the listener failed: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")

        let server = try Self.start(scratch, options: "ro", environment: ["NOTIFY_SOCKET": socketPath])
        defer { Self.stop(server) }
        #expect(waitForExit(listener, timeout: 90), "no READY=1 within 90 s; storefs log: \(Self.log(scratch))")
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let report = try #require(
            try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            "the listener printed: \(text)")
        #expect((report["messages"] as? [String])?.last?.contains("READY=1") == true)
        #expect(report["mounted"] as? Bool == true, "at READY=1 the mount point was not mounted: \(text)")
        #expect(report["answered"] as? Bool == true, "at READY=1 the mount did not answer: \(text)")

        kill(server.processIdentifier, SIGTERM)
        #expect(waitForExit(server, timeout: 60))
        #expect(server.terminationStatus == 0, "log: \(Self.log(scratch))")
    }

    /// Collects every notification until STOPPING=1 (or 120 s) and prints them as JSON.
    static let stopListener = """
        import json, socket, sys
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        listener.bind(sys.argv[1])
        listener.settimeout(120)
        messages = []
        try:
            while "STOPPING=1" not in "\\n".join(messages).split("\\n"):
                messages.append(listener.recv(4096).decode())
        except socket.timeout:
            pass
        print(json.dumps(messages))
        """

    @Test func stoppingIsSentWhenSIGTERMBeginsTheCommitAndUnmount() throws {
        let python = try tool("python3", package: "python3")
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let socketPath = scratch.path + "/notify.sock"
        let script = scratch.path + "/listener.py"
        try Self.stopListener.write(toFile: script, atomically: true, encoding: .utf8)
        let output = scratch.path + "/listener.out"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let listener = Process()
        listener.executableURL = URL(fileURLWithPath: python)
        listener.arguments = [script, socketPath]
        listener.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        listener.standardError = listener.standardOutput
        try listener.run()
        defer { if listener.isRunning { kill(listener.processIdentifier, SIGKILL) } }
        try #require(eventually { FileManager.default.fileExists(atPath: socketPath) || !listener.isRunning })

        let server = try Self.start(scratch, options: "commit_delay=3600", environment: ["NOTIFY_SOCKET": socketPath])
        defer { Self.stop(server) }
        try #require(eventually { isMounted(scratch.mountPoint) || !server.isRunning }, "log: \(Self.log(scratch))")
        // A change pending at SIGTERM: the commit it needs is what STOPPING=1 announces.
        _ = try run("/bin/ls", [scratch.mountPoint + "/Employee"])
        #expect(try shell("echo Stopped > \(quoted(scratch.mountPoint + "/Employee/p6/lastName"))").succeeded)
        kill(server.processIdentifier, SIGTERM)
        #expect(waitForExit(server, timeout: 60), "storefs did not exit after SIGTERM")
        #expect(server.terminationStatus == 0, "log: \(Self.log(scratch))")
        #expect(waitForExit(listener, timeout: 30))
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let messages = try #require(
            try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String], "the listener printed: \(text)")
        let lines = messages.map { $0.split(separator: "\n").map(String.init) }
        let ready = lines.firstIndex { $0.contains("READY=1") }
        let stopping = lines.firstIndex { $0.contains("STOPPING=1") }
        #expect(ready != nil && stopping != nil && ready! < stopping!, "notifications: \(messages)")
        #expect(try storedLastName(scratch.store) == "Stopped", "the commit after STOPPING=1 did not happen")
    }
}
