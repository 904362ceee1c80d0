import Foundation
import ObjectGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A progress bar on stderr when it is a terminal; nothing otherwise (logs and CI stay clean).
struct ProgressBar {
    let label: String
    let unit: String
    let enabled = isatty(STDERR_FILENO) != 0
    private var lastDrawn = Date.distantPast
    private(set) var drawn = false
    private(set) var finished = false

    init(label: String, unit: String = "") {
        self.label = label
        self.unit = unit
    }

    mutating func update(_ done: Int, of total: Int) {
        guard enabled, !finished else { return }
        let now = Date()
        guard done >= total || now.timeIntervalSince(lastDrawn) > 0.1 else { return }
        lastDrawn = now
        drawn = true
        finished = done >= total
        let width = 30
        let filled = total > 0 ? min(width, done * width / total) : width
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let line = "\r\(label) [\(bar)] \(done)/\(total)\(unit.isEmpty ? "" : " " + unit)" + (finished ? "\n" : "")
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Ends a bar that was drawn but never reached its total (the work ended another way).
    mutating func end() {
        guard drawn, !finished else { return }
        finished = true
        FileHandle.standardError.write(Data("\n".utf8))
    }
}

/// How `storefs mount` shows a long store load (a large XML store is read whole before the mount
/// exists): a bar on the terminal in the foreground; in the background the server writes its
/// progress to a file that the waiting `storefs mount` reads and draws on its own terminal.
enum LoadProgressDisplay {
    /// A bar on stderr when it is a terminal; nil otherwise.
    static func onTerminal(label: String) -> LoadProgress? {
        guard isatty(STDERR_FILENO) != 0 else { return nil }
        let bar = SharedBar(ProgressBar(label: label, unit: "lines"))
        return LoadProgress { done, total in bar.state.withLock { $0.update(done, of: total) } }
    }

    /// Writes `DONE TOTAL` over the start of the file at `path` at every report.
    static func toFile(_ path: String) -> LoadProgress? {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        return LoadProgress { done, total in
            // Fixed width, so a shorter report never leaves digits of a longer one behind.
            let text = pad(done) + " " + pad(total) + "\n"
            _ = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
            if done >= total { close(descriptor) }
        }
    }

    /// What ``toFile(_:)`` wrote last, if anything.
    static func read(_ path: String) -> (done: Int, total: Int)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        guard fields.count == 2, fields[0] >= 0, fields[1] > 0 else { return nil }
        return (fields[0], fields[1])
    }

    private static func pad(_ number: Int) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 19 - digits.count)) + digits
    }

    private final class SharedBar: Sendable {
        let state: Mutex<ProgressBar>
        init(_ bar: ProgressBar) { state = Mutex(bar) }
    }
}

/// Writes a line to stderr (Glibc's `stderr` is not concurrency-safe to touch from Swift 6).
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
