import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The background path of `storefs mount`: starts the same command with --foreground and returns
/// once the mount is ready, as FUSE filesystems do. Starting a new process rather than forking
/// keeps the Swift runtime's threads out of harm's way.
///
/// The server logs to `destination` (the system log or a file, never the caller's terminal, which
/// may close). What it prints on stderr before that (a bad option, a store that does not open,
/// libfuse's complaints) goes to a file the caller reads back when the server ends before the
/// mount is ready: the log file itself, or a temporary file removed once the mount is up. The
/// server reports the progress of a long load (a large XML store) to another temporary file; the
/// caller draws it as a bar when its stderr is a terminal, and waits as long as it advances.
enum Background {
    static func start(arguments: [String], mountPoint: String, destination: LogDestination) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        // The progress also keeps a long load from counting as a server that never answers.
        let progressPath = FileManager.default.temporaryDirectory.appendingPathComponent("storefs-\(getpid()).progress")
            .path
        let progressArguments = ["--progress-file", progressPath]
        defer { unlink(progressPath) }
        let name = arguments.first { $0.hasSuffix(".xml") || $0.hasSuffix(".sqlite") || $0.hasSuffix(".binary") }
        var bar = ProgressBar(
            label: "loading \(name.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "the store")", unit: "lines")
        defer { bar.end() }
        process.arguments =
            arguments + ["--foreground"] + Self.arguments(for: destination, given: arguments) + progressArguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let startupPath: String
        let isTemporary: Bool
        if case .file(let path) = destination {
            startupPath = path
            isTemporary = false
            try? FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        } else {
            startupPath = FileManager.default.temporaryDirectory.appendingPathComponent("storefs-\(getpid()).log").path
            isTemporary = true
        }
        // O_APPEND: the server's logger appends to the same file through its own descriptor.
        let descriptor = open(startupPath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else {
            throw ValidationError("cannot open the log file \(startupPath): \(String(cString: strerror(errno)))")
        }
        let startupOutput = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        let startOffset = startupOutput.seekToEndOfFile()
        process.standardError = startupOutput
        defer { if isTemporary { unlink(startupPath) } }
        try process.run()
        // 60 s without a sign of life; a load that reports progress (a large XML store) may take longer.
        var deadline = Date().addingTimeInterval(60)
        var lastDone = -1
        while Date() < deadline {
            if Readiness.isMounted(mountPoint) {
                // The load's end may have come since the last look: show it complete.
                if let (done, total) = LoadProgressDisplay.read(progressPath) { bar.update(done, of: total) }
                return
            }
            if let (done, total) = LoadProgressDisplay.read(progressPath), done != lastDone {
                lastDone = done
                deadline = Date().addingTimeInterval(60)
                bar.update(done, of: total)
            }
            if !process.isRunning {
                let output =
                    (try? Data(contentsOf: URL(fileURLWithPath: startupPath)))?.dropFirst(Int(startOffset)) ?? Data()
                bar.end()
                printError(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
                throw ExitCode(process.terminationStatus == 0 ? 1 : process.terminationStatus)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        process.terminate()
        bar.end()
        throw ValidationError("the mount did not become ready within 60 s (the server's log may say why)")
    }

    /// The server's log arguments, unless the caller gave them (then the server has them already).
    private static func arguments(for destination: LogDestination, given: [String]) -> [String] {
        guard !given.contains(where: { $0 == "--syslog" || $0 == "--log-file" || $0.hasPrefix("--log-file=") }) else {
            return []
        }
        switch destination {
        case .standardError: return []
        case .file(let path): return ["--log-file", path]
        case .systemLog: return ["--syslog"]
        }
    }
}
