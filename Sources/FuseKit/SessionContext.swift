import CFuse
import Logging
import Synchronization

/// What every libfuse callback needs, reached through the session's userdata (no globals).
///
/// Threading: immutable but for one flag set by INIT before any other request, so shared freely
/// by the libfuse worker threads.
final class SessionContext: Sendable {
    let fileSystem: any FileSystem
    let counters: OperationCounters
    let logger: Logger
    /// ``MountOptions/opensWithoutRequests`` was asked for.
    let wantsOpensWithoutRequests: Bool
    /// The kernel offered zero-message opens (FUSE_CAP_NO_OPEN_SUPPORT) and they were asked for:
    /// OPEN and FLUSH are answered ENOSYS. Set during INIT.
    let opensWithoutRequests = Atomic<Bool>(false)
    /// The same for directories (FUSE_CAP_NO_OPENDIR_SUPPORT): OPENDIR is answered ENOSYS.
    let opensDirectoriesWithoutRequests = Atomic<Bool>(false)

    init(fileSystem: any FileSystem, counters: OperationCounters, logger: Logger, options: MountOptions) {
        self.fileSystem = fileSystem
        self.counters = counters
        self.logger = logger
        self.wantsOpensWithoutRequests = options.opensWithoutRequests
    }

    /// The context of the session `request` belongs to.
    static func of(_ request: fuse_req_t?) -> SessionContext {
        fromUserData(fuse_req_userdata(request))
    }

    static func fromUserData(_ userData: UnsafeMutableRawPointer?) -> SessionContext {
        Unmanaged<SessionContext>.fromOpaque(userData!).takeUnretainedValue()
    }
}
