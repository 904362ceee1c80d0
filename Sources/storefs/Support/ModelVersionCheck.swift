import Foundation
import Logging
import ObjectGraph

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

        /// `entities added: Color; changed: Post`.
        var summary: String {
            var parts: [String] = []
            if !added.isEmpty { parts.append("entities added: " + added.joined(separator: ", ")) }
            if !removed.isEmpty { parts.append("removed: " + removed.joined(separator: ", ")) }
            if !changed.isEmpty { parts.append("changed: " + changed.joined(separator: ", ")) }
            return parts.joined(separator: "; ")
        }

        var migrateCommand: String { "storefs migrate --in-place \(Self.quoted(store)) --model \(Self.quoted(model))" }

        /// Why a read-write mount is refused.
        var description: String {
            "\(store) was written with another version of the model than \(model) (\(summary)). A read-write mount would "
                + "write objects that model does not describe. Migrate the store first: \(migrateCommand) (a backup is kept "
                + "beside it); or mount it read-only (-o ro), which reads it with its own model."
        }

        /// What a read-only mount says.
        var notice: String {
            "\(store) was written with another version of the model than \(model) (\(summary)); mounting it read-only with "
                + "the store's own model. \(migrateCommand) migrates it."
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
        var carried: [String: Data]?
        if let text = metadata.embeddedModel,
            let kept = try? XcodeModelLoader.load(contents: Data(text.utf8), source: storePath)
        {
            carried = VersionHash.entityHashes(of: kept)
        } else if type.name == "SQLite" {
            // Core Data's model cache: read only when the recorded hashes did not settle it.
            let coordinator = try PersistentStoreCoordinator.open(
                at: url, types: StoreTypes.all, options: StoreOptions(readOnly: true), forcedType: type)
            defer { coordinator.close() }
            if coordinator.modelSource != .inferred { carried = VersionHash.entityHashes(of: coordinator.model) }
        }
        if carried == wanted { return nil }
        guard let theirs = recorded ?? carried else { return nil }
        let added = wanted.keys.filter { theirs[$0] == nil }.sorted()
        let removed = theirs.keys.filter { wanted[$0] == nil }.sorted()
        let changed = wanted.keys.filter { theirs[$0] != nil && theirs[$0] != wanted[$0] }.sorted()
        return Mismatch(store: storePath, model: modelPath, added: added, removed: removed, changed: changed)
    }
}
