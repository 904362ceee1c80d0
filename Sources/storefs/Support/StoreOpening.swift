import ArgumentParser
import Foundation
import Logging
import ObjectGraph

/// How `export` and `diff` open the stores they read: read-only, or with `--evidence` in evidence
/// mode (``EvidenceStore``: nothing beside the store written, created or locked; every file read
/// hashed).
struct StoreOpening {
    let coordinator: PersistentStoreCoordinator
    private let evidence: EvidenceStore?
    private let path: String
    /// For a version (`STORE@cN`): the store it was made from, closed with it.
    private var base: PersistentStoreCoordinator?

    /// Opens the store `path` names (a file or a `postgresql://` URL) read-only, with the model at `model` (or the store's own) and
    /// `type` (or the one its suffix or content says).
    /// `STORE@cN` opens version N of the store (``RecoveringStore/openVersion(_:)``: `c0` the
    /// database file alone, `cN` the store right after its WAL's commit N) when no file has that
    /// name.
    static func open(_ path: String, model: String?, type: String?, evidence: Bool, logger: Logger) throws
        -> StoreOpening
    {
        if !StoreTypes.namesService(path), !FileManager.default.fileExists(atPath: path),
            let at = path.lastIndex(of: "@"),
            let number = StoreVersion.number(named: String(path[path.index(after: at)...])),
            FileManager.default.fileExists(atPath: String(path[..<at]))
        {
            let opened = try open(String(path[..<at]), model: model, type: type, evidence: evidence, logger: logger)
            do {
                guard let store = opened.coordinator.store.recovering else {
                    throw ValidationError("\(path[..<at]) keeps no versions (only SQLite stores with a -wal do)")
                }
                let version = try store.openVersion(number)
                var result = StoreOpening(
                    coordinator: PersistentStoreCoordinator(
                        store: version, configuration: opened.coordinator.configuration,
                        modelSource: opened.coordinator.modelSource), evidence: opened.evidence, path: path)
                result.base = opened.coordinator
                return result
            } catch {
                opened.close()
                throw error
            }
        }
        let url = try StoreTypes.existingStore(path)
        if evidence {
            let opened = try EvidenceStore.open(at: url, model: model, type: type, logger: logger)
            return StoreOpening(coordinator: opened.coordinator, evidence: opened, path: StoreURL.redacting(path))
        }
        let given = try StoreTypes.loadModel(at: model, logger: logger)
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: given?.model, options: StoreOptions(readOnly: true),
            modelDescription: given?.source, forcedType: try StoreTypes.type(named: type))
        return StoreOpening(coordinator: coordinator, evidence: nil, path: StoreURL.redacting(path))
    }

    /// Closes the store. An evidence open prints every file it read with its SHA-256 to standard
    /// error (sha256sum's form) and returns false when the store's folder changed meanwhile,
    /// with what changed printed.
    @discardableResult
    func close() -> Bool {
        if let base {
            coordinator.close()
            let opened = StoreOpening(coordinator: base, evidence: evidence, path: path)
            return opened.close()
        }
        guard let evidence else {
            coordinator.close()
            return true
        }
        for file in evidence.record.files { printError("\(file.sha256 ?? "-")  \(file.path)") }
        let changed = evidence.close()
        for change in changed {
            printError("storefs: \(path): the store's folder changed while it was read: \(change)")
        }
        return changed.isEmpty
    }
}
