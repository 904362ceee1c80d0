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

    /// The libfuse session, set once it exists (after this context), for the one notification
    /// FuseKit sends inline: see `dropSetIDBits` in LowLevelOperations.swift.
    let session = Mutex<SessionHandle?>(nil)
    /// Where the session is mounted, for the log.
    let mountPoint: String
    /// ``MountOptions/ioUring`` was asked for.
    let wantsIOUring: Bool
    /// ``MountOptions/cachesLinkTargets`` was asked for.
    let wantsCachedLinkTargets: Bool
    /// The kernel offered FUSE over io_uring in INIT. Set during INIT.
    let kernelOffersIOUring = Atomic<Bool>(false)
    /// How requests arrive, learnt from the first one served: a ``FuseSession/Transport`` raw
    /// value, 0 until then.
    let transport = Atomic<Int>(0)
    /// Opens the kernel reads by itself (``PassthroughFiles``).
    let passthrough = PassthroughFiles()
    /// Requests that may wait, answered off the ring threads.
    let waitingRequests = WaitingRequests()

    /// Where requests that may take long are served (``FileSystem/mayTakeLong(_:)``).
    let slowRequests: SlowRequests
    /// Blocked lock requests (F_SETLKW, flock without LOCK_NB), each waiting on a thread of
    /// its own so that it holds none of the threads other requests need; interrupted at unmount.
    /// Past ``lockWaitThreads`` waiters more wait in its queue, still interruptible.
    let lockWaits = SlowRequests(maximumThreads: lockWaitThreads)
    static let lockWaitThreads = 256
    /// ``FileSystem/holdsFileLocks``, asked once.
    let holdsFileLocks: Bool

    init(
        fileSystem: any FileSystem, counters: OperationCounters, logger: Logger, options: MountOptions,
        mountPoint: String
    ) {
        self.fileSystem = fileSystem
        self.counters = counters
        self.logger = logger
        self.wantsOpensWithoutRequests = options.opensWithoutRequests
        self.wantsIOUring = options.ioUring
        self.wantsCachedLinkTargets = options.cachesLinkTargets
        self.mountPoint = mountPoint
        self.slowRequests = SlowRequests(maximumThreads: options.slowRequestThreads)
        self.holdsFileLocks = fileSystem.holdsFileLocks
    }

    /// Records (once) which way `request` came, and says it in the log: the kernel picks the way
    /// at INIT, and libfuse falls back to /dev/fuse when the ring cannot start, so the first
    /// request is where it is known for sure.
    func noteTransport(of request: fuse_req_t?) {
        guard transport.load(ordering: .relaxed) == 0 else { return }
        let ring = fuse_req_is_uring(request)
        let value = ring ? FuseSession.Transport.ioUring : .device
        guard transport.compareExchange(expected: 0, desired: value.rawValue, ordering: .relaxed).exchanged else {
            return
        }
        if ring {
            logger.info("FUSE requests of \(mountPoint) arrive through io_uring")
        } else if !wantsIOUring {
            logger.info(
                "FUSE requests of \(mountPoint) arrive through /dev/fuse (io_uring is turned off for this mount, as STOREFS_IO_URING=0 does)"
            )
        } else if kernelOffersIOUring.load(ordering: .relaxed) {
            logger.warning(
                "FUSE requests of \(mountPoint) arrive through /dev/fuse: the kernel offered io_uring but its ring could not be set up (libfuse's message is on stderr)"
            )
        } else {
            logger.info(
                "FUSE requests of \(mountPoint) arrive through /dev/fuse: the kernel does not offer io_uring (it needs CONFIG_FUSE_IO_URING and /sys/module/fuse/parameters/enable_uring set to 1)"
            )
        }
    }

    /// The context of the session `request` belongs to.
    static func of(_ request: fuse_req_t?) -> SessionContext {
        fromUserData(fuse_req_userdata(request))
    }

    static func fromUserData(_ userData: UnsafeMutableRawPointer?) -> SessionContext {
        Unmanaged<SessionContext>.fromOpaque(userData!).takeUnretainedValue()
    }
}
