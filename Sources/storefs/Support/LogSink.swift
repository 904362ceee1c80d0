import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// Writes log lines to one ``LogDestination``, each line in one write(2).
///
/// On stderr attached to the journal (systemd sets JOURNAL_STREAM to the device and inode of the
/// stream it gave the service) each line starts with its syslog priority, `<3>` for an error, which
/// journald strips and files the line under (`journalctl -p warning` then filters), and carries no
/// timestamp: the journal adds its own. Elsewhere a line is `TIME LEVEL: MESSAGE`.
///
/// Threading: safe from any thread; it holds only immutable state, and write(2) on one descriptor
/// (O_APPEND for files) and syslog(3) are thread-safe.
final class LogSink: Sendable {
    private enum Target {
        case descriptor(Int32, priorities: Bool)
        case systemLog
    }

    private let target: Target

    init(_ destination: LogDestination) {
        switch destination {
        case .standardError:
            target = .descriptor(STDERR_FILENO, priorities: Self.standardErrorIsTheJournal())
        case .file(let path):
            try? FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
            if descriptor >= 0 {
                target = .descriptor(descriptor, priorities: false)
            } else {
                // Said once on stderr (shown by `storefs mount` when the server fails to start);
                // the log then goes there.
                printError("storefs: cannot open the log file \(path): \(String(cString: strerror(errno)))")
                target = .descriptor(STDERR_FILENO, priorities: Self.standardErrorIsTheJournal())
            }
        case .systemLog:
            // openlog keeps the pointer: this one lives as long as the process.
            openlog(Self.identifier, LOG_PID | LOG_NDELAY, LOG_DAEMON)
            target = .systemLog
        }
    }

    nonisolated(unsafe) private static let identifier: UnsafeMutablePointer<CChar> = strdup("storefs")

    /// Whether stderr is the journal's stream, by JOURNAL_STREAM's `DEVICE:INODE` (systemd.exec(5)):
    /// inherited by a child whose stderr was redirected, the variable alone would lie.
    static func standardErrorIsTheJournal() -> Bool {
        guard let value = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// The syslog priority of a level (RFC 5424: 2 critical, 3 error, 4 warning, 5 notice,
    /// 6 informational, 7 debug).
    static func priority(of level: Logger.Level) -> Int32 {
        switch level {
        case .trace, .debug: LOG_DEBUG
        case .info: LOG_INFO
        case .notice: LOG_NOTICE
        case .warning: LOG_WARNING
        case .error: LOG_ERR
        case .critical: LOG_CRIT
        }
    }

    func write(_ level: Logger.Level, _ message: String) {
        switch target {
        case .systemLog:
            message.withCString { text in
                withVaList([text]) { vsyslog(Self.priority(of: level), "%s", $0) }
            }
        case .descriptor(let descriptor, let priorities):
            let line: String
            if priorities {
                // journald reads a priority at the start of each line.
                let prefix = "<\(Self.priority(of: level))>"
                line = message.split(separator: "\n", omittingEmptySubsequences: false).map { prefix + $0 + "\n" }
                    .joined()
            } else {
                line = "\(Self.timestamp()) \(level): \(message)\n"
            }
            let bytes = Array(line.utf8)
            var written = 0
            while written < bytes.count {
                let result = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else { return }
                written += result
            }
        }
    }

    /// Local time with milliseconds and the UTC offset, as `2026-01-31T14:05:09.120+0100`.
    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        localtime_r(&seconds, &parts)
        func format(_ pattern: String) -> String {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = buffer.withUnsafeMutableBufferPointer { bytes in
                bytes.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    strftime($0, bytes.count, pattern, &parts)
                }
            }
            return String(decoding: buffer.prefix(count), as: UTF8.self)
        }
        let milliseconds = Int(now.tv_nsec / 1_000_000)
        let fraction =
            milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return format("%Y-%m-%dT%H:%M:%S") + "." + fraction + format("%z")
    }
}

/// The swift-log handler of every storefs command: formats a message with its metadata and hands
/// it to the ``LogSink`` set up by ``LogOptions/bootstrap(label:destination:)``.
///
/// Threading: a value; loggers copy it. Safe from any thread (the sink is).
struct StoreFSLogHandler: LogHandler {
    let sink: LogSink
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(sink: LogSink) { self.sink = sink }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        var text = event.message.description
        if !merged.isEmpty {
            text += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        sink.write(event.level, text)
    }
}
