import Foundation

/// One step of a model migration: a store of one model version becomes a store of the next, by a
/// mapping model (found among those given, or inferred for a lightweight step).
///
/// Threading: a value; share it freely.
public struct MigrationStep: Sendable {
    public var from: String
    public var to: String
    public var source: ManagedObjectModel
    public var destination: ManagedObjectModel
    public var mapping: MappingModel

    public init(
        from: String, to: String, source: ManagedObjectModel, destination: ManagedObjectModel, mapping: MappingModel
    ) {
        self.from = from
        self.to = to
        self.source = source
        self.destination = destination
        self.mapping = mapping
    }

    /// `Model → Model 2: lightweight`, `Model 2 → Model 3: mapping model M.xcmappingmodel`.
    public var description: String {
        "\(from) → \(to): " + (mapping.isInferred ? "lightweight" : "mapping model \(mapping.source)")
    }
}

/// How a store gets from the version it was written with to the current version of a model: the
/// store's version, found by its entity version hashes, and the steps from there.
///
/// Core Data finds a store's model by comparing the hashes its metadata records with each model
/// version's; storefs does the same and, for stores whose recorded hashes it does not reproduce
/// exactly (docs/MODELS.md), also compares the hashes of the model the store carries (Core Data's
/// cache, or the one storefs keeps). A store whose version is not among the model's versions is
/// migrated from the model it carries, in one step; one that carries none cannot be.
///
/// Threading: a value; share it freely.
public struct MigrationPlan: Sendable {
    /// The store's version: a version name, or a description of the model it carries.
    public var storeVersion: String
    public var steps: [MigrationStep]
    /// The model the store is read with (the first step's source; the store's own when no step).
    public var storeModel: ManagedObjectModel

    public init(storeVersion: String, steps: [MigrationStep], storeModel: ManagedObjectModel) {
        self.storeVersion = storeVersion
        self.steps = steps
        self.storeModel = storeModel
    }

    /// Whether the store needs a migration at all.
    public var isNeeded: Bool { !steps.isEmpty }

    /// Whether `hashes` of a store (its metadata's, or its model's) are those of `version`.
    static func matches(_ version: ModelVersions.Version, recorded: [String: Data]?, carried: [String: Data]?) -> Bool {
        (recorded.map { $0 == version.hashes } ?? false) || (carried.map { $0 == version.hashes } ?? false)
    }

