import CFuse
import Logging

/// What every libfuse callback needs, reached through the session's userdata (no globals).
///
/// Threading: immutable, so shared freely by the libfuse worker threads.
final class SessionContext: Sendable {
    let fileSystem: any FileSystem
    let counters: OperationCounters
    let logger: Logger
    let wantsPOSIXACL: Bool

    init(fileSystem: any FileSystem, counters: OperationCounters, logger: Logger, wantsPOSIXACL: Bool) {
        self.fileSystem = fileSystem
        self.counters = counters
        self.logger = logger
        self.wantsPOSIXACL = wantsPOSIXACL
    }

    /// The context of the session `request` belongs to.
    static func of(_ request: fuse_req_t?) -> SessionContext {
        fromUserData(fuse_req_userdata(request))
    }

    static func fromUserData(_ userData: UnsafeMutableRawPointer?) -> SessionContext {
        Unmanaged<SessionContext>.fromOpaque(userData!).takeUnretainedValue()
    }
}
