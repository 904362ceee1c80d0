import ArgumentParser
import Foundation
import ObjectGraph

struct Sample: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a deterministic sample store (the built-in company model) of about N objects.")

    @Option(name: .long, help: "About how many objects (rounded down to a multiple of 100).")
    var objects = 5_000

    @Option(name: .long, help: "Seed of the generator: the same seed gives the same store.")
    var seed: UInt64 = 1

    @Argument(help: "The store to write; its suffix gives the type (.sqlite). It must not exist.")
    var store: String

    @OptionGroup var log: LogOptions

    func run() throws {
        _ = log.bootstrap()
        let url = URL(fileURLWithPath: store)
        guard !FileManager.default.fileExists(atPath: url.path) else {
            throw ValidationError("\(store) exists; choose a new file")
        }
        guard objects > 0 else { throw ValidationError("--objects must be positive") }
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
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
            throw error
        }
        let count = coordinator.model.entities.reduce(0) { $0 + ((try? coordinator.store.count(of: $1.id)) ?? 0) }
        print("wrote \(count) objects to \(store) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }
}
