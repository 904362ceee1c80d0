import ArgumentParser
import Foundation
import Logging
import ObjectGraph
import SQLiteStore

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a store's type, UUID, metadata and object counts per entity.")

    @Option(
        name: .long,
        help:
            "The model to read the store with: an Xcode .xcdatamodeld/.xcdatamodel, a compiled .momd/.mom, or another store. By default the store's own."
    )
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Flag(
        name: .long,
        help: "Print only the SHA-256 of each file read, as sha256sum prints it (sha256sum -c checks them later).")
    var hashes = false

    @Flag(
        name: .long,
        help:
            "Open the store as evidence: also hash a --model's files, and check after reading that the store's folder is as it was (names, sizes, modification times); exit 1 when it is not."
    )
    var evidence = false

    @Argument(help: "The store file, or a postgresql:// URL.")
    var store: String

    @OptionGroup var log: LogOptions

    func run() throws {
        let logger = log.bootstrap()
        let url = try StoreTypes.existingStore(store)
        // Read-only opens read a private copy of the store's files and touch nothing beside it;
        // info records what it read with its SHA-256 (docs/SEMANTICS.md, "Reading touches nothing").
        let opened = try open(url, logger: logger)
        let coordinator = opened.coordinator
        defer { coordinator.close() }
        let files = opened.evidence?.record.files ?? coordinator.store.inputFiles
        if hashes {
            for file in files { print("\(file.sha256 ?? "")  \(file.path)") }
            return try finish(opened.evidence)
        }
        let metadata = try coordinator.store.metadata()
        var counts: [(String, Int)] = []
        for entity in coordinator.model.entities.sorted(by: { $0.name < $1.name }) {
            counts.append((entity.name, try coordinator.store.count(of: entity.id)))
        }
        let custom = metadata.values.filter { $0.key != StoreMetadata.modelKey }
        let versionHashes = HashCheck(store: url, metadata: metadata, coordinator: coordinator, logger: logger)
        for warning in versionHashes.warnings { logger.warning("\(StoreURL.describe(url)): \(warning)") }
        if json {
            var object: [String: Any] = [
                "path": StoreURL.describe(url), "type": metadata.storeType ?? coordinator.store.storeType,
                "uuid": metadata.storeUUID ?? "",
                "entities": Dictionary(uniqueKeysWithValues: counts),
                "objects": counts.reduce(0) { $0 + $1.1 },
                "metadata": custom.mapValues(Self.jsonValue),
                "hasEmbeddedModel": metadata.embeddedModel != nil,
                "model": ["source": coordinator.modelSource.kind, "description": coordinator.modelSource.description],
                "versionHashes": versionHashes.json
            ]
            object["metadata"] = custom.mapValues(Self.jsonValue)
            object["read"] = files.map {
                ["path": $0.path, "size": $0.size, "modified": $0.modified, "sha256": $0.sha256 ?? ""]
            }
            var changed: [String]?
            if let evidence = opened.evidence {
                changed = evidence.close()
                object["evidence"] = [
                    "folderEntries": evidence.record.folder.count, "folderUnchanged": changed?.isEmpty ?? true,
                    "folderChanges": changed ?? []
                ]
            }
            let data = try JSONSerialization.data(
                withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
            return try finish(opened.evidence, changed: changed)
        }
        print("store:    \(StoreURL.describe(url))")
        print("type:     \(metadata.storeType ?? coordinator.store.storeType)")
        print("uuid:     \(metadata.storeUUID ?? "")")
        print("model:    \(coordinator.modelSource.description)")
        print("hashes:   \(versionHashes.summary)")
        print("metadata:")
        for (key, value) in custom.sorted(by: { $0.key < $1.key }) {
            print("  \(key) = \(Self.text(value))")
        }
        print("objects:  \(counts.reduce(0) { $0 + $1.1 })")
        let width = counts.map(\.0.count).max() ?? 0
        for (name, count) in counts {
            print("  \(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(count)")
        }
        print("read:     (SHA-256, bytes, file)")
        for file in files { print("  \(file.sha256 ?? "")  \(file.size)  \(file.path)") }
        try finish(opened.evidence)
    }

    /// The store, read-only with its inputs hashed, or as evidence.
    private func open(_ url: URL, logger: Logger) throws -> (
        coordinator: PersistentStoreCoordinator, evidence: EvidenceStore?
    ) {
        if evidence {
            let opened = try EvidenceStore.open(at: url, model: model, type: type, logger: logger)
            return (opened.coordinator, opened)
        }
        let given = try StoreTypes.loadModel(at: model, logger: logger)
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: given?.model,
            options: StoreOptions(readOnly: true, hashesInputs: true),
            modelDescription: given?.source, forcedType: try StoreTypes.type(named: type))
        return (coordinator, nil)
    }

    /// With --evidence: says whether the store's folder is as it was, and fails when it is not.
    private func finish(_ evidence: EvidenceStore?, changed known: [String]? = nil) throws {
        guard let evidence else { return }
        let changed = known ?? evidence.close()
        let entries = evidence.record.folder.count
        guard changed.isEmpty else {
            printError(
                "storefs info: the folder of \(StoreURL.redacting(store)) changed while it was read:\n  "
                    + changed.joined(separator: "\n  "))
            throw ExitCode(1)
        }
        if !hashes && !json { print("folder:   as it was (\(entries) entries: names, sizes, modification times)") }
    }

    /// The store's recorded entity version hashes against the model it is read with and against
    /// its Core Data model cache: a store whose recorded hashes and cache disagree is one Core
    /// Data would migrate (or refuse) when the app opens it.
    struct HashCheck {
        var summary: String
        var warnings: [String] = []
        var json: [String: Any] = [:]

        init(store url: URL, metadata: StoreMetadata, coordinator: PersistentStoreCoordinator, logger: Logger) {
            let source = coordinator.modelSource
            guard let used = VersionHashComparison(model: coordinator.model, metadata: metadata) else {
                summary = "none recorded in the metadata"
                json = ["recorded": 0]
                return
            }
            json["recorded"] = used.recorded.count
            json["differing"] = used.mismatched
            if used.isMatch {
                summary = "all \(used.recorded.count) entities match the recorded version hashes"
            } else {
                summary =
                    "\(used.mismatched.count) of \(Set(used.computed.keys).union(used.recorded.keys).count) entities "
                    + "differ from the recorded version hashes (\(used.mismatched.joined(separator: ", ")))"
                if source == .inferred { summary += "; an inferred model's hashes are not the app's" }
            }
            // The model cache, whichever model the store is read with (SQLite stores only); read
            // again only when the store was not read with it.
            var cache = SQLiteStoreType.ModelCacheContent.absent
            if source == .coreDataCache {
                cache = .model(coordinator.model)
            } else if coordinator.store.storeType == "SQLite",
                let content = try? SQLiteStoreType().modelCache(at: url, logger: logger)
            {
                cache = content
            }
            switch cache {
            case .absent:
                json["cache"] = "absent"
                if source == .keptByStoreFS, !used.isMatch {
                    warnings.append(
                        "the recorded version hashes and the model storefs keeps in the store disagree on "
                            + "\(used.mismatched.joined(separator: ", ")): Core Data opening it with that model would migrate it"
                    )
                }
            case .model(let cached):
                let check = VersionHashComparison(
                    computed: VersionHash.entityHashes(of: cached), recorded: used.recorded)
                json["cache"] = check.isMatch ? "matches" : "differs"
                json["cacheDiffering"] = check.mismatched
                if !check.isMatch {
                    warnings.append(
                        "the recorded version hashes and the model cache (Z_MODELCACHE) disagree on "
                            + "\(check.mismatched.joined(separator: ", ")): Core Data opening the store with the cached model "
                            + "would migrate it")
                }
            case .damaged(let reason):
                json["cache"] = "damaged"
                json["cacheProblem"] = reason
                warnings.append(
                    "the model cache (Z_MODELCACHE) does not decode (\(reason)), so the recorded version hashes cannot be "
                        + "checked against it; storefs keeps them as recorded when it writes the store")
            }
        }
    }

    static func text(_ value: MetadataValue) -> String {
        switch value {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .real(let d): return d.description
        case .boolean(let b): return b ? "true" : "false"
        case .date(let d): return d.description
        case .data(let d): return "<\(d.count) bytes>"
        case .array(let a): return "[" + a.map(text).joined(separator: ", ") + "]"
        case .dictionary(let d): return "{\(d.count) keys}"
        }
    }

    static func jsonValue(_ value: MetadataValue) -> Any {
        switch value {
        case .string(let s): return s
        case .integer(let i): return i
        case .real(let d): return d
        case .boolean(let b): return b
        case .date(let d): return d.timeIntervalSinceReferenceDate
        case .data(let d): return d.base64EncodedString()
        case .array(let a): return a.map(jsonValue)
        case .dictionary(let d): return d.mapValues(jsonValue)
        }
    }
}
