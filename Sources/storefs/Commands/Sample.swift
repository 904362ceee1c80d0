import ArgumentParser
import Foundation
import ObjectGraph

struct Sample: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a deterministic sample store (the built-in company model) of about N objects.",
        discussion: """
            The company comes in units of 100 objects: a department, its head and 4 other \
            managers, 80 employees, 4 projects and 10 milestones. --objects is rounded down to \
            a whole number of units, and is at least one unit: --objects 250 writes 200 objects, \
            --objects 50 writes 100.
            """)

    @Option(name: .long, help: "How many objects: rounded down to a multiple of 100, at least 100.")
    var objects = 5_000

    @Option(name: .long, help: "Seed of the generator: the same seed gives the same store.")
    var seed: UInt64 = 1

    @Argument(
        help:
            "The store to write: a file whose suffix gives the type (.sqlite), or a postgresql:// URL. It must not exist."
    )
    var store: String

    @OptionGroup var log: LogOptions

    func run() throws {
        _ = log.bootstrap()
        let url = try StoreTypes.location(store)
        guard try !StoreTypes.exists(url) else {
            throw ValidationError("\(StoreURL.redacting(store)) exists; choose a new file (or another schema)")
        }
        guard objects > 0 else { throw ValidationError("--objects must be positive") }
        let unit = SampleGenerator.unitSize
        let written = max(1, objects / unit) * unit
        if written != objects {
            printError("storefs sample: the sample comes in units of \(unit) objects; writing \(written)")
        }
        let started = Date()
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        defer { coordinator.close() }
        var progress = ProgressBar(label: "sample")
        do {
            try SampleGenerator(objectCount: objects, seed: seed).populate(coordinator.newContext()) { done, total in
                progress.update(done, of: total)
            }
        } catch {
            coordinator.close()
            if StoreURL.isService(url) {
                try? PersistentStoreCoordinator.storeType(for: url, among: StoreTypes.all).removeStore(at: url)
            } else {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
            }
            throw error
        }
        let count = coordinator.model.entities.reduce(0) { $0 + ((try? coordinator.store.count(of: $1.id)) ?? 0) }
        print(
            "wrote \(count) objects to \(StoreURL.redacting(store)) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s"
        )
    }
}
