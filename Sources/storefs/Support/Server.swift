import ArgumentParser
import Devices
import Foundation
import FuseKit
import Logging
import ObjectGraph
import StoreFS

/// Opens a store and serves it on a mount point until unmounted (the foreground path of `mount`
/// and `demo`).
///
/// The server records its mount (``MountRegistry``) and, when it ends, how: `storefs unmount`
/// waits for that. It exits 0 when every change was saved and ``unsavedExitStatus`` when some
/// were kept in a recovery file instead.
enum Server {
    /// The exit status of a server that could not save everything (EX_TEMPFAIL).
    static let unsavedExitStatus: Int32 = 75

    /// `source` names the store where its store has no file of its own (an evidence mount's
    /// overlay); `made` is told the filesystem once it exists.
    static func serve(
        coordinator: PersistentStoreCoordinator, mountPoint: String, configuration: MountConfiguration, logger: Logger,
        source: String? = nil, onReady: () -> Void = {}, made: (StoreFileSystem) -> Void = { _ in }
    ) throws {
        let store = coordinator.store
        let entities = coordinator.model.entities
        let keptModel = (try? store.metadata().embeddedModel) != nil
        let source = source ?? StoreURL.describe(store.url)
        logger.debug(
            "store \(source): \(store.storeType), \(entities.count) entities, model \(keptModel ? "kept in the store" : "given or inferred")"
        )
        defer { coordinator.close() }
        try serve(
            mountPoint: mountPoint, source: source, storeType: store.storeType, configuration: configuration,
            logger: logger, onReady: onReady
        ) {
            fsConfiguration, counters, commits in
            let fileSystem = StoreFileSystem(
                coordinator: coordinator, configuration: fsConfiguration, counters: counters,
                commitStatistics: commits, logger: logger)
            made(fileSystem)
            // Read-only and evidence mounts of a store whose files hold versions (SQLite) show
            // them in `.wal` (docs/FORENSICS.md).
            let showsVersions = fsConfiguration.readOnly || coordinator.store is OverlayStore
            guard showsVersions, coordinator.store.recovering != nil else {
                return (fileSystem, { [coordinator] in [coordinator] })
            }
            return (StoreVersionsFileSystem(store: fileSystem), { [coordinator] in [coordinator] })
        }
    }

    /// Serves a folder (any depth) or an iOS backup: every store found in it by content is a
    /// folder of the mount, the rest of the tree is shown as it is, read-only.
    static func serveFolder(directory: URL, mountPoint: String, configuration: MountConfiguration, logger: Logger)
        throws
    {
        let tree: any DeviceTree
        do {
            tree =
                BackupTree.isBackup(directory) ? try BackupTree.open(directory) : try DirectoryTree(folder: directory)
        } catch {
            throw ValidationError(error.message)
        }
        logger.debug("\(tree.summary)")
        try serve(
            mountPoint: mountPoint, source: directory.path, storeType: "folder", configuration: configuration,
            logger: logger
        ) {
            fsConfiguration, counters, commits in
            let fileSystem = StoreFolderFileSystem(
                tree: tree, types: StoreTypes.all, configuration: fsConfiguration,
                engineConfiguration: configuration.engine, counters: counters, commitStatistics: commits,
                logger: logger)
            return (fileSystem, { [fileSystem] in fileSystem.openCoordinators })
        }
    }

