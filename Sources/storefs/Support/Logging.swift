import Logging

/// Log options every command shares: logs go to stderr (journald collects them under systemd).
struct LogOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Log debug detail too.")
    var verbose = false

    /// Sets up swift-log and returns the command's logger.
    func bootstrap(label: String = "storefs") -> Logger {
        let level: Logger.Level = verbose ? .debug : .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}

import ArgumentParser
