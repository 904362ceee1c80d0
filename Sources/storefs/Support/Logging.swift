import ArgumentParser
import Foundation
import Logging

/// Log options every command shares.
///
/// Levels: warnings, errors and what a user should know (mounted, unmounted, the store changed
/// outside the mount) always; `-v` adds what someone debugging a mount wants (the options in
/// effect, the store and its model, each commit and its reason, the requests served at unmount);
/// `-vv` adds per-request detail (kernel cache notifications the kernel had nothing for, lookups
/// of names that do not exist), which is noise except when chasing one request.
struct LogOptions: ParsableArguments {
    @Flag(
        name: .shortAndLong,
        help: "Log debug detail (mount options, commits, requests served); twice (-vv) for per-request detail.")
    var verbose: Int

    var level: Logger.Level {
        switch verbose {
        case 0: .info
        case 1: .debug
        default: .trace
        }
    }

    /// Sets up swift-log to write to `destination` and returns the command's logger.
    func bootstrap(label: String = "storefs", destination: LogDestination = .standardError) -> Logger {
        let level = self.level
        let sink = LogSink(destination)
        LoggingSystem.bootstrap { _ in
            var handler = StoreFSLogHandler(sink: sink)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}

/// Where the log goes: stderr (with syslog priorities when stderr is the journal), a file, or
/// the system log.
enum LogDestination: Equatable, CustomStringConvertible {
    /// stderr: a terminal, or the journal under systemd (which JOURNAL_STREAM tells).
    case standardError
    /// Appended to this file.
    case file(String)
    /// syslog(3), through /dev/log: the journal on systemd machines (`journalctl -t storefs`),
    /// /var/log/syslog or /var/log/daemon.log where rsyslog runs.
    case systemLog

    /// Whether a system logger listens on /dev/log (journald provides it too). A socket file
    /// nobody listens on (left by a logger that died) refuses the connection: syslog(3) would
    /// then drop every line without a word, so that counts as no logger.
    static var systemLogIsAvailable: Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in "/dev/log".utf8.enumerated() { raw[i] = byte }
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    /// Where a background mount logs when not told: the system log where one listens, otherwise
    /// /var/log/storefs.log for root and `$XDG_STATE_HOME/storefs/storefs.log`
    /// (~/.local/state/storefs/storefs.log) for other users.
    static var backgroundDefault: LogDestination {
        if systemLogIsAvailable { return .systemLog }
        return .file(defaultLogFile)
    }

    static var defaultLogFile: String {
        if getuid() == 0 { return "/var/log/storefs.log" }
        let environment = ProcessInfo.processInfo.environment
        let state =
            environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (FileManager.default.homeDirectoryForCurrentUser.path + "/.local/state")
        return state + "/storefs/storefs.log"
    }

    var description: String {
        switch self {
        case .standardError: "stderr"
        case .file(let path): path
        case .systemLog: "syslog (journalctl -t storefs)"
        }
    }
}
