import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What storefs says it kept is on the disk before it says so, name included: a power cut right
/// after the unmount must not lose the recovery file it names. A file's fsync does not make its
/// directory entry durable, and LazyFS (scripts/power-loss) passes directory changes straight to
/// the disk, so it cannot see a missing directory sync: the system calls of the server, as
/// strace sees them, can.
@Suite(.serialized) struct DurableWritesTests {
    /// One system call strace saw: the thread, the call and its arguments, and what it returned.
    struct Call {
        var thread: String
        var name: String
        var arguments: String
        var result: String

        /// `1234 openat(AT_FDCWD, "/x", O_RDONLY) = 5`; nil for other lines (signals, exits).
        init?(_ line: Substring) {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            let call = parts[1].drop { $0 == " " }
            // strace pads short calls: `fsync(19)        = 0`.
            guard let open = call.firstIndex(of: "("), let equals = call.range(of: " = ", options: .backwards)
            else { return nil }
            var close = equals.lowerBound
            while close > open, call[call.index(before: close)] == " " { close = call.index(before: close) }
            guard close > call.index(after: open), call[call.index(before: close)] == ")" else { return nil }
            thread = String(parts[0])
            name = String(call[..<open])
            arguments = String(call[call.index(after: open)..<call.index(before: close)])
            result = String(call[equals.upperBound...].prefix { $0 != " " })
        }
    }

    @Test func theRecoveryFileAnUnmountNamesIsSyncedAndSoIsItsFolder() throws {
        let strace = try runTool("sh", ["-c", "command -v strace"]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !strace.isEmpty else {
            throw HarnessError(
                "this test watches the server's system calls with strace: install the Debian package strace")
        }
        let mount = try MountedStore(objects: 100, mount: false)
        let trace = mount.directory.appendingPathComponent("trace")
        // strace follows `storefs mount` into the server it starts; with its output in files the
        // shell returns at once, and strace ends when the server does.
        let started = try sh(
            "\(strace) -f -qq -s 4096 -e trace=openat,fsync,fdatasync -o '\(trace.path)' '\(try storefsBinary())' mount '\(mount.store.path)' '\(mount.path)' --log-file '\(mount.log.path)' > /dev/null 2>&1 < /dev/null & echo $!"
        )
        let tracer = try #require(pid_t(started.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        defer {
            _ = try? run("fusermount3", ["-u", "-z", mount.path])
            kill(tracer, SIGKILL)
        }
        var mounted = false
        for _ in 0..<600 where !mounted {
            Thread.sleep(forTimeInterval: 0.1)
            mounted =
                (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8))?.contains(
                    " \(mount.path) ") ?? false
        }
        try #require(mounted, "the traced server did not mount within 60 s: \(mount.logText)")
        // An Employee whose mandatory lastName is empty cannot be saved: the unmount keeps it.
        #expect(try run("mkdir", ["\(mount.path)/Employee/stranded"]).status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 75, "\(status.status): \(status.error)")
        let file = try #require(mount.recoveryFiles.first, "no recovery file: \(status.error)")
        #expect(status.error.contains(file.path), "the unmount names it: \(status.error)")
        // The server has exited; strace writes its last lines and ends.
        for _ in 0..<300 where kill(tracer, 0) == 0 { Thread.sleep(forTimeInterval: 0.1) }
        let calls = try String(contentsOf: trace, encoding: .utf8).split(separator: "\n").compactMap(Call.init)

        // The file: created, and fsync'd through the descriptor it was created on.
        let created = try #require(
            calls.firstIndex { $0.name == "openat" && $0.arguments.contains("\"\(file.path)\"") && $0.result != "-1" },
            "the server never created \(file.path)")
        let fileSynced = calls[created...].firstIndex {
            $0.thread == calls[created].thread && ($0.name == "fsync" || $0.name == "fdatasync")
                && $0.arguments == calls[created].result && $0.result == "0"
        }
        #expect(fileSynced != nil, "\(file.lastPathComponent) was not fsync'd")
        // Then its folder: opened as a directory and fsync'd.
        let folder = file.deletingLastPathComponent().path
        let folderOpened = calls[created...].firstIndex {
            $0.thread == calls[created].thread && $0.name == "openat" && $0.arguments.contains("\"\(folder)\"")
                && $0.arguments.contains("O_DIRECTORY") && $0.result != "-1"
        }
        let folderSynced = folderOpened.flatMap { opened in
            calls[opened...].firstIndex {
                $0.thread == calls[opened].thread && $0.name == "fsync" && $0.arguments == calls[opened].result
                    && $0.result == "0"
            }
        }
        #expect(folderSynced != nil, "the folder holding \(file.lastPathComponent) was not fsync'd after it was made")
        if let fileSynced, let folderSynced { #expect(fileSynced < folderSynced, "the file first, then its name") }
    }
}
