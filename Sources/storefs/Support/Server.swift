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
}
