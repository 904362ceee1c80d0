import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A progress bar on stderr when it is a terminal; nothing otherwise (logs and CI stay clean).
struct ProgressBar {
    let label: String
    let enabled = isatty(STDERR_FILENO) != 0
    private var lastDrawn = Date.distantPast

    init(label: String) { self.label = label }

    mutating func update(_ done: Int, of total: Int) {
        guard enabled else { return }
        let now = Date()
        guard done >= total || now.timeIntervalSince(lastDrawn) > 0.1 else { return }
        lastDrawn = now
        let width = 30
        let filled = total > 0 ? min(width, done * width / total) : width
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let line = "\r\(label) [\(bar)] \(done)/\(total)" + (done >= total ? "\n" : "")
        FileHandle.standardError.write(Data(line.utf8))
    }
}

/// Writes a line to stderr (Glibc's `stderr` is not concurrency-safe to touch from Swift 6).
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
