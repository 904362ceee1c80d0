import Foundation
import Logging
import ObjectGraph
import XMLStore

/// The check Core Data makes before it opens a store with a model: are the store's entity
/// version hashes the model's? `storefs mount --model M` makes it too. A store written with
/// another version is mounted read-only with its own model (and a notice); a read-write mount is
/// refused, naming what differs and the command that migrates the store.
///
/// The store's hashes are those its metadata records (`NSStoreModelVersionHashes`, what Core Data
/// compares); where they differ, the hashes of the model the store carries (storefs's kept model,
/// Core Data's cache) are compared too, so a store whose recorded hashes storefs does not
/// reproduce exactly (docs/MODELS.md) still matches its own model. A store that records no
/// hashes and carries no model cannot be checked, and is mounted with M as before.
struct ModelVersionCheck {
    /// What differs between the store's version and the model's, by entity name.
    struct Mismatch: Error, CustomStringConvertible {
        var store: String
        var model: String
        var added: [String]
        var removed: [String]
        var changed: [String]
        /// What the migration needs besides `--model`.
        var mapping = MappingNeed.none

        /// Whether a step of the migration to the model is not lightweight, and what then.
        enum MappingNeed {
            /// Every step is lightweight (or the store's version cannot be placed to tell).
            case none
            /// The mapping models beside the model (this path) make every step.
            case found(String)
            /// A step needs a mapping model storefs did not find: why.
            case needed(String)
        }

        /// `entities added: Color; changed: Post`.
        var summary: String {
            var parts: [String] = []
            if !added.isEmpty { parts.append("entities added: " + added.joined(separator: ", ")) }
            if !removed.isEmpty { parts.append("removed: " + removed.joined(separator: ", ")) }
            if !changed.isEmpty { parts.append("changed: " + changed.joined(separator: ", ")) }
            return parts.joined(separator: "; ")
        }

        /// The command that migrates the store, with the mapping models a step needs: following
        /// the hint must work.
        var migrateCommand: String {
            let command = "storefs migrate --in-place \(Self.quoted(store)) --model \(Self.quoted(model))"
            switch mapping {
            case .none: return command
            case .found(let path): return command + " --mapping \(Self.quoted(path))"
            case .needed: return command + " --mapping MAPPING"
            }
        }

        /// What the command's MAPPING stands for, when it has one.
        var mappingNote: String {
            guard case .needed(let reason) = mapping else { return "" }
            return
                " (\(reason); MAPPING is the mapping model of that step, an Xcode .xcmappingmodel or a compiled .cdm: "
                + "docs/MIGRATION.md)"
        }

        /// Why a read-write mount is refused.
        var description: String {
            "\(store) was written with another version of the model than \(model) (\(summary)). A read-write mount would "
                + "write objects that model does not describe. Migrate the store first: \(migrateCommand)\(mappingNote) "
                + "(a backup is kept beside it); or mount it read-only (-o ro), which reads it with its own model."
        }

        /// What a read-only mount says.
        var notice: String {
            "\(store) was written with another version of the model than \(model) (\(summary)); mounting it read-only with "
                + "the store's own model. \(migrateCommand) migrates it\(mappingNote)."
        }

        static func quoted(_ path: String) -> String {
            path.contains(where: { " '\"$`\\".contains($0) })
                ? "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'" : path
        }
    }

    /// nil when the store at `url` is at `model`'s version (or cannot be told), else what differs.
    static func compare(
        storeAt url: URL, type: any PersistentStoreType, with model: ManagedObjectModel, modelPath: String,
        storePath: String
    ) throws -> Mismatch? {
        let metadata = try type.metadata(at: url)
        let wanted = VersionHash.entityHashes(of: model)
        var recorded: [String: Data]?
        if case .dictionary(let values)? = metadata["NSStoreModelVersionHashes"] {
            recorded = values.compactMapValues { if case .data(let d) = $0 { d } else { nil } }
        }
        if recorded == wanted { return nil }
        var carried: (model: ManagedObjectModel, source: ModelSource)?
        if let text = metadata.embeddedModel,
            let kept = try? XcodeModelLoader.load(contents: Data(text.utf8), source: storePath)
        {
            carried = (kept, .keptByStoreFS)
        } else if type.name == "SQLite" {
            // Core Data's model cache: read only when the recorded hashes did not settle it.
            let coordinator = try PersistentStoreCoordinator.open(
                at: url, types: StoreTypes.all, options: StoreOptions(readOnly: true), forcedType: type)
            defer { coordinator.close() }
            if coordinator.modelSource != .inferred { carried = (coordinator.model, coordinator.modelSource) }
        }
        let carriedHashes = carried.map { VersionHash.entityHashes(of: $0.model) }
        if carriedHashes == wanted { return nil }
        guard let theirs = recorded ?? carriedHashes else { return nil }
        let added = wanted.keys.filter { theirs[$0] == nil }.sorted()
        let removed = theirs.keys.filter { wanted[$0] == nil }.sorted()
        let changed = wanted.keys.filter { theirs[$0] != nil && theirs[$0] != wanted[$0] }.sorted()
        var mismatch = Mismatch(store: storePath, model: modelPath, added: added, removed: removed, changed: changed)
        if let carried {
            mismatch.mapping = mappingNeed(
                storeModel: carried.model, source: carried.source, recorded: recorded, modelPath: modelPath,
                storePath: storePath)
        }
        return mismatch
    }

    /// Plans the migration `storefs migrate --in-place` would make, as it makes it: with `--model`
    /// alone, then with the mapping models found in the model's folder (an app bundle and an
    /// Xcode project keep them beside the model).
    private static func mappingNeed(
        storeModel: ManagedObjectModel, source: ModelSource, recorded: [String: Data]?, modelPath: String,
        storePath: String
    ) -> Mismatch.MappingNeed {
        guard let versions = try? StoreTypes.loadVersions(at: modelPath) else { return .none }
        func plan(_ mappings: [MappingModel]) throws(ObjectGraphError) -> MigrationPlan {
            try MigrationPlan.make(
                storeModel: storeModel, storeModelSource: source, recordedHashes: recorded, target: versions,
                mappings: mappings, store: storePath)
        }
        let reason: String
        do throws(ObjectGraphError) {
            // A step Core Data infers only on conditions the store's objects must meet (a new
            // mandatory relationship: no object of its entity) fails on a store that has such
            // objects: that step wants its mapping model too.
            let conditional = try plan([]).steps.compactMap { step -> String? in
                guard step.mapping.isInferred else { return nil }
                let conditions = ModelDifference(from: step.source, to: step.destination).conditions
                guard !conditions.isEmpty else { return nil }
                return "the step \(step.from) → \(step.to) is lightweight only where "
                    + conditions.joined(separator: "; ")
            }
            guard !conditional.isEmpty else { return .none }
            reason = conditional.joined(separator: "; ")
        } catch {
            reason = error.message
        }
        let folder = URL(fileURLWithPath: modelPath).deletingLastPathComponent().path
        if let found = try? MappingModelLoader.loadAll([folder], xmlStoreType: XMLStoreType()),
            let planned = try? plan(found), planned.steps.contains(where: { !$0.mapping.isInferred })
        {
            return .found(folder)
        }
        return .needed(reason)
    }
}
