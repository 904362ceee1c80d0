import Foundation
import Logging

/// The fuse module's `enable_uring` parameter: whether the kernel offers FUSE over io_uring to
/// the mounts made from now on.
///
/// Linux 6.14+ built with CONFIG_FUSE_IO_URING has it, off by default; root may turn it on. It
/// affects only mounts made afterwards, and only servers that ask (`-o io_uring`), so turning it
/// on changes nothing for other FUSE filesystems on the machine.
///
/// Threading: stateless; safe from any thread.
enum KernelIOUringSwitch {
    static let path = "/sys/module/fuse/parameters/enable_uring"

    /// Turns the parameter on if it is off and this process may, and says so in the log. Says
    /// nothing where the kernel has no such parameter (the log line of the first request says
    /// /dev/fuse is used, and why).
    static func turnOn(logger: Logger) {
        guard let current = try? String(contentsOfFile: path, encoding: .utf8) else { return }
        guard current.hasPrefix("N") || current.hasPrefix("0") else { return }
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            logger.info(
                "the kernel offers FUSE over io_uring only once \(path) is 1, and this process may not set it (\(reason)); root can: echo 1 > \(path)"
            )
            return
        }
        defer { close(descriptor) }
        guard write(descriptor, "1", 1) == 1 else {
            logger.info("could not turn on FUSE over io_uring (\(path)): \(String(cString: strerror(errno)))")
            return
        }
        logger.info("turned on FUSE over io_uring in the kernel (echo 1 > \(path))")
    }
}
