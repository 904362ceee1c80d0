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
        help:
            "The model: an Xcode .xcdatamodeld/.xcdatamodel (or its contents file), a compiled .momd/.mom, or a store whose model to use."
    )
    var model: String

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
            throw ValidationError("\(StoreURL.describe(url)) exists; choose a new file (or another schema)")
        }
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: try StoreTypes.model(at: model),
            options: StoreOptions(createIfMissing: true))
        coordinator.close()
        print("created \(StoreURL.describe(url)) with \(coordinator.model.entities.count) entities")
    }
}
