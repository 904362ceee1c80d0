import CFuse
import Foundation
import Logging
import Synchronization

/// One FUSE mount of a ``FileSystem``: creates the libfuse session, mounts it, runs the
/// multi-threaded request loop and tears everything down when the loop ends.
///
/// ```swift
/// let session = try FuseSession(fileSystem: fs, mountPoint: "/mnt/notes",
///                               options: MountOptions(), counters: OperationCounters())
/// try session.mount()        // returns once the kernel mount exists: signal readiness now
/// try session.run()          // blocks until SIGINT/SIGTERM/SIGHUP, `fusermount3 -u` or exit()
/// ```
///
/// Lifecycle: ``mount()`` once, then ``run()`` once, on a thread that may block (not a Swift
/// concurrency pool thread). When the loop ends, ``run()`` calls ``FileSystem/willUnmount()``
/// exactly once, then unmounts and destroys the session. ``exit()`` may be called from any thread.
///
/// Threading: `Sendable`; state changes are serialized by a mutex.
public final class FuseSession: Sendable {
    /// Where the filesystem is mounted.
    public let mountPoint: String
    /// The options it was created with.
    public let options: MountOptions
    /// The counters every request is recorded in.
    public let counters: OperationCounters

    private let fileSystem: any FileSystem
    private let handle: SessionHandle
    private let context: Unmanaged<SessionContext>
    private let invalidator: KernelInvalidationQueue
    private let logger = Logger(label: "storefs.fusekit")
    private let phase = Mutex(Phase.created)

    /// How the kernel and the server exchange requests.
    public enum Transport: Int, Sendable {
        /// read(2) and write(2) on /dev/fuse: one system call each way per request.
        case device = 1
        /// FUSE over io_uring (Linux 6.14+): requests and replies share a ring per CPU, and a
        /// request is answered on the CPU that asked.
        case ioUring = 2
    }

    /// How requests arrive: nil until the first request after INIT was served (the way is said
    /// in the log then).
    public var transport: Transport? {
        Transport(rawValue: context.takeUnretainedValue().transport.load(ordering: .relaxed))
    }

    private enum Phase {
        case created, mounted, running, finished
        /// Finished, but a kernel notification was still in flight, so the session was not freed.
        case leaked
    }

    /// Creates the libfuse session (not yet mounted).
    ///
    /// - Throws: ``FuseError`` when libfuse rejects the options (it prints which on stderr).
    public init(
        fileSystem: any FileSystem, mountPoint: String, options: MountOptions, counters: OperationCounters
    ) throws(FuseError) {
        self.fileSystem = fileSystem
        self.mountPoint = mountPoint
        self.options = options
        self.counters = counters
        let context = Unmanaged.passRetained(
            SessionContext(
                fileSystem: fileSystem, counters: counters, logger: logger, options: options, mountPoint: mountPoint))
        var arguments = fuse_args(argc: 0, argv: nil, allocated: 0)  // FUSE_ARGS_INIT is a macro
        for argument in options.arguments { fuse_opt_add_arg(&arguments, argument) }
        defer { fuse_opt_free_args(&arguments) }
        var operations = makeLowLevelOperations()
        guard
            let session = cfuse_session_new(
                &arguments, &operations, MemoryLayout<fuse_lowlevel_ops>.size, context.toOpaque())
        else {
            context.release()
            throw FuseError(
                "libfuse could not create a session with options \(options.arguments.dropFirst()) "
                    + "(see the message above; unknown -o options are the usual cause)")
        }
        self.context = context
        self.handle = SessionHandle(raw: session)
        context.takeUnretainedValue().session.withLock { $0 = SessionHandle(raw: session) }
        self.invalidator = KernelInvalidationQueue(session: handle, counters: counters, logger: logger)
    }

    deinit {
        switch phase.withLock({ $0 }) {
        case .created:
            fuse_session_destroy(handle.raw)
        case .mounted, .running:
            fuse_session_unmount(handle.raw)
            fuse_session_destroy(handle.raw)
        case .finished:
            break
        case .leaked:
            return  // libfuse may still use the context.
        }
        context.release()
    }

    // MARK: - Mounting

    /// Mounts the session at ``mountPoint`` and hands the filesystem its invalidator
    /// (``FileSystem/didMount(invalidator:)``). Returns once the kernel mount exists, so the
    /// caller may report readiness; requests are served once ``run()`` starts.
    ///
    /// - Throws: ``FuseError`` when the mount point is missing, not a directory or a stale mount,
    ///   when /dev/fuse cannot be opened, or when the mount itself fails.
    public func mount() throws(FuseError) {
        try phase.withLock { phase throws(FuseError) in
            guard phase == .created else { throw FuseError("\(mountPoint): the session was already mounted") }
            try checkMountPoint()
            try Self.checkFuseDevice()
            // The kernel decides at mount (in the INIT it sends) whether it offers io_uring.
            if options.ioUring { KernelIOUringSwitch.turnOn(logger: logger) }
            guard fuse_session_mount(handle.raw, mountPoint) == 0 else {
                throw FuseError("mounting at \(mountPoint) failed (libfuse printed the reason above)")
            }
            phase = .mounted
        }
        // The program using FuseKit says "mounted" to its users; this is the library's detail.
        logger.debug("kernel mount of \(options.fsName) at \(mountPoint) made")
        fileSystem.didMount(invalidator: invalidator)
    }

