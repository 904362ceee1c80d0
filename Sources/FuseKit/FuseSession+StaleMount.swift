import Foundation

extension FuseSession {
    /// Detaches a dead FUSE mount at `path`, left by a daemon that crashed or was killed.
    ///
    /// Such a mount answers every access with ENOTCONN ("Transport endpoint is not connected"),
    /// or ECONNABORTED ("Software caused connection abort") when its requests went through
    /// io_uring, and nothing can be mounted over it. Returns true if `path` was such a mount and it was
    /// detached (`fusermount3 -u -z`); false if `path` is fine, missing, or could not be detached.
    public static func cleanUpStaleMount(at path: String) -> Bool {
        var status = stat()
        guard stat(path, &status) != 0, errno == ENOTCONN || errno == ECONNABORTED else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/fusermount3")
        process.arguments = ["-u", "-z", path]
        do {
            try process.run()
        } catch {
            return false
        }
        process.waitUntilExit()
        return process.terminationStatus == 0 && stat(path, &status) == 0
    }
}
