import ArgumentParser
import Foundation
import Logging
import ObjectGraph

/// How `export` and `diff` open the stores they read: read-only, or with `--evidence` in evidence
/// mode.
enum StoreOpening {
    /// Opens the store at `path` read-only, with `model` (or the store's own) and `type` (or the
    /// one its suffix or content says).
    static func open(
        _ path: String, model: StoreTypes.LoadedModel?, type: String?, evidence: Bool, logger: Logger
    ) throws -> PersistentStoreCoordinator {
        let url = URL(fileURLWithPath: path)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ValidationError("\(path) does not exist")
        }
        if evidence {
            return try openForEvidence(url, model: model, type: type, logger: logger)
        }
        return try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: model?.model, options: StoreOptions(readOnly: true),
            modelDescription: model?.source, forcedType: try StoreTypes.type(named: type))
    }

    /// The one place `--evidence` opens a store, so that evidence mode (issue 26, item 6: nothing
    /// beside the store written, created or locked; SHA-256 of every input file recorded) is
    /// wired here and nowhere else. Until its opener exists this is a read-only open, as every
    /// `export` and `diff` makes, and it records no hashes (docs/SEMANTICS.md says so).
    static func openForEvidence(
        _ url: URL, model: StoreTypes.LoadedModel?, type: String?, logger: Logger
    ) throws -> PersistentStoreCoordinator {
        logger.debug("\(url.path): --evidence opens read-only (input hashes are not recorded yet)")
        return try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: model?.model, options: StoreOptions(readOnly: true),
            modelDescription: model?.source, forcedType: try StoreTypes.type(named: type))
    }
}
