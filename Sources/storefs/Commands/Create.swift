import ArgumentParser
import Foundation
import ObjectGraph

struct Create: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write an empty store for a model.",
        discussion: """
            A SQLite or XML store records the entity version hashes Core Data computes for the model, \
            so an app with the same model opens it without a migration.
            """)

    @Option(
        name: .long,
        help: "The model: an Xcode .xcdatamodeld/.xcdatamodel (or its contents file), a compiled .momd/.mom, or a store whose model to use.")
    var model: String

    @Argument(help: "The store to write; its suffix gives the type (.sqlite). It must not exist.")
    var store: String

    @OptionGroup var log: LogOptions

    func run() throws {
        _ = log.bootstrap()
        let url = URL(fileURLWithPath: store)
        guard !FileManager.default.fileExists(atPath: url.path) else {
            throw ValidationError("\(store) exists; choose a new file")
        }
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: try StoreTypes.model(at: model),
            options: StoreOptions(createIfMissing: true))
        coordinator.close()
        print("created \(store) with \(coordinator.model.entities.count) entities")
    }
}
