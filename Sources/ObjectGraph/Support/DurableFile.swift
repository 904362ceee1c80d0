import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// New files that survive a power cut once the call returns: written, fsync'd, and their folder
/// fsync'd, so that both the bytes and the name are on the disk (a file's fsync does not make
/// its directory entry durable). For files storefs tells the user it kept, such as the recovery
/// file an unmount names.
///
/// Stateless; safe from any thread.
package enum DurableFile {
    /// Creates `url` with `data` (never over an existing file) and makes it durable.
    ///
    /// - Throws: ``ObjectGraphError/Code/exists`` when `url` exists, ``ObjectGraphError/Code/io``
    ///   naming the step and the OS error otherwise; a file that could not be written whole is
    ///   removed.
    package static func create(_ data: Data, at url: URL, mode: mode_t = 0o644) throws(ObjectGraphError) {
        let path = url.path
        func fail(_ step: String, _ code: Int32) -> ObjectGraphError {
            ObjectGraphError(
                code == EEXIST ? .exists : .io, "\(path): could not \(step): \(String(cString: strerror(code)))")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw fail("create the file", errno) }
        var failure: ObjectGraphError?
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, base + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = fail("write it", errno)
                    return
                }
                offset += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = fail("sync it", errno) }
        if close(fd) != 0, failure == nil { failure = fail("close it", errno) }
        if let failure {
            unlink(path)
            throw failure
        }
        // The name is durable only once the folder is; a failure here leaves the file in place.
        syncFolder(url.deletingLastPathComponent())
    }

    /// Makes the entries of `folder` (new files, renames, links) durable; false when the folder
    /// cannot be opened or synced.
    @discardableResult
    package static func syncFolder(_ folder: URL) -> Bool {
        let fd = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return fsync(fd) == 0
    }
}
