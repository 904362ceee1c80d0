import ArgumentParser
import Foundation
import ObjectGraph

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mount a built-in sample store (employees, departments, managers, projects) and show what to try.")

    @Argument(help: "Where to mount (created if missing).")
    var mountPoint = "/tmp/storefs-demo"

    @Option(name: .long, help: "Objects in the sample store.")
    var objects = 3_000

    @OptionGroup var log: LogOptions

    func run() throws {
        let logger = log.bootstrap()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("storefs-demo-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let store = folder.appendingPathComponent("Company.sqlite")
        let coordinator = try PersistentStoreCoordinator.open(
            at: store, types: StoreTypes.all, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        try SampleGenerator(objectCount: objects).populate(coordinator.newContext())
        let m = mountPoint
        try Server.serve(
            coordinator: coordinator, mountPoint: mountPoint, configuration: try MountConfiguration(options: []),
            logger: logger
        ) {
            // Written at once, not through print's buffer: stdout may be a pipe or a file, and the
            // demo serves until Ctrl-C.
            let text =
                """
                storefs demo: a sample company store (\(objects) objects) is mounted on \(m)
                store file: \(store.path)

                Try, in another terminal:
                  ls \(m)                                  # the entities
                  ls \(m)/Department                       # the objects
                  ls -l \(m)/Employee/p6                   # attributes (files) and relationships (links)
                  cat \(m)/Employee/p6/lastName \(m)/Employee/p6/salary
                  readlink \(m)/Employee/p6/department     # a to-one relationship
                  ls \(m)/Department/p1/employees | head   # a to-many relationship
                  ls -l \(m)/Person | head                 # subentity objects appear as links
                  getfattr -d \(m)                         # store metadata
                  getfattr -d \(m)/Employee/p6             # the object's URI, version, fetched properties
                  ls \(m)/Department/p1/highEarners        # a fetched property (reachable by name)
                  echo Hopper > \(m)/Employee/p6/lastName  # edit a value
                  grep -rl Lovelace \(m)/Employee | head

                Press Ctrl-C to unmount and end the demo.

                """
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}
