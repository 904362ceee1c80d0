import ArgumentParser
import Foundation
import ObjectGraph

struct Model: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a store's model as Xcode model XML (or its entity version hashes).",
        discussion: """
            The model is the one storefs would mount the store with: --model, else the model storefs \
            keeps in its own stores, else Core Data's cached model (Z_MODELCACHE), else one inferred \
            from the schema. SOURCE may also be a model (.momd, .mom, .xcdatamodeld): the output is then \
            that model in Xcode's format. Save the XML as NAME.xcdatamodel/contents (or give \
            --output NAME.xcdatamodel) to open it in Xcode or diff two versions.
            """)

    @Argument(help: "The store (a file or a postgresql:// URL), or a model, whose model to print.")
    var source: String

    @Argument(help: "With --diff: the newer model, bundle or store to compare SOURCE with.")
    var other: String?

    @Option(
        name: .long, help: "Read the store with this model instead of its own (Xcode model, compiled model or store).")
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @Option(
        name: [.short, .long],
        help:
            "Write here instead of standard output; a path ending in .xcdatamodel or .xcdatamodeld becomes that folder."
    )
    var output: String?

    @Flag(
        name: .long,
        help: """
            Print each entity's version hash as Core Data computes it beside the one the store's metadata records \
            (a .momd: its VersionInfo.plist), and which entities differ.
            """)
    var hashes = false

    @Flag(
        name: .long,
        help:
            "Compare SOURCE with OTHER (each a model, a model bundle's current version, or a store's model): entities and properties added, removed, renamed or changed, and whether Core Data could migrate lightweight."
    )
    var diff = false

    @OptionGroup var log: LogOptions

    func validate() throws {
        if diff && other == nil { throw ValidationError("--diff compares two models: give the older and the newer") }
        if !diff && other != nil { throw ValidationError("give one store or model (or two with --diff)") }
    }

    func run() throws {
        let logger = log.bootstrap()
        if diff, let other {
            for path in [source, other] where path != "sample" {
                guard try StoreTypes.exists(try StoreTypes.location(path, allowingFolder: true)) else {
                    throw ValidationError("\(StoreURL.redacting(path)) does not exist")
                }
            }
            guard let old = try StoreTypes.loadModel(at: source, logger: logger),
                let new = try StoreTypes.loadModel(at: other, logger: logger)
            else { return }
            print(
                ModelDifference(from: old.model, to: new.model).report(
                    from: StoreURL.redacting(source), to: StoreURL.redacting(other)), terminator: "")
            return
        }
        let url = try StoreTypes.location(source, allowingFolder: true)
        guard try StoreTypes.exists(url) else {
            throw ValidationError("\(StoreURL.redacting(source)) does not exist")
        }
        let model: ManagedObjectModel
        var recorded: [String: Data]?
        var recordedWhere = "the store's"
        let origin: String
        if StoreTypes.isStore(url) || type != nil {
            let given = try StoreTypes.loadModel(at: self.model, logger: logger)
            let coordinator = try PersistentStoreCoordinator.open(
                at: url, types: StoreTypes.all, model: given?.model, options: StoreOptions(readOnly: true),
                modelDescription: given?.source, forcedType: try StoreTypes.type(named: type))
            defer { coordinator.close() }
            model = coordinator.model
            origin = coordinator.modelSource.description
            recorded = VersionHashComparison.recordedHashes(in: try coordinator.store.metadata())
        } else {
            guard self.model == nil else {
                throw ValidationError("--model applies to stores; \(StoreURL.redacting(source)) is a model")
            }
            guard let loaded = try StoreTypes.loadModel(at: source, logger: logger) else { return }
            model = loaded.model
            origin = loaded.source.description
            recorded = CompiledModelLoader.recordedVersionHashes(in: url)
            recordedWhere = "VersionInfo.plist's"
        }
        logger.debug("model of \(StoreURL.redacting(source)): \(origin)")
        let text =
            hashes
            ? Self.hashTable(model, recorded: recorded, by: recordedWhere, modelOrigin: origin)
            : XcodeModelWriter.contents(of: model)
        guard let output else {
            print(text, terminator: "")
            return
        }
        do {
            try Self.write(text, to: URL(fileURLWithPath: output), asModel: !hashes)
        } catch {
            // Foundation's error says only "couldn't be saved": the reason beneath is the errno.
            let reason = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.localizedDescription
            throw StandardOutputError(
                message: "cannot write \(output): \(reason ?? error.localizedDescription)")
        }
    }

    /// One line per entity: its name, the hash storefs computes, the recorded one (`-` when
    /// there is none) and whether they are the same; then, when hashes are recorded, a line saying
    /// which entities differ. `source` names where the recorded hashes come from ("the store's").
    static func hashTable(
        _ model: ManagedObjectModel, recorded: [String: Data]?, by source: String, modelOrigin: String
    ) -> String {
        let computed = VersionHash.entityHashes(of: model)
        guard let recorded else {
            let width = computed.keys.map(\.count).max() ?? 0
            return computed.keys.sorted().map { name in
                name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + hex(computed[name])
            }.joined(separator: "\n") + "\n"
        }
        let comparison = VersionHashComparison(computed: computed, recorded: recorded)
        let names = Set(computed.keys).union(recorded.keys).sorted()
        let width = max(names.map(\.count).max() ?? 0, "entity".count)
        var out =
            "entity".padding(toLength: width, withPad: " ", startingAt: 0) + "  "
            + "computed by storefs".padding(toLength: 64, withPad: " ", startingAt: 0) + "  recorded (\(source))\n"
        for name in names {
            let status: String
            switch (computed[name], recorded[name]) {
            case (let mine?, let theirs?): status = mine == theirs ? "same" : "differs"
            case (_?, nil): status = "not recorded"
            default: status = "not in the model"
            }
            out +=
                name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + hex(computed[name]) + "  "
                + hex(recorded[name]) + "  " + status + "\n"
        }
        if comparison.isMatch {
            out += "all \(names.count) entities have \(source) recorded hash\n"
        } else {
            out +=
                "\(comparison.mismatched.count) of \(names.count) entities differ from \(source) recorded hashes: "
                + comparison.mismatched.joined(separator: ", ")
                + " (Core Data opening the store with this model would migrate it, or refuse it; the model: \(modelOrigin))\n"
        }
        return out
    }

    /// 64 hex digits, or `-` padded to their width when there is no hash.
    private static func hex(_ hash: Data?) -> String {
        guard let hash else { return "-".padding(toLength: 64, withPad: " ", startingAt: 0) }
        return hash.map { String(format: "%02x", $0) }.joined()
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    /// Writes `text` to a file, or as the `contents` of a model folder Xcode opens.
    static func write(_ text: String, to url: URL, asModel: Bool) throws {
        let fileManager = FileManager.default
        var file = url
        switch url.pathExtension {
        case "xcdatamodel" where asModel:
            try fileManager.createDirectory(at: url, withIntermediateDirectories: true)
            file = url.appendingPathComponent("contents")
        case "xcdatamodeld" where asModel:
            let version = url.deletingPathExtension().lastPathComponent + ".xcdatamodel"
            let folder = url.appendingPathComponent(version)
            try fileManager.createDirectory(at: folder, withIntermediateDirectories: true)
            let current = """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0">
                <dict>
                \t<key>_XCCurrentVersionName</key>
                \t<string>\(escaped(version))</string>
                </dict>
                </plist>

                """
            try Data(current.utf8).write(to: url.appendingPathComponent(".xccurrentversion"))
            file = folder.appendingPathComponent("contents")
        default:
            break
        }
        try Data(text.utf8).write(to: file, options: .atomic)
    }
}
