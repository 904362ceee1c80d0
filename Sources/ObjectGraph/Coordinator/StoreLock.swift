import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One writer per store file: a lock file beside the store (`.Company.sqlite.storefs-lock`),
/// held with `flock` by whoever opens the store for writing, so that a second read-write mount
/// (or `storefs recover` while it is mounted) is refused with a message naming the holder instead
/// of interleaving commits with the first. Readers take no lock and never create the file.
///
/// The lock is on a file beside the store rather than on the store itself because atomic stores
/// (XML, binary) are replaced by rename on every save: a lock on the old file would not stop a
/// writer that opens the new one. It is released when the process ends, however it ends.
///
/// Threading: immutable after creation; ``release()`` once.
public final class StoreLock: Sendable {
    public let path: String
    private let descriptor: Int32
    private let released = Atomic<Bool>(false)

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// The lock file's path for the store at `url`.
    public static func lockPath(for url: URL) -> String {
        url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).storefs-lock").path
    }

    /// Takes the lock for the store at `url`, or fails with ``ObjectGraphError/Code/busy`` naming
    /// the process that holds it.
    public static func acquire(for url: URL) throws(ObjectGraphError) -> StoreLock {
        let path = lockPath(for: url)
        for _ in 0..<3 {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                throw ObjectGraphError(
                    .readOnly,
                    "\(url.path) cannot be opened for writing: its lock file \(path) cannot be made "
                        + "(\(String(cString: strerror(errno)))); open it read-only (-o ro)")
            }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(
                    in: .whitespacesAndNewlines)
                close(fd)
                throw ObjectGraphError(
                    .busy,
                    "\(url.path) is open for writing by another storefs (\(holder.map { $0.isEmpty ? "its lock file is \(path)" : $0 } ?? path)); "
                        + "unmount that one first, or mount this one read-only (-o ro)")
            }
            // The file may have been removed (and made anew) by the holder between our open and
            // our lock: only a lock on the file the path names now counts.
            var opened = stat()
            var named = stat()
            guard fstat(fd, &opened) == 0, stat(path, &named) == 0, opened.st_ino == named.st_ino,
                opened.st_dev == named.st_dev
            else {
                close(fd)
                continue
            }
            let arguments = CommandLine.arguments.joined(separator: " ")
            let text = "pid \(getpid()): \(arguments)\n"
            _ = ftruncate(fd, 0)
            _ = text.withCString { write(fd, $0, strlen($0)) }
            return StoreLock(path: path, descriptor: fd)
        }
        throw ObjectGraphError(.busy, "\(url.path): its lock file \(path) keeps changing; try again")
    }

    /// Removes the lock file and lets go of the lock (once; later calls do nothing).
    public func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        unlink(path)
        close(descriptor)
    }
}
