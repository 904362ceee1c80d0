import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension DatabaseState {
    /// Why a version could not be written.
    public struct WriteError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Writes this version as a database file of its own at `path` (which must not exist): its
    /// pages in order, with page 1's header marked for a rollback journal (bytes 18 and 19), so
    /// that SQLite reads it whole without looking for a log. `cancelled` is asked between pages;
    /// a cancelled or failed write leaves no file.
    public func write(to path: String, cancelled: () -> Bool = { false }) throws(WriteError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw WriteError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        var failure: String?
        let size = files.pageSize
        if pageCount >= 1 {
            for number in 1...pageCount {
                if number % 256 == 0 && cancelled() {
                    failure = "cancelled"
                    break
                }
                guard var page = page(number), page.count == size else {
                    failure = "page \(number) of version \(version) cannot be read"
                    break
                }
                if number == 1 {
                    page[18] = 1
                    page[19] = 1
                }
                let offset = off_t(Int64(number - 1) * Int64(size))
                let written = page.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, size, offset) }
                guard written == size else {
                    failure = "writing \(path): \(String(cString: strerror(errno)))"
                    break
                }
            }
        }
        close(descriptor)
        if let failure {
            unlink(path)
            throw WriteError(description: failure)
        }
    }
}