    /// Plans the migration of a store to `target`'s current version.
    ///
    /// - Parameters:
    ///   - storeModel: the model the store opens with by itself (its kept model, its Core Data
    ///     cache, or an inferred one: `storeModelSource` says which).
    ///   - recordedHashes: `NSStoreModelVersionHashes` of the store's metadata, if it has them.
    ///   - mappings: mapping models to use for the steps they fit; each must fit one.
    /// - Throws: ``ObjectGraphError/Code/unsupported`` when the store's version cannot be found or
    ///   is newer than the current version, a step needs a mapping model none of `mappings` is,
    ///   or a mapping model fits no step.
    public static func make(
        storeModel: ManagedObjectModel, storeModelSource: ModelSource, recordedHashes: [String: Data]?,
        target: ModelVersions,
        mappings: [MappingModel], store: String
    ) throws(ObjectGraphError) -> MigrationPlan {
        let carried: [String: Data]? = storeModelSource == .inferred ? nil : VersionHash.entityHashes(of: storeModel)
        let current = target.current
        if matches(current, recorded: recordedHashes, carried: carried) {
            guard mappings.isEmpty else {
                throw ObjectGraphError(
                    .unsupported,
                    "\(store) is already at \(current.name), the current version of \(target.source); no mapping model applies"
                )
            }
            return MigrationPlan(storeVersion: current.name, steps: [], storeModel: current.model)
        }
        let order = target.versions
        guard let currentIndex = order.firstIndex(where: { $0.name == current.name }) else {
            throw ObjectGraphError(
                .invalidModel, "\(target.source): its current version \(current.name) is not one of its versions")
        }
        var chain: [(name: String, model: ManagedObjectModel)] = []
        let storeVersion: String
        if let found = order.firstIndex(where: { matches($0, recorded: recordedHashes, carried: carried) }) {
            guard found < currentIndex else {
                throw ObjectGraphError(
                    .unsupported,
                    "\(store) was written with \(order[found].name), which comes after \(current.name), the current version of "
                        + "\(target.source); storefs migrates stores forward only")
            }
            storeVersion = order[found].name
            chain = order[found...currentIndex].map { ($0.name, $0.model) }
        } else if storeModelSource != .inferred {
            storeVersion = "the model the store carries (\(storeModelSource.description))"
            chain = [(storeVersion, storeModel), (current.name, current.model)]
        } else {
            throw ObjectGraphError(
                .unsupported,
                "\(store)'s version hashes match no version of \(target.source), and the store carries no model to migrate from; "
                    + "name the model it was written with (--source-model)")
        }
        var unused = Array(mappings.indices)
        var steps: [MigrationStep] = []
        // The given mapping model chosen for each step, by step.
        var chosenFor: [Int: Int] = [:]
        for index in 0..<(chain.count - 1) {
            let (from, to) = (chain[index], chain[index + 1])
            let fitting = unused.filter { fits(mappings[$0], from: from, to: to, onlyStep: chain.count == 2) }
            if let chosen = fitting.first {
                unused.removeAll { $0 == chosen }
                chosenFor[index] = chosen
                steps.append(
                    MigrationStep(
                        from: from.name, to: to.name, source: from.model, destination: to.model,
                        mapping: mappings[chosen]))
                continue
            }
            do {
                let inferred = try MappingModel.inferred(from: from.model, to: to.model)
                steps.append(
                    MigrationStep(
                        from: from.name, to: to.name, source: from.model, destination: to.model, mapping: inferred))
            } catch {
                throw ObjectGraphError(.unsupported, "the step \(from.name) → \(to.name): \(error.message)")
            }
        }
        if let left = unused.first {
            // One that fits a step another mapping model was chosen for is a second answer to
            // that step, not a mapping model of no step.
            for index in 0..<(chain.count - 1) {
                let (from, to) = (chain[index], chain[index + 1])
                guard let chosen = chosenFor[index],
                    fits(mappings[left], from: from, to: to, onlyStep: chain.count == 2)
                else { continue }
                throw ObjectGraphError(
                    .unsupported,
                    "mapping models \(mappings[chosen].source) and \(mappings[left].source) both fit the step "
                        + "\(from.name) → \(to.name); give one mapping model per step")
            }
            let stepNames = steps.map { "\($0.from) → \($0.to)" }.joined(separator: ", ")
            throw ObjectGraphError(
                .unsupported,
                "mapping model \(mappings[left].source) fits no step of this migration (\(stepNames))"
                    + (mappings[left].sourceModelName.map {
                        "; it maps \($0) to \(mappings[left].destinationModelName ?? "?")"
                    } ?? ""))
        }
        return MigrationPlan(storeVersion: storeVersion, steps: steps, storeModel: chain[0].model)
    }

    /// Whether `mapping` is the mapping model of the step `from` → `to`: by the entity version
    /// hashes a compiled mapping model records (as Core Data matches them: every hash it names
    /// is one of the models'), else by the model version names an Xcode mapping model records,
    /// else, when the migration has one step, because it was given for it.
    static func fits(
        _ mapping: MappingModel, from: (name: String, model: ManagedObjectModel),
        to: (name: String, model: ManagedObjectModel),
        onlyStep: Bool
    ) -> Bool {
        let sourceHashes = mapping.entityMappings.compactMap(\.sourceEntityVersionHash)
        let destinationHashes = mapping.entityMappings.compactMap(\.destinationEntityVersionHash)
        if !sourceHashes.isEmpty || !destinationHashes.isEmpty {
            let fromHashes = Set(VersionHash.entityHashes(of: from.model).values)
            let toHashes = Set(VersionHash.entityHashes(of: to.model).values)
            return !sourceHashes.isEmpty && !destinationHashes.isEmpty && Set(sourceHashes).isSubset(of: fromHashes)
                && Set(destinationHashes).isSubset(of: toHashes)
        }
        if let sourceName = mapping.sourceModelName, let destinationName = mapping.destinationModelName {
            if baseName(sourceName) == from.name && baseName(destinationName) == to.name { return true }
            return onlyStep && namesFit(mapping, from.model, to.model)
        }
        return onlyStep && namesFit(mapping, from.model, to.model)
    }

    /// Whether every entity a mapping names is in the models.
    static func namesFit(_ mapping: MappingModel, _ source: ManagedObjectModel, _ destination: ManagedObjectModel)
        -> Bool
    {
        mapping.entityMappings.allSatisfy { entityMapping in
            (entityMapping.sourceEntityName.map { source.entity(named: $0) != nil } ?? true)
                && (entityMapping.destinationEntityName.map { destination.entity(named: $0) != nil } ?? true)
        }
    }

    /// `X 2` of `Path/To/X.xcdatamodeld/X 2.xcdatamodel`.
    static func baseName(_ path: String) -> String {
        var name = (path as NSString).lastPathComponent
        for suffix in [".xcdatamodel", ".mom"] where name.hasSuffix(suffix) { name.removeLast(suffix.count) }
        return name
    }
}
