import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Buffered writing to stdout for commands that stream large outputs (`export`, `diff`): one
/// write(2) per 256 KiB instead of one per line, and an error (a full disk) reported to the
/// command instead of lost.
///
/// A reader that went away (`storefs export ... | head`) ends the command quietly, as it ends
/// other tools: with the status of SIGPIPE, without an error message.
///
/// Threading: one writer, one thread.
struct StandardOutput {
    /// Bytes gathered before a write.
    static let bufferSize = 256 << 10

    var buffer: [UInt8] = []

    init() { buffer.reserveCapacity(Self.bufferSize + (64 << 10)) }

    /// Writes the buffer once it holds ``bufferSize`` bytes.
    mutating func flushIfFull() throws {
        if buffer.count >= Self.bufferSize { try flush() }
    }

    /// Writes everything gathered.
    mutating func flush() throws {
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { raw in
                write(STDOUT_FILENO, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                if errno == EPIPE { exit(128 + SIGPIPE) }
                throw StandardOutputError(message: "cannot write the output: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

struct StandardOutputError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
