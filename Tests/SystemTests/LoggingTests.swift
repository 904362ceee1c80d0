import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Where the server's log goes and what it says: syslog priorities on the journal's stream, the
/// system log for a background mount, and what -v and -vv add.
@Suite struct LoggingTests {
    /// Mounts the scratch store in the foreground with `arguments`, writes a value that does not
    /// parse (an error the log must carry), changes a relationship (which makes the server send
    /// the kernel cache notifications the kernel has nothing for), then stops it with SIGTERM and
    /// returns its stderr.
    static func serverLog(
        _ scratch: Scratch, arguments: [String] = [], environment: [String: String] = [:]
    ) throws -> String {
        let server = try ForegroundMountTests.start(
            scratch, options: "rw", arguments: arguments, environment: environment)
        defer { ForegroundMountTests.stop(server) }
        try #require(
            eventually { isMounted(scratch.mountPoint) || !server.isRunning },
            "no mount: \(ForegroundMountTests.log(scratch))")
        let employee = scratch.mountPoint + "/Employee/p6"
        // The shell does not report the EINVAL of the close; the log says why.
        _ = try shell("echo not-a-number > \(quoted(employee + "/salary"))")
        let department = try run("/bin/readlink", [employee + "/department"]).output.trimmingCharacters(in: .newlines)
        // Another department when the store has one (a link to one that does not exist is
        // refused), else the same one again: either way both sides of the relationship change.
        let departments = try run("/bin/ls", [scratch.mountPoint + "/Department"]).output.split(separator: "\n").map(
            String.init)
        let other = departments.map { "../../Department/" + $0 }.first { $0 != department } ?? department
        #expect(try run("/bin/rm", [employee + "/department"]).succeeded)
        #expect(try run("/bin/ln", ["-s", other, employee + "/department"]).succeeded)
        kill(server.processIdentifier, SIGTERM)
        #expect(waitForExit(server, timeout: 60), "storefs did not exit after SIGTERM")
        return ForegroundMountTests.log(scratch)
    }

    /// `DEVICE:INODE` of `path`, as systemd puts the journal's stream in JOURNAL_STREAM.
    static func streamIdentity(_ path: String) throws -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { throw SystemTestError("stat \(path) failed") }
        return "\(info.st_dev):\(info.st_ino)"
    }

    @Test func onTheJournalsStreamEachLineStartsWithItsSyslogPriority() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let logPath = scratch.path + "/server.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try Self.serverLog(scratch, environment: ["JOURNAL_STREAM": try Self.streamIdentity(logPath)])
        let lines = log.split(separator: "\n").map(String.init)
        #expect(!lines.isEmpty)
        for line in lines {
            #expect(line.range(of: #"^<[0-7]>"#, options: .regularExpression) != nil, "no priority: \(line)")
        }
        // journald adds the time: a line that carries its own would show it twice.
        #expect(lines.contains { $0.hasPrefix("<6>mounted ") }, "log: \(log)")
        #expect(lines.contains { $0.hasPrefix("<3>write Employee/p6/salary: ") }, "log: \(log)")
        #expect(lines.contains { $0.hasPrefix("<6>unmounted ") }, "log: \(log)")
    }

    @Test func aJournalStreamOfAnotherFileLeavesLinesPlain() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        // The variable inherited by a process whose stderr was redirected elsewhere: not the journal.
        let log = try Self.serverLog(scratch, environment: ["JOURNAL_STREAM": try Self.streamIdentity(scratch.store)])
        #expect(!log.contains("<6>") && !log.contains("<3>"), "log: \(log)")
        let error = log.split(separator: "\n").first { $0.contains("write Employee/p6/salary") }
        #expect(
            error?.range(
                of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4} error: write"#, options: .regularExpression)
                != nil,
            "a plain line is TIME LEVEL: MESSAGE; got \(error ?? "nothing")")
    }

    @Test func verboseShowsTheMountAndItsCommitsAndDoubleVerboseThePerRequestNotifications() throws {
        let quietScratch = try Scratch()
        defer { quietScratch.remove() }
        try quietScratch.makeStore()
        let quiet = try Self.serverLog(quietScratch)
        #expect(quiet.contains("info: mounted "), "log: \(quiet)")
        #expect(!quiet.contains("debug:") && !quiet.contains("trace:"), "without -v: \(quiet)")

        let verboseScratch = try Scratch()
        defer { verboseScratch.remove() }
        try verboseScratch.makeStore()
        let verbose = try Self.serverLog(verboseScratch, arguments: ["-v"])
        for expected in [
            "debug: options: read-write, commit_delay 0.2 s", "debug: store ", "debug: committed", "debug: served "
        ] {
            #expect(verbose.contains(expected), "-v lacks \(expected): \(verbose)")
        }
        #expect(!verbose.contains("notify "), "-v shows per-request notifications: \(verbose)")

        let traceScratch = try Scratch()
        defer { traceScratch.remove() }
        try traceScratch.makeStore()
        let trace = try Self.serverLog(traceScratch, arguments: ["-vv"])
        #expect(trace.contains("trace: notify inval_"), "-vv shows the kernel notifications: \(trace)")
        #expect(trace.contains("debug: committed"))
    }

    /// Stands in for the system logger: binds /dev/log (when no logger listens there) and prints
    /// every datagram it gets until `unmounted` arrives.
    /// Stands in for the system logger until it hears the test's own mount (argv[1]) unmounted:
    /// other background mounts made meanwhile (MountHelperTests, another test process on the
    /// machine) log here too, and their "unmounted" is not this test's.
    static let systemLogger = """
        import json, socket, sys
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        listener.bind("/dev/log")
        print("ready", flush=True)
        listener.settimeout(120)
        while True:
            message = listener.recv(65536).decode(errors="replace")
            print(json.dumps(message), flush=True)
            if "]: unmounted " + sys.argv[1] in message:
                break
        """

    /// Held while the test stands in for the system logger: two test processes on one machine
    /// (two engineers, two runs) would otherwise take /dev/log from each other.
    static let systemLoggerLock = "/tmp/storefs-test-dev-log.lock"

    @Test func aBackgroundMountLogsToTheSystemLog() throws {
        let lock = open(Self.systemLoggerLock, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        try #require(lock >= 0, "open \(Self.systemLoggerLock)")
        defer { close(lock) }
        try #require(
            eventually(timeout: 120) { flock(lock, LOCK_EX | LOCK_NB) == 0 },
            "another test process stood in for the system logger for 120 s")
        if FileManager.default.fileExists(atPath: "/dev/log") {
            // A socket nobody listens on (left by a test process that was killed) is no logger,
            // as storefs itself decides (LogDestination.systemLogIsAvailable).
            let probe = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (i, byte) in "/dev/log".utf8.enumerated() { raw[i] = byte }
            }
            let listening = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
                }
            }
            close(probe)
            guard !listening else {
                // A real logger listens: the test may not stand in for it, and reading it back
                // differs between journald and rsyslog.
                throw SystemTestError(
                    "/dev/log exists (a system logger runs here); this test stands in for the logger and needs it absent"
                )
            }
            unlink("/dev/log")
        }
        let python = try tool("python3", package: "python3")
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let script = scratch.path + "/logger.py"
        try Self.systemLogger.write(toFile: script, atomically: true, encoding: .utf8)
        let output = scratch.path + "/logger.out"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let logger = Process()
        logger.executableURL = URL(fileURLWithPath: python)
        logger.arguments = [script, scratch.mountPoint]
        logger.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        logger.standardError = logger.standardOutput
        try logger.run()
        let received = { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        defer {
            if logger.isRunning { kill(logger.processIdentifier, SIGKILL) }
            // Only the socket this test's logger made.
            if received().hasPrefix("ready") { unlink("/dev/log") }
        }
        try #require(
            eventually { received().hasPrefix("ready") || !logger.isRunning }, "the logger failed: \(received())")

        // No --log-file, no --foreground: what an fstab mount does.
        let mounted = try run(try storefsBinary(), ["mount", scratch.store, scratch.mountPoint])
        try #require(mounted.succeeded, "storefs mount: \(mounted.errorOutput)")
        _ = try shell("echo not-a-number > \(quoted(scratch.mountPoint + "/Employee/p6/salary"))")
        #expect(try run("/usr/bin/fusermount3", ["-u", scratch.mountPoint]).succeeded)
        #expect(waitForExit(logger, timeout: 60), "no 'unmounted' line reached the system log: \(received())")

        let messages = received().split(separator: "\n").dropFirst().compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8), options: .fragmentsAllowed) as? String
        }
        // <30> is daemon.info, <27> daemon.err (facility 3 × 8 + priority). Only this mount's
        // server's lines count: `storefs[PID]` of its "mounted" line.
        let mountedLine = messages.first {
            $0.hasPrefix("<30>") && $0.contains(" storefs[") && $0.contains("]: mounted \(scratch.store)")
        }
        let server = try #require(
            mountedLine.flatMap { $0.range(of: " storefs[") }.map { range in
                mountedLine![range.lowerBound...].prefix { $0 != "]" } + "]"
            }, "\(messages)")
        #expect(
            messages.contains { $0.hasPrefix("<27>") && $0.contains("\(server): write Employee/p6/salary: ") },
            "\(messages)")
        #expect(
            messages.contains { $0.hasPrefix("<30>") && $0.contains("\(server): unmounted \(scratch.mountPoint)") },
            "\(messages)")
    }
}
