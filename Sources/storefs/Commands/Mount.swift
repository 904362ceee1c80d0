import ArgumentParser
import Devices
import Foundation
import Logging
import ObjectGraph

struct Mount: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mount a store on a directory.",
        discussion: """
            Without --foreground, storefs returns once the mount is ready and serves in the \
            background. `storefs unmount MOUNTPOINT` commits pending changes, unmounts and returns \
            once the store is written; `fusermount3 -u MOUNTPOINT` (or SIGTERM to the server) makes \
            the server commit and end too, but returns before the store is written. Options (-o, \
            comma-separated): ro, evidence (nothing beside the store is \
            written; files read are hashed, user.storefs.evidence; edits go to an overlay in \
            memory: storefs overlay export), allow_other, auto_unmount, model=PATH, \
            list_fetched (list fetched properties' folders; they are reachable by name always), \
            commit_delay=SECONDS, cache_size=MiB, batch_size=N, metrics=ADDR:PORT (Prometheus text \
            at /metrics; docs/PRODUCTION.md), query_time=SECONDS, query_rows=N, query_memory=MiB \
            (what one query may cost: 10 s, 20000000 rows and values, 256 MiB); others go to \
            libfuse.
            """)

    @Argument(
        help:
            "The store file (.sqlite, .xml, .binary), a postgresql:// URL, or a folder of store files, then an existing, empty directory to mount it on; with --memory, the directory only."
    )
    var paths: [String]

    @Flag(name: .long, help: "Mount a new, empty in-memory store (nothing on disk; needs --model).")
    var memory = false

    @Option(name: .customShort("o"), help: "Mount options, comma-separated.")
    var options: [String] = []

    @Option(
        name: .long,
        help:
            "The model to mount the store with: an Xcode .xcdatamodeld/.xcdatamodel, a compiled .momd/.mom, or another store (`sample` names the built-in sample model). By default the store's own."
    )
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve Prometheus metrics at http://ADDR:PORT/metrics (PORT alone: on 127.0.0.1); as -o metrics=ADDR:PORT.",
            valueName: "ADDR:PORT"))
    var metrics: String?

    var store: String { paths[0] }
    var mountPoint: String { paths[paths.count - 1] }

    func validate() throws {
        guard paths.count == (memory ? 1 : 2) else {
            throw ValidationError(
                memory ? "give only the mount point with --memory" : "give the store and the mount point")
        }
        if memory && model == nil { throw ValidationError("--memory needs --model") }
    }

    @Flag(name: .long, help: "Serve in the foreground until unmounted or interrupted.")
    var foreground = false

    @Option(
        name: .long,
        help: """
            Append the log to this file. Default: stderr with --foreground (the journal under \
            systemd); in the background, the system log (journalctl -t storefs) or, where none \
            listens on /dev/log, /var/log/storefs.log (~/.local/state/storefs/storefs.log for users).
            """)
    var logFile: String?

    @Flag(name: .long, help: "Log to the system log (syslog, the journal on systemd machines) instead of stderr.")
    var syslog = false

    /// Where the background server reports the progress of a long load to the `storefs mount`
    /// waiting for it (see Background).
    @Option(name: .long, help: .private)
    var progressFile: String?

    @OptionGroup var log: LogOptions

    func run() throws {
        var configuration: MountConfiguration
        do {
            configuration = try MountConfiguration(options: options)
            if let metrics { configuration.metrics = try MetricsAddress(parsing: metrics) }
        } catch let error as MountOptionError {
            throw ValidationError(error.description)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: mountPoint, isDirectory: &isDirectory) || isStale(mountPoint)
        else {
            throw ValidationError("mount point \(mountPoint) does not exist; create it with mkdir first")
        }
        guard !Readiness.isMounted(mountPoint) else {
            throw ValidationError(
                "\(mountPoint) is already a mount point; unmount it first (fusermount3 -u \(mountPoint))")
        }
        // A store that is not a regular file (a FIFO) or a URL that does not parse is refused here,
        // before a background server starts: that server would block opening it.
        var url: URL?
        if !memory { url = try StoreTypes.location(store, allowingFolder: true) }
        let destination: LogDestination =
            if let logFile { .file(logFile) } else if syslog { .systemLog } else if foreground { .standardError } else {
                .backgroundDefault
            }
        // A backup storefs cannot read (encrypted) is refused here, where the terminal sees it.
        if let url, let refusal = BackupTree.refusal(of: url) { throw ValidationError(refusal) }
        if !foreground {
            // The version check is made here too, so that its refusal or notice reaches the
            // terminal (the server's own goes to its log).
            if let mismatch = try? versionMismatch(configuration: configuration) {
                guard configuration.mount.readOnly else { throw mismatch }
                printError("storefs: notice: \(mismatch.notice)")
            }
            try Background.start(
                arguments: Array(CommandLine.arguments.dropFirst()), mountPoint: mountPoint, destination: destination)
            return
        }
        let logger = log.bootstrap(destination: destination)
        if configuration.evidence && memory {
            throw ValidationError("-o evidence mounts a store file; an in-memory store has none")
        }
        if memory {
            let model = try StoreTypes.model(at: model ?? configuration.model)!
            let coordinator = PersistentStoreCoordinator(
                store: GraphStore(model: model), configuration: configuration.engine)
            try Server.serve(
                coordinator: coordinator, mountPoint: mountPoint, configuration: configuration, logger: logger)
            return
        }
        guard let url else { return }
        var isFolder: ObjCBool = false
        if !StoreURL.isService(url), FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder),
            isFolder.boolValue
        {
            guard !configuration.evidence else {
                throw ValidationError("-o evidence mounts one store file, not a folder of stores")
            }
            try Server.serveFolder(directory: url, mountPoint: mountPoint, configuration: configuration, logger: logger)
            return
        }
        guard try StoreTypes.exists(url) else {
            throw ValidationError(
                "\(StoreURL.describe(url)) does not exist (storefs create or storefs sample make one)")
        }
        let progress =
            progressFile.flatMap(LoadProgressDisplay.toFile)
            ?? LoadProgressDisplay.onTerminal(label: "loading \(url.lastPathComponent)")
        if configuration.evidence {
            try serveEvidence(url, configuration: configuration, progress: progress, logger: logger)
            return
        }
        var given = try StoreTypes.loadModel(at: model ?? configuration.model, logger: logger)
        if let mismatch = try versionMismatch(configuration: configuration, loaded: given) {
            guard configuration.mount.readOnly else { throw mismatch }
            logger.notice("\(mismatch.notice)")
            given = nil
        }
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: given?.model,
            options: StoreOptions(readOnly: configuration.mount.readOnly, progress: progress),
            configuration: configuration.engine,
            modelDescription: given?.source, forcedType: try StoreTypes.type(named: type))
        logger.info("model of \(StoreURL.describe(url)): \(coordinator.modelSource.description)")
        if try PersistentStoreCoordinator.storeType(for: url, among: StoreTypes.all).allowsSeveralWriters {
            // Other machines mount it too: a close hands the file's change to the store before it
            // returns (close-to-open), and reports a conflict or a lost server there.
            configuration.fileSystem.commitsOnClose = true
        }
        try Server.serve(coordinator: coordinator, mountPoint: mountPoint, configuration: configuration, logger: logger)
    }

    /// `-o evidence`: the store opened as evidence, its overlay served; at the end, the log says
    /// whether the store's folder is as it was.
    private func serveEvidence(_ url: URL, configuration: MountConfiguration, progress: LoadProgress?, logger: Logger)
        throws
    {
        let evidence = try EvidenceStore.open(
            at: url, model: model ?? configuration.model, type: type, configuration: configuration.engine,
            progress: progress, logger: logger)
        defer {
            let changed = evidence.close()
            if changed.isEmpty {
                logger.info(
                    "evidence: the folder of \(url.path) is as it was when mounted (\(evidence.record.folder.count) entries)"
                )
            } else {
                logger.error(
                    "evidence: the folder of \(url.path) changed while it was mounted: \(changed.joined(separator: "; "))"
                )
            }
        }
        var configuration = configuration
        configuration.fileSystem.rootAttributes = evidence.rootAttributes
        try Server.serve(
            coordinator: evidence.coordinator, mountPoint: mountPoint, configuration: configuration, logger: logger,
            source: url.path,
            made: evidence.serve)
    }

    /// Whether the store was written with another version of the model `--model` names (see
    /// ``ModelVersionCheck``); nil without --model, for a folder or memory mount, or a match.
    private func versionMismatch(configuration: MountConfiguration, loaded: StoreTypes.LoadedModel? = nil) throws
        -> ModelVersionCheck.Mismatch?
    {
        guard !memory, let modelPath = model ?? configuration.model else { return nil }
        let url = try StoreTypes.location(store, allowingFolder: true)
        if !StoreURL.isService(url) {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), !isFolder.boolValue else {
                return nil
            }
        } else if try !StoreTypes.exists(url) {
            return nil
        }
        guard let given = try loaded ?? StoreTypes.loadModel(at: modelPath) else { return nil }
        let storeType =
            try StoreTypes.type(named: type) ?? PersistentStoreCoordinator.storeType(for: url, among: StoreTypes.all)
        return try ModelVersionCheck.compare(
            storeAt: url, type: storeType, with: given.model, modelPath: StoreURL.redacting(modelPath),
            storePath: StoreURL.redacting(store))
    }

    private func isStale(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) != 0 && errno == ENOTCONN
    }
}
