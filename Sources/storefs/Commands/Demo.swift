import ArgumentParser
import Foundation
import ObjectGraph

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mount a built-in sample store (employees, departments, managers, projects) and show what to try.",
        discussion: """
            Writes the sample company of `storefs sample` (seed 1) to a temporary SQLite store, \
            mounts it in the foreground and prints commands to try in another terminal. Ctrl-C \
            commits any edits, unmounts and deletes the store.
            """)

    @Argument(help: "Where to mount (created if missing).")
    var mountPoint = "/tmp/storefs-demo"

    @Option(name: .long, help: "Objects in the sample store, in units of 100 (at least 100).")
    var objects = 3_000

    @OptionGroup var log: LogOptions

    func validate() throws {
        guard objects > 0 else { throw ValidationError("--objects must be positive") }
    }

    func run() throws {
        let logger = log.bootstrap()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("storefs-demo-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let store = folder.appendingPathComponent("Company.sqlite")
        say("storefs demo: writing a sample company store of \(objects) objects to \(store.path)")
        let coordinator = try PersistentStoreCoordinator.open(
            at: store, types: StoreTypes.all, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        var progress = ProgressBar(label: "sample")
        try SampleGenerator(objectCount: objects).populate(coordinator.newContext()) { done, total in
            progress.update(done, of: total)
        }
        let employee = try Self.exampleEmployee(coordinator)
        say("storefs demo: mounting it on \(mountPoint)")
        let m = mountPoint
        try Server.serve(
            coordinator: coordinator, mountPoint: mountPoint, configuration: try MountConfiguration(options: []),
            logger: logger
        ) {
            let e = "\(m)/Employee/\(employee)"
            let tries: [(String, String)] = [
                ("ls \(m)", "the entities"),
                ("ls \(m)/Department | head", "the objects"),
                ("ls -l \(e)", "attributes (files) and relationships (links)"),
                ("cat \(e)/lastName \(e)/salary", ""),
                ("readlink \(e)/department", "a to-one relationship"),
                ("ls \(e)/projects", "a to-many relationship"),
                ("ls -l \(m)/Person | head", "objects of subentities appear as links"),
                ("getfattr -d \(m)", "store metadata"),
                ("getfattr -d \(e)", "the object's URI, version, fetched properties"),
                ("ls \(e)/colleagues | head", "a fetched property (reachable by name)"),
                ("echo Hopper > \(e)/lastName", "edit a value"),
                ("grep -rl Lovelace \(m)/Employee | head", "search")
            ]
            let width = tries.filter { !$0.1.isEmpty }.map(\.0.count).max() ?? 0
            let lines = tries.map { command, comment in
                comment.isEmpty
                    ? "  " + command
                    : "  " + command.padding(toLength: width, withPad: " ", startingAt: 0) + "   # " + comment
            }
            say(
                """

                storefs demo: a sample company store (\(objects) objects) is mounted on \(m)

                Try, in another terminal:
                \(lines.joined(separator: "\n"))

                Press Ctrl-C to unmount and end the demo.

                """)
        }
    }

    /// The first employee who is not a manager and has a photo: its folder shows every kind of
    /// entry (text and binary attributes, to-one and to-many relationships). Managers are
    /// Employees too, but in Employee/ they are links to Manager/.
    static func exampleEmployee(_ coordinator: PersistentStoreCoordinator) throws -> String {
        let context = coordinator.newContext()
        guard let entity = context.model.entityID(named: "Employee") else { return "p1" }
        let ids = try context.objectIDs(of: entity, includingSubentities: false).sorted {
            $0.key.rawValue < $1.key.rawValue
        }
        for id in ids where try context.value(of: "photo", for: id) != nil {
            return "p\(id.key.rawValue)"
        }
        return ids.first.map { "p\($0.key.rawValue)" } ?? "p1"
    }
}

/// Writes `text` and a newline to stdout at once, not through print's buffer: stdout may be a
/// pipe or a file, and the demo serves until Ctrl-C.
private func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
