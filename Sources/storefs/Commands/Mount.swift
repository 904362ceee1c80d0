import ArgumentParser
import Foundation
import ObjectGraph

struct Mount: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mount a store on a directory.",
        discussion: """
            Without --foreground, storefs returns once the mount is ready and serves in the \
            background; `fusermount3 -u MOUNTPOINT` (or SIGTERM) commits pending changes and \
            unmounts. Options (-o, comma-separated): ro, allow_other, auto_unmount, model=PATH, \
            commit_delay=SECONDS, cache_size=MiB, batch_size=N; others go to libfuse.
            """)

    @Argument(help: "The store file (.sqlite).")
    var store: String

    @Argument(help: "An existing, empty directory.")
    var mountPoint: String

    @Option(name: .customShort("o"), help: "Mount options, comma-separated.")
    var options: [String] = []

    @Option(name: .long, help: "The model, when the store holds none.")
    var model: String?

    @Flag(name: .long, help: "Serve in the foreground until unmounted or interrupted.")
    var foreground = false

    @Option(name: .long, help: "Where the background server writes its log (default: discarded).")
    var logFile: String?

    @OptionGroup var log: LogOptions

    func run() throws {
        let configuration: MountConfiguration
        do {
            configuration = try MountConfiguration(options: options)
        } catch let error as MountOptionError {
            throw ValidationError(error.description)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: mountPoint, isDirectory: &isDirectory) || isStale(mountPoint) else {
            throw ValidationError("mount point \(mountPoint) does not exist; create it with mkdir first")
        }
        guard !Readiness.isMounted(mountPoint) else {
            throw ValidationError("\(mountPoint) is already a mount point; unmount it first (fusermount3 -u \(mountPoint))")
        }
        if !foreground {
            try Background.start(arguments: Array(CommandLine.arguments.dropFirst()), mountPoint: mountPoint, logFile: logFile)
            return
        }
        let logger = log.bootstrap()
        let url = URL(fileURLWithPath: store)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ValidationError("\(store) does not exist (storefs create or storefs sample make one)")
        }
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: try StoreTypes.model(at: model ?? configuration.model),
            options: StoreOptions(readOnly: configuration.mount.readOnly), configuration: configuration.engine)
        try Server.serve(coordinator: coordinator, mountPoint: mountPoint, configuration: configuration, logger: logger)
    }

    private func isStale(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) != 0 && errno == ENOTCONN
    }
}
