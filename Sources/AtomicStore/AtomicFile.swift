import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import ObjectGraph

/// Whole-file reads and crash-safe whole-file replacement for the atomic store types.
///
/// A save writes a temporary file in the store's directory, fsyncs it, renames it over the store
/// and fsyncs the directory: after a crash or a failure the store is either the old file or the
/// new one, and a failure removes the temporary file. Stateless; safe from any thread.
package enum AtomicFile {
    /// The whole store file at `url`. Only a regular file is read (``RegularFile``): a FIFO or a
    /// device is refused at once, never waited on.
    package static func read(_ url: URL) throws(ObjectGraphError) -> Data {
        try RegularFile.read(url)
    }

    /// The first `maxLength` bytes of the file at `url` (all of it when shorter), and whether
    /// that is the whole file.
    package static func readPrefix(_ url: URL, maxLength: Int) throws(ObjectGraphError) -> (data: Data, isWhole: Bool) {
        // One byte more than asked tells a file of exactly `maxLength` bytes from a longer one.
        let data = try RegularFile.read(url, maxLength: maxLength < Int.max ? maxLength + 1 : maxLength)
        return data.count > maxLength ? (data.prefix(maxLength), false) : (data, true)
    }

    /// Replaces the file at `url` with `data` atomically.
    ///
    /// - Throws: ``ObjectGraphError/Code/io`` naming the path and the OS error; the old file is
    ///   left as it was and no temporary file remains.
    package static func write(_ data: Data, to url: URL) throws(ObjectGraphError) {
        try write(to: url) { (sink) throws(ObjectGraphError) in try sink.write(data) }
    }

    /// Where a save writes the new file's bytes, piece by piece (``write(to:_:)``): a large store
    /// is written as it is encoded, never held whole in memory.
    package struct Sink {
        fileprivate let fd: Int32
        fileprivate let temp: String
        fileprivate let path: String
        /// Bytes written so far.
        package private(set) var count = 0

        /// Writes all of `bytes` to the temporary file (retrying short writes and EINTR).
        package mutating func write(_ bytes: UnsafeRawBufferPointer) throws(ObjectGraphError) {
            guard let base = bytes.baseAddress else { return }
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.write(fd, base + offset, bytes.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw .writing("\(path): could not save the store (writing temporary file \(temp))", errno: errno)
                }
                offset += n
            }
            count += bytes.count
        }

        package mutating func write(_ bytes: [UInt8]) throws(ObjectGraphError) {
            var failure: ObjectGraphError?
            bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
                do throws(ObjectGraphError) { try write(buffer) } catch { failure = error }
            }
            if let failure { throw failure }
        }

        package mutating func write(_ data: Data) throws(ObjectGraphError) {
            var failure: ObjectGraphError?
            data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
                do throws(ObjectGraphError) { try write(buffer) } catch { failure = error }
            }
            if let failure { throw failure }
        }
    }

    /// Replaces the file at `url` atomically with what `produce` writes to its sink. A failure of
    /// `produce` or of any write leaves the old file as it was and no temporary file.
    package static func write(to url: URL, _ produce: (inout Sink) throws(ObjectGraphError) -> Void)
        throws(ObjectGraphError)
    {
        let path = url.path
        let directory = url.deletingLastPathComponent().path
        let temp =
            directory + "/." + url.lastPathComponent + ".storefs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        var mode: mode_t = 0o644
        var st = stat()
        if stat(path, &st) == 0 { mode = st.st_mode & 0o7777 }

        func fail(_ step: String, _ code: Int32) -> ObjectGraphError {
            // A full disk (or quota) is said as such: the filesystem answers ENOSPC, not EIO.
            .writing("\(path): could not save the store (\(step))", errno: code)
        }
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw fail("creating temporary file \(temp)", errno) }
        var failure: ObjectGraphError?
        var sink = Sink(fd: fd, temp: temp, path: path)
        do throws(ObjectGraphError) { try produce(&sink) } catch { failure = error }
        if failure == nil, fsync(fd) != 0 { failure = fail("fsync of \(temp)", errno) }
        if close(fd) != 0, failure == nil { failure = fail("closing \(temp)", errno) }
        if failure == nil, rename(temp, path) != 0 { failure = fail("renaming \(temp) over the store", errno) }
        if let failure {
            unlink(temp)
            throw failure
        }
        // The rename is durable only once the directory is; a failure here cannot undo the save.
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    /// Removes the temporary files a save of `url` left when its process died between creating
    /// and renaming them (`kill -9`, power loss): `.NAME.storefs-PID-N` beside the store whose PID
    /// is no running process. Saves of live processes (another mount of the store) are left
    /// alone. Returns the names removed; called when a store opens for writing.
    @discardableResult
    package static func removeStaleTemporaries(of url: URL) -> [String] {
        let directory = url.deletingLastPathComponent().path
        let prefix = "." + url.lastPathComponent + ".storefs-"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var removed: [String] = []
        for name in names where name.hasPrefix(prefix) {
            let parts = name.dropFirst(prefix.count).split(separator: "-")
            guard parts.count == 2, let pid = pid_t(parts[0]), pid > 0, UInt32(parts[1]) != nil else { continue }
            guard kill(pid, 0) != 0, errno == ESRCH else { continue }
            if unlink(directory + "/" + name) == 0 { removed.append(name) }
        }
        return removed
    }

    /// A token of the file's identity and last change: inode, size and mtime (ns), hashed with
    /// FNV-1a 64; nil when the file cannot be stat'ed.
    package static func changeToken(_ url: URL) -> Int64? {
        var st = stat()
        guard stat(url.path, &st) == 0 else { return nil }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for value in [
            UInt64(st.st_ino), UInt64(bitPattern: Int64(st.st_size)),
            UInt64(bitPattern: Int64(st.st_mtim.tv_sec)), UInt64(bitPattern: Int64(st.st_mtim.tv_nsec)),
            UInt64(st.st_dev)
        ] {
            var v = value
            for _ in 0..<8 {
                hash = (hash ^ (v & 0xff)) &* 0x100_0000_01b3
                v >>= 8
            }
        }
        return Int64(bitPattern: hash)
    }
}
