import Foundation
import FuseKit
import Logging
import ObjectGraph
import StoreFS

/// Opens a store and serves it on a mount point until unmounted (the foreground path of `mount`
/// and `demo`).
enum Server {
    static func serve(
        coordinator: PersistentStoreCoordinator, mountPoint: String, configuration: MountConfiguration, logger: Logger,
        onReady: () -> Void = {}
    ) throws {
        unblockStopSignals()
        if FuseSession.cleanUpStaleMount(at: mountPoint) {
            logger.warning("\(mountPoint) was left by a process that died; unmounted it")
        }
        var fsConfiguration = configuration.fileSystem
        fsConfiguration.mountPoint = URL(fileURLWithPath: mountPoint).standardizedFileURL.path
        let counters = OperationCounters()
        let fileSystem = StoreFileSystem(
            coordinator: coordinator, configuration: fsConfiguration, counters: counters, logger: logger)
        var options = configuration.mount
        options.fsName = coordinator.store.url?.path ?? "memory"
        let session = try FuseSession(fileSystem: fileSystem, mountPoint: mountPoint, options: options, counters: counters)
        try session.mount()
        logger.info("mounted \(options.fsName) on \(mountPoint)\(options.readOnly ? " (read-only)" : "")")
        Readiness.notifySystemd()
        onReady()
        try session.run()
        coordinator.store.close()
        logger.info("unmounted \(mountPoint)")
    }

    /// Unblocks SIGINT, SIGTERM and SIGHUP on this thread (and so on the libfuse threads it
    /// starts). The signal mask is inherited: a parent that spawns storefs from a thread that
    /// blocks them (Foundation's Process on a Dispatch or Swift Testing thread does) would
    /// otherwise leave SIGTERM pending forever, and `kill` would never unmount or commit.
    private static func unblockStopSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }
}
