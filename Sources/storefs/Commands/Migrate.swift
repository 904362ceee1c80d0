import ArgumentParser
import Foundation
import ObjectGraph
import XMLStore

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a store into a new store of another type, or migrate it to a new version of its model.",
        discussion: """
            Without --model (or with the model the store was written with): Core Data's \
            migratePersistentStore. Every object keeps its key, values and relationships; custom metadata \
            and the store UUID come along; the new store records its own type. \
            With --model naming another version of the model (an Xcode .xcdatamodeld or \
            .xcdatamodel, a compiled .momd or .mom, or another store): Core Data's model migration. \
            The store's version is found among the model's versions by its entity version hashes, and \
            each step to the current version is lightweight (inferred, as Core Data infers it) or uses \
            the mapping model --mapping gives for it (.xcmappingmodel, .cdm, or a folder of them). \
            docs/MIGRATION.md lists the rules. \
            SRC is only read. DST must not exist: it is written under a temporary name and appears only \
            when complete. With --in-place, STORE is replaced by the migrated store in one rename and \
            the old one is kept beside it as NAME.pre-migration.EXT; a failure leaves STORE untouched.
            """)

    @Argument(
        help:
            "SRC DST (SRC .sqlite, .xml, .binary or a postgresql:// URL; DST a new store whose suffix or URL gives the type unless --type says otherwise), or STORE with --in-place."
    )
    var paths: [String]

    @Flag(name: .long, help: "Migrate STORE in place, keeping the old store beside it (needs --model).")
    var inPlace = false

    @Option(name: .long, help: "The destination's type: sqlite, xml or binary.")
    var type: String?

    @Option(
        name: .long,
        help:
            "The model to migrate to (its current version; a bundle's other versions are the steps), or, when it is the store's own version, to read the store with."
    )
    var model: String?

    @Option(name: .long, help: "The model the store was written with, when it carries none that storefs can find.")
    var sourceModel: String?

    @Option(
        name: .long, help: "A mapping model for a step (.xcmappingmodel, .cdm, or a folder of them); may be repeated.")
    var mapping: [String] = []

    @OptionGroup var log: LogOptions

    func validate() throws {
        if inPlace {
            guard paths.count == 1 else { throw ValidationError("give only the store with --in-place") }
            guard model != nil else {
                throw ValidationError("--in-place needs --model, the model to migrate the store to")
            }
            guard type == nil else { throw ValidationError("--in-place keeps the store's type; --type does not apply") }
            guard !StoreTypes.namesService(paths[0]) else {
                throw ValidationError(
                    "--in-place migrates a store file; migrate a PostgreSQL store into a new schema instead: "
                        + "storefs migrate URL NEW-URL --model M")
            }
        } else {
            guard paths.count == 2 else { throw ValidationError("give the store to read and the new store") }
        }
        if !mapping.isEmpty && model == nil {
            throw ValidationError("--mapping needs --model, the model to migrate to")
        }
    }

    func run() throws {
        let logger = log.bootstrap()
        let source = paths[0]
        let sourceURL = try StoreTypes.existingStore(source)
        let shownSource = StoreURL.redacting(source)
        let started = Date()
        let given = try StoreTypes.loadModel(at: sourceModel, logger: logger)
        let target = try model.map { (path) throws -> ModelVersions in
            try StoreTypes.loadVersions(at: path, logger: logger)
        }
        let mappings = try MappingModelLoader.loadAll(mapping, xmlStoreType: XMLStoreType())
        var progress = ProgressBar(label: "migrate")
        defer { progress.end() }

        if inPlace, let target {
            var plan: MigrationPlan?
            let result = try PersistentStoreCoordinator.migrateInPlace(
                at: sourceURL, types: StoreTypes.all, sourceModel: given?.model, modelDescription: given?.source,
                plan: { (coordinator) throws(ObjectGraphError) -> [MigrationStep] in
                    let made = try Self.plan(coordinator, target: target, mappings: mappings, store: shownSource)
                    plan = made
                    return made.steps
                }, progress: { done, total in progress.update(done, of: total) })
            progress.end()
            guard let backup = result.backup else {
                print(
                    "\(shownSource) is already at \(plan?.storeVersion ?? target.currentName), the current version of \(target.source); nothing to do"
                )
                return
            }
            report(result, from: plan?.storeVersion, to: target.currentName, started: started)
            print("the old store is kept as \(backup.path)")
            return
        }

        let destination = paths[1]
        let destinationURL = try StoreTypes.location(destination)
        let destinationType: any PersistentStoreType
        if let found = try StoreTypes.type(named: type) {
            destinationType = found
        } else {
            destinationType = try PersistentStoreCoordinator.storeType(for: destinationURL, among: StoreTypes.all)
        }
        var coordinator = try PersistentStoreCoordinator.open(
            at: sourceURL, types: StoreTypes.all, model: given?.model, options: StoreOptions(readOnly: true),
            modelDescription: given?.source)
        defer { coordinator.close() }
        if let target {
            let plan = try Self.plan(coordinator, target: target, mappings: mappings, store: shownSource)
            if plan.isNeeded {
                if plan.storeModel != coordinator.model {
                    coordinator.close()
                    coordinator = try PersistentStoreCoordinator.open(
                        at: sourceURL, types: StoreTypes.all, model: plan.storeModel,
                        options: StoreOptions(readOnly: true))
                }
                let result = try coordinator.migrateModel(to: destinationURL, type: destinationType, steps: plan.steps)
                { done, total in
                    progress.update(done, of: total)
                }
                progress.end()
                report(
                    result, from: plan.storeVersion, to: target.currentName, started: started,
                    destination: StoreURL.redacting(destination))
                return
            }
            if plan.storeModel != coordinator.model {
                // The store is at the model's current version: read it with that model.
                coordinator.close()
                coordinator = try PersistentStoreCoordinator.open(
                    at: sourceURL, types: StoreTypes.all, model: plan.storeModel, options: StoreOptions(readOnly: true),
                    modelDescription: .given("\(target.source), from --model"))
            }
        }
        try coordinator.migrate(to: destinationURL, type: destinationType) { done, total in
            progress.update(done, of: total)
        }
        progress.end()
        var objects = 0
        for entity in coordinator.model.entities { objects += try coordinator.store.count(of: entity.id) }
        let seconds = Date().timeIntervalSince(started)
        print(
            "migrated \(objects) objects from \(StoreURL.describe(sourceURL)) (\(coordinator.store.storeType)) to \(StoreURL.describe(destinationURL)) "
                + "(\(destinationType.name)) in \(String(format: "%.2f", seconds)) s")
    }

    /// The steps from the store's version to `target`'s current one. A store that records no
    /// version hashes and carries no model of its own cannot be placed: it is read with the
    /// current version, as `--model` always read a store.
    static func plan(
        _ coordinator: PersistentStoreCoordinator, target: ModelVersions, mappings: [MappingModel], store: String
    )
        throws(ObjectGraphError) -> MigrationPlan
    {
        var recorded: [String: Data]?
        if case .dictionary(let values)? = try coordinator.store.metadata()["NSStoreModelVersionHashes"] {
            recorded = values.compactMapValues { if case .data(let d) = $0 { d } else { nil } }
        }
        if recorded == nil && coordinator.modelSource == .inferred && mappings.isEmpty {
            return MigrationPlan(storeVersion: target.currentName, steps: [], storeModel: target.current.model)
        }
        return try MigrationPlan.make(
            storeModel: coordinator.model, storeModelSource: coordinator.modelSource, recordedHashes: recorded,
            target: target,
            mappings: mappings, store: store)
    }

    private func report(
        _ result: ModelMigrationResult, from: String?, to: String, started: Date, destination: String? = nil
    ) {
        let seconds = Date().timeIntervalSince(started)
        let place = destination.map { " into \($0)" } ?? ""
        print(
            "migrated \(StoreURL.redacting(paths[0])) from \(from ?? "its version") to \(to)\(place): \(result.objectCount) objects in \(String(format: "%.2f", seconds)) s"
        )
        for step in result.steps { print("  \(step)") }
        if result.historyTransactions > 0 {
            print("  persistent history kept: \(result.historyTransactions) transactions")
        }
    }
}
