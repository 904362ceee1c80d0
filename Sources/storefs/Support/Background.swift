import ArgumentParser
import Foundation

/// The background path of `storefs mount`: starts the same command with --foreground in a new
/// session and returns once the mount is ready, as FUSE filesystems do. Starting a new process
/// rather than forking keeps the Swift runtime's threads out of harm's way.
enum Background {
    static func start(arguments: [String], mountPoint: String, logFile: String?) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments + ["--foreground"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let logURL: URL
        if let logFile {
            logURL = URL(fileURLWithPath: logFile)
        } else {
            logURL = FileManager.default.temporaryDirectory.appendingPathComponent("storefs-\(getpid()).log")
        }
        if !FileManager.default.fileExists(atPath: logURL.path) {
            _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: logURL)
        log.seekToEndOfFile()
        let startOffset = log.offsetInFile
        process.standardError = log
        try process.run()
        defer {
            if logFile == nil { try? FileManager.default.removeItem(at: logURL) }
        }
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if Readiness.isMounted(mountPoint) { return }
            if !process.isRunning {
                let output = (try? Data(contentsOf: logURL)).map { $0.dropFirst(Int(startOffset)) } ?? Data()
                printError(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
                throw ExitCode(process.terminationStatus == 0 ? 1 : process.terminationStatus)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        process.terminate()
        throw ValidationError("the mount did not become ready within 60 s")
    }
}
