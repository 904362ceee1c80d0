import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Buffered writing to stdout for commands that stream large outputs (`export`, `diff`, `history`): one
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

extension StandardOutput {
    /// Writes what stdio still holds of standard output (what `print` wrote), and fails the
    /// command (exit 1, the reason on standard error) when that or any earlier write of it
    /// failed: `storefs info > /dev/full` is an error, as it is for `cat`, never a silent success.
    static func finishPrinted() {
        // stdio's `stdout` is a C global Swift 6 refuses to touch (shared mutable state); its
        // address is looked up instead. Only the main thread uses it, at the end of a command.
        guard let variable = dlsym(nil, "stdout"),
            let stream = variable.assumingMemoryBound(to: UnsafeMutablePointer<FILE>?.self).pointee
        else { return }
        errno = 0
        let flushed = fflush(stream) == 0
        let code = errno
        guard !flushed || ferror(stream) != 0 else { return }
        let reason = !flushed && code != 0 ? String(cString: strerror(code)) : "a write to it failed"
        printError("storefs: cannot write the output: \(reason)")
        exit(1)
    }
}

struct StandardOutputError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
