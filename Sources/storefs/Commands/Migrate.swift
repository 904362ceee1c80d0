import ArgumentParser
import Foundation
import ObjectGraph

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a store into a new store of another type (Core Data's migratePersistentStore).",
        discussion: """
            Every object keeps its key, values and relationships; custom metadata and the store \
            UUID come along; the new store records its own type. SRC is only read. DST must not \
            exist: it is written under a temporary name and appears only when complete.
            """)

    @Argument(help: "The store to read (.sqlite, .xml, .binary, or a postgresql:// URL).")
    var source: String

    @Argument(help: "The new store; its suffix (or postgresql:// URL) gives the type unless --type says otherwise.")
    var destination: String

    @Option(name: .long, help: "The destination's type: sqlite, xml or binary.")
    var type: String?

    @Option(name: .long, help: "The model to read the source with (Xcode model, compiled model or store); by default its own.")
    var model: String?

    @OptionGroup var log: LogOptions

    func run() throws {
        _ = log.bootstrap()
        let sourceURL = StoreTypes.location(source)
        let destinationURL = StoreTypes.location(destination)
        guard try StoreTypes.exists(sourceURL) else {
            throw ValidationError("\(StoreURL.describe(sourceURL)) does not exist")
        }
        let destinationType: any PersistentStoreType
        if let found = try StoreTypes.type(named: type) {
            destinationType = found
        } else {
            destinationType = try PersistentStoreCoordinator.storeType(for: destinationURL, among: StoreTypes.all)
        }
        let started = Date()
        let coordinator = try PersistentStoreCoordinator.open(
            at: sourceURL, types: StoreTypes.all, model: try StoreTypes.model(at: model), options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        var progress = ProgressBar(label: "migrate")
        try coordinator.migrate(to: destinationURL, type: destinationType) { done, total in progress.update(done, of: total) }
        var objects = 0
        for entity in coordinator.model.entities { objects += try coordinator.store.count(of: entity.id) }
        let seconds = Date().timeIntervalSince(started)
        print(
            "migrated \(objects) objects from \(StoreURL.describe(sourceURL)) (\(coordinator.store.storeType)) to \(StoreURL.describe(destinationURL)) "
                + "(\(destinationType.name)) in \(String(format: "%.2f", seconds)) s")
    }
}
