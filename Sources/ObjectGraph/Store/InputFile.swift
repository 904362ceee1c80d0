import Digest
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A file a store read when it opened, as it was read: its path, size, modification time and,
/// when asked for, the SHA-256 of exactly the bytes read (`storefs info`, evidence mounts).
///
/// Read-only opens read their inputs once, start to end, and work from what they read (a private
/// copy, or the bytes in memory), so the hash is that of what the store shows, and `sha256sum` of
/// the file gives the same digest while the file is unchanged.
///
/// Threading: a value; share it freely.
public struct InputFile: Sendable, Hashable, Codable {
    public var path: String
    /// Bytes read.
    public var size: Int64
    /// The modification time when it was read, ISO 8601 in UTC with nanoseconds.
    public var modified: String
    /// 64 hexadecimal digits; nil when the open was not asked to hash its inputs.
    public var sha256: String?

    public init(path: String, size: Int64, modified: String, sha256: String?) {
        self.path = path
        self.size = size
        self.modified = modified
        self.sha256 = sha256
    }

    /// What identifies a file's content without reading it: device, inode, size, and modification
    /// and change times to the nanosecond. A file whose stamp is the same was not written
    /// (beyond writes within one tick of the kernel's clock, which ``read(_:copyingTo:hashing:)``'s
    /// callers rule out by waiting until the file has been quiet longer than a tick).
    public struct Stamp: Sendable, Hashable {
        public var device: UInt64
        public var inode: UInt64
        public var size: Int64
        public var modified: timespec
        public var changed: timespec

        public init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = info.st_mtim
            changed = info.st_ctim
        }

        /// The stamp of the file at `path` (a symlink followed); nil when there is none.
        public init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            self.init(info)
        }

        public static func == (a: Stamp, b: Stamp) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size && a.modified.tv_sec == b.modified.tv_sec
                && a.modified.tv_nsec == b.modified.tv_nsec && a.changed.tv_sec == b.changed.tv_sec
                && a.changed.tv_nsec == b.changed.tv_nsec
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(device)
            hasher.combine(inode)
            hasher.combine(size)
            hasher.combine(modified.tv_sec)
            hasher.combine(modified.tv_nsec)
        }

        /// Seconds since the file's last modification, by the wall clock. (Every write sets the
        /// modification time; a status change alone, a chmod, changes no byte.)
        public var quietSeconds: Double {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
                - (Double(modified.tv_sec) + Double(modified.tv_nsec) / 1e9)
        }

        /// The modification time as ISO 8601 in UTC with nanoseconds (`2026-11-25T10:15:00.123456789Z`).
        public var modifiedText: String {
            var seconds = time_t(modified.tv_sec)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            return String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                Int(parts.tm_mday),
                Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(modified.tv_nsec))
        }
    }

    /// Reads the regular file at `url` from start to end, copying it to `destination` (a new file,
    /// mode 0600) when given and hashing it when `hashing`; returns what was read and the file's
    /// stamp when it was opened.
    ///
    /// The file is opened read-only (a symlink is followed: a store may be one), without blocking
    /// on a FIFO (anything but a regular file is refused: ``RegularFile``) and, where the kernel
    /// allows, without updating its access time. Nothing is written beside it.
    public static func read(_ url: URL, copyingTo destination: URL?, hashing: Bool) throws(ObjectGraphError) -> (
        InputFile, Stamp
    ) {
        let path = url.path
        func failure(_ what: String, _ code: Int32 = errno) -> ObjectGraphError {
            ObjectGraphError(.io, "\(path): \(what) (\(String(cString: strerror(code))))")
        }
        let (fd, info) = try RegularFile.openForReading(url, as: "stores and the files beside them")
        defer { close(fd) }
        let stamp = Stamp(info)
        var out: Int32 = -1
        if let destination {
            out = open(destination.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard out >= 0 else {
                throw ObjectGraphError(
                    .io,
                    "cannot make the private copy \(destination.path) (\(String(cString: strerror(errno)))); set TMPDIR to a folder with room"
                )
            }
        }
        defer { if out >= 0 { close(out) } }
        var hasher = SHA256.Hasher()
        var total: Int64 = 0
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, chunk)
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw failure("cannot be read")
            }
            if n == 0 { break }
            let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            if hashing { hasher.update(piece) }
            if out >= 0 {
                var written = 0
                while written < n {
                    let w = Glibc.write(out, piece.baseAddress! + written, n - written)
                    if w < 0 {
                        if errno == EINTR { continue }
                        let code = errno
                        throw ObjectGraphError(
                            .io,
                            "cannot write the private copy \(destination!.path) (\(String(cString: strerror(code)))); set TMPDIR to a folder with room"
                        )
                    }
                    written += w
                }
            }
            total += Int64(n)
        }
        let file = InputFile(
            path: path, size: total, modified: stamp.modifiedText, sha256: hashing ? hasher.finalizeHex() : nil)
        return (file, stamp)
    }

    /// Hashes bytes already read (an atomic store's whole file) as an input file.
    public static func hashed(_ data: Data, of url: URL, stamp: Stamp?) -> InputFile {
        var hasher = SHA256.Hasher()
        hasher.update(data)
        return InputFile(
            path: url.path, size: Int64(data.count), modified: stamp?.modifiedText ?? "", sha256: hasher.finalizeHex())
    }
}
