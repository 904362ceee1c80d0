import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Opening a file a user named (a store, a patch, a mapping model) without ever waiting on it.
///
/// A FIFO, a device or a socket named as a store would block `open(2)` or `read(2)` until
/// another process writes, or never end (`/dev/zero`): every command and mount would hang, a
/// background server with them. Only regular files (and symlinks to them: a store may be one)
/// are read. ``check(_:as:)`` looks with stat(2), which never blocks; ``openForReading(_:as:)``
/// opens with O_NONBLOCK and looks again at what it opened with fstat(2), so a file swapped for a
/// FIFO in between is refused too.
///
/// Stateless; safe from any thread.
public enum RegularFile {
    /// Whether `path` exists: nil when it does not, else whether it is a regular file (a symlink
    /// followed).
    public static func isRegular(_ path: String) -> Bool? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (info.st_mode & S_IFMT) == S_IFREG
    }

    /// What kind of file `mode` says, for messages: "a FIFO", "a directory", ...
    static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a folder"
        default: "not a regular file"
        }
    }

    /// The refusal of a file that is not a regular one; `role` names what it was given as ("a
    /// store", "a patch").
    static func refusal(_ path: String, mode: mode_t, as role: String) -> ObjectGraphError {
        ObjectGraphError(
            .unsupported,
            "\(path) is \(kind(of: mode)), not a regular file; storefs reads only regular files (or links to them) as \(role)"
        )
    }

    /// Refuses a file at `url` that exists and is not a regular file. A missing file passes
    /// (the caller says what a missing file means).
    public static func check(_ url: URL, as role: String = "stores") throws(ObjectGraphError) {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw refusal(url.path, mode: info.st_mode, as: role) }
    }

    /// Linux's O_NOATIME (fcntl.h; not exported to Swift): a read that leaves the access time.
    /// Allowed to the file's owner and to root; others open without it.
    static let noAccessTime: Int32 = 0o1000000

    /// A descriptor of the regular file at `url`, open for reading, and its status. The open
    /// never waits (O_NONBLOCK, which a regular file ignores afterwards) and leaves the access
    /// time where the kernel allows; the caller closes the descriptor.
    ///
    /// - Throws: ``ObjectGraphError/Code/notFound`` for a missing file,
    ///   ``ObjectGraphError/Code/unsupported`` for one that is not regular,
    ///   ``ObjectGraphError/Code/io`` for one that cannot be opened.
    public static func openForReading(_ url: URL, as role: String = "stores") throws(ObjectGraphError) -> (
        descriptor: Int32, status: stat
    ) {
        let path = url.path
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK
        var fd = open(path, flags | noAccessTime)
        if fd < 0 && errno == EPERM { fd = open(path, flags) }
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw ObjectGraphError(.notFound, "\(path) does not exist") }
            throw ObjectGraphError(.io, "\(path) cannot be opened for reading (\(String(cString: strerror(code))))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw ObjectGraphError(.io, "\(path) cannot be examined (\(String(cString: strerror(code))))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw refusal(path, mode: info.st_mode, as: role)
        }
        return (fd, info)
    }

    /// The first `maxLength` bytes of the regular file at `url` (all of it when shorter; `nil`
    /// for all of it whatever its size).
    public static func read(_ url: URL, maxLength: Int? = nil, as role: String = "stores") throws(ObjectGraphError)
        -> Data
    {
        let (fd, info) = try openForReading(url, as: role)
        defer { close(fd) }
        let limit = maxLength.map { max($0, 0) } ?? Int.max
        var data = Data()
        // The size as the file says, when believable, so a whole store is read without copies as
        // it grows; past that, growth by doubling (the file may also change while it is read).
        let size = max(Int(info.st_size), 0)
        data.reserveCapacity(min(limit, size <= 16 << 30 ? size : 64 << 20))
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while data.count < limit {
            let n = Glibc.read(fd, buffer.baseAddress, min(chunk, limit - data.count))
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                let code = errno
                throw ObjectGraphError(.io, "\(url.path) cannot be read (\(String(cString: strerror(code))))")
            }
            if n == 0 { break }
            data.append(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), count: n)
        }
        return data
    }
}