    private func checkMountPoint() throws(FuseError) {
        var status = stat()
        guard stat(mountPoint, &status) == 0 else {
            let code = errno
            if code == ENOTCONN || code == ECONNABORTED {
                throw FuseError(
                    "\(mountPoint) is a dead FUSE mount (\(String(cString: strerror(code)))); "
                        + "unmount it with `fusermount3 -u -z \(mountPoint)` and try again")
            }
            throw FuseError("mount point \(mountPoint): \(String(cString: strerror(code))); create the directory first")
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw FuseError("mount point \(mountPoint) is not a directory")
        }
    }

    /// Throws unless /dev/fuse can be opened for reading and writing.
    static func checkFuseDevice() throws(FuseError) {
        let descriptor = open("/dev/fuse", O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw FuseError(
                "needs /dev/fuse: \(String(cString: strerror(errno))) (load the fuse module, "
                    + "or give the container the device and CAP_SYS_ADMIN)")
        }
        close(descriptor)
    }

    // MARK: - Running

    /// Serves requests on up to ``MountOptions/maxThreads`` libfuse threads until the loop ends
    /// (a signal if ``MountOptions/handlesSignals``, `fusermount3 -u`, or ``exit()``), then calls
    /// `stopping` (a service manager may want to hear it: the commit that follows can take a
    /// while), ``FileSystem/willUnmount()``, unmounts and destroys the session.
    ///
    /// - Throws: ``FuseError`` if the session is not mounted or the loop failed.
    public func run(stopping: () -> Void = {}) throws(FuseError) {
        try phase.withLock { phase throws(FuseError) in
            guard phase == .mounted else {
                throw FuseError("\(mountPoint): run() needs a mounted, not yet run session")
            }
            phase = .running
        }
        var signalsInstalled = false
        if options.handlesSignals {
            signalsInstalled = fuse_set_signal_handlers(handle.raw) == 0
            if !signalsInstalled { logger.warning("could not install signal handlers; SIGINT will not unmount") }
        }
        let result = cfuse_session_loop_mt(handle.raw, UInt32(max(1, options.maxThreads)), -1, 0)
        if signalsInstalled { fuse_remove_signal_handlers(handle.raw) }
        stopping()
        tearDown()
        if result < 0 {
            throw FuseError("the FUSE request loop of \(mountPoint) failed: \(String(cString: strerror(-result)))")
        }
    }

    /// Ends ``run()`` from any thread.
    ///
    /// `fuse_session_exit` only sets a flag that the worker threads check after a request, so one
    /// request is sent to wake them: a `statfs` of the mount point, which the kernel never answers
    /// from its caches. The mount stays until ``run()`` unmounts it, after ``FileSystem/willUnmount()``.
    public func exit() {
        let running = phase.withLock { phase -> Bool in
            guard phase == .mounted || phase == .running else { return false }
            fuse_session_exit(handle.raw)
            return phase == .running
        }
        guard running else { return }
        let path = mountPoint
        Thread.detachNewThread {
            var statistics = statvfs()
            _ = statvfs(path, &statistics)
        }
    }

    private func tearDown() {
        // Requests still served on FuseKit's own threads reply through the session: interrupted
        // and answered before it goes (they stop at their next check, well inside the wait).
        let lockWaitsAnswered = context.takeUnretainedValue().lockWaits.close(waitingUpTo: 5)
        let answered = context.takeUnretainedValue().slowRequests.close(waitingUpTo: 30) && lockWaitsAnswered
        if !answered { logger.error("a slow request of \(mountPoint) was still being served at unmount") }
        // Notifications use the session's fd: stop them before it is closed. The wait is bounded
        // because one may block on a directory lock held by a request nobody will answer now.
        var drained = invalidator.close(waitingUpTo: 2)
        fileSystem.willUnmount()
        context.takeUnretainedValue().waitingRequests.stop()
        fuse_session_unmount(handle.raw)
        if !drained { drained = invalidator.close(waitingUpTo: 5) }
        if drained && answered {
            fuse_session_destroy(handle.raw)
        } else {
            logger.error("a kernel notification or reply for \(mountPoint) never returned; leaking the session")
        }
        phase.withLock { $0 = drained && answered ? .finished : .leaked }
        logger.debug("session of \(mountPoint) ended")
    }
}