    /// `makeFileSystem` is given the configuration, the counters and the commit statistics the
    /// filesystem records into, and returns it with where its coordinators are (for metrics).
    private static func serve(
        mountPoint: String, source: String, storeType: String, configuration: MountConfiguration, logger: Logger,
        onReady: () -> Void = {},
        makeFileSystem: (StoreFSConfiguration, OperationCounters, CommitStatistics?) -> (
            any SavingFileSystem, @Sendable () -> [PersistentStoreCoordinator]
        )
    ) throws {
        unblockStopSignals()
        if FuseSession.cleanUpStaleMount(at: mountPoint) {
            logger.warning("\(mountPoint) was left by a process that died; unmounted it")
        }
        var fsConfiguration = configuration.fileSystem
        fsConfiguration.mountPoint = URL(fileURLWithPath: mountPoint).standardizedFileURL.path
        // Metrics listen before the mount is made: a port that cannot be had fails the mount.
        var metrics: (values: MountMetrics, server: MetricsServer)?
        if let address = configuration.metrics {
            let values = MountMetrics(source: source, storeType: storeType, version: StoreFSCommand.version)
            do {
                let server = try MetricsServer(at: address) { [values] in values.exposition() }
                metrics = (values, server)
            } catch {
                throw ValidationError(error.description)
            }
        }
        let counters = metrics?.values.counters ?? OperationCounters()
        let (fileSystem, coordinators) = makeFileSystem(fsConfiguration, counters, metrics?.values.commits)
        if let metrics {
            metrics.values.attach(coordinators)
            metrics.server.start()
            logger.info("metrics of \(source) at http://\(metrics.server.address)/metrics")
        }
        defer { metrics?.server.stop() }
        var options = configuration.mount
        options.fsName = source
        // Resolved before mounting: once mounted, looking at the mount point needs the server,
        // which answers only once the session runs.
        let registered = MountRegistry.standardized(mountPoint)
        let session = try FuseSession(
            fileSystem: fileSystem, mountPoint: mountPoint, options: options, counters: counters)
        logger.debug("options: \(configuration.summary)")
        try session.mount()
        var record = MountRegistry.Record(pid: getpid(), mountPoint: registered, store: source)
        MountRegistry.write(record)
        logger.info("mounted \(options.fsName) on \(mountPoint)\(options.readOnly ? " (read-only)" : "")")
        Readiness.notifySystemd()
        onReady()
        do {
            // STOPPING=1 before the commit at unmount, so `systemctl status` says "deactivating".
            try session.run(stopping: { Readiness.notifySystemd("STOPPING=1\nSTATUS=committing and unmounting") })
        } catch {
            record.exitStatus = 1
            record.message = "storefs: \(error)"
            MountRegistry.write(record)
            throw error
        }
        logger.debug("served \(requestSummary(counters))")
        logger.info("unmounted \(mountPoint)")
        guard let unsaved = fileSystem.unsavedChanges else {
            record.exitStatus = 0
            MountRegistry.write(record)
            return
        }
        let files = unsaved.recoveryFiles.map(\.path).joined(separator: ", ")
        let message =
            "storefs: \(unsaved.count) changes to \(source) could not be saved (\(unsaved.summary)); "
            + (files.isEmpty
                ? "writing them to a recovery file failed too (see the log)"
                : "they are kept in \(files); apply with `storefs recover`")
        record.exitStatus = unsavedExitStatus
        record.message = message
        MountRegistry.write(record)
        printError(message)
        throw ExitCode(unsavedExitStatus)
    }

    /// `1234 requests (lookup 300, getattr 12, …), 2 errors, 40 cache notifications`, largest first.
    private static func requestSummary(_ counters: OperationCounters) -> String {
        let events: Set<OperationCounters.Operation> = [.errors, .invalidations, .invalidationFailures]
        var requests: [(name: String, count: Int)] = []
        for operation in OperationCounters.Operation.allCases where !events.contains(operation) {
            let count = counters.count(of: operation)
            if count > 0 { requests.append((operation.rawValue, count)) }
        }
        requests.sort { $0.count != $1.count ? $0.count > $1.count : $0.name < $1.name }
        let total = requests.reduce(0) { $0 + $1.count }
        var text = "\(total) requests"
        if !requests.isEmpty {
            text += " (" + requests.map { "\($0.name) \($0.count)" }.joined(separator: ", ") + ")"
        }
        text += ", \(counters.count(of: .errors)) answered with an error"
        text += ", \(counters.count(of: .invalidations)) cache notifications to the kernel"
        return text
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
