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

    @Argument(help: "The store (or model) whose model to print.")
    var source: String

    @Argument(help: "With --diff: the newer model, bundle or store to compare SOURCE with.")
    var other: String?

    @Option(name: .long, help: "Read the store with this model instead of its own (Xcode model, compiled model or store).")
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @Option(
        name: [.short, .long],
        help: "Write here instead of standard output; a path ending in .xcdatamodel or .xcdatamodeld becomes that folder.")
    var output: String?

    @Flag(name: .long, help: "Print each entity's version hash (as Core Data computes it) and whether the store's metadata has the same.")
    var hashes = false

    @Flag(
        name: .long,
        help: "Compare SOURCE with OTHER (each a model, a model bundle's current version, or a store's model): entities and properties added, removed, renamed or changed, and whether Core Data could migrate lightweight.")
    var diff = false

    @OptionGroup var log: LogOptions

    func validate() throws {
        if diff && other == nil { throw ValidationError("--diff compares two models: give the older and the newer") }
        if !diff && other != nil { throw ValidationError("give one store or model (or two with --diff)") }
    }

    func run() throws {
        let logger = log.bootstrap()
        if diff, let other {
            for path in [source, other] where path != "sample" && !FileManager.default.fileExists(atPath: path) {
                throw ValidationError("\(path) does not exist")
            }
            guard let old = try StoreTypes.loadModel(at: source, logger: logger), let new = try StoreTypes.loadModel(at: other, logger: logger)
            else { return }
            print(ModelDifference(from: old.model, to: new.model).report(from: source, to: other), terminator: "")
            return
        }
        let url = URL(fileURLWithPath: source)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ValidationError("\(source) does not exist")
        }
        let model: ManagedObjectModel
        var stored: [String: Data]?
        var origin: String
        if StoreTypes.isStore(url) || type != nil {
            let given = try StoreTypes.loadModel(at: self.model, logger: logger)
            let coordinator = try PersistentStoreCoordinator.open(
                at: url, types: StoreTypes.all, model: given?.model, options: StoreOptions(readOnly: true),
                modelDescription: given?.source, forcedType: try StoreTypes.type(named: type))
            defer { coordinator.close() }
            model = coordinator.model
            origin = coordinator.modelSource.description
            if case .dictionary(let values)? = try coordinator.store.metadata()["NSStoreModelVersionHashes"] {
                stored = values.compactMapValues { if case .data(let d) = $0 { d } else { nil } }
            }
        } else {
            guard self.model == nil else { throw ValidationError("--model applies to stores; \(source) is a model") }
            guard let loaded = try StoreTypes.loadModel(at: source, logger: logger) else { return }
            model = loaded.model
            origin = loaded.source.description
        }
        logger.debug("model of \(source): \(origin)")
        let text = hashes ? Self.hashTable(model, stored: stored) : XcodeModelWriter.contents(of: model)
        guard let output else {
            print(text, terminator: "")
            return
        }
        try Self.write(text, to: URL(fileURLWithPath: output), asModel: !hashes)
    }

    /// One line per entity: name, hash in hex, and how it compares with the store's.
    static func hashTable(_ model: ManagedObjectModel, stored: [String: Data]?) -> String {
        let computed = VersionHash.entityHashes(of: model)
        let width = computed.keys.map(\.count).max() ?? 0
        var out = ""
        for name in computed.keys.sorted() {
            let hash = computed[name] ?? Data()
            var line = name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + hash.map { String(format: "%02x", $0) }.joined()
            if let stored {
                switch stored[name] {
                case nil: line += "  not in the store's metadata"
                case hash?: line += "  same as the store's"
                default: line += "  differs from the store's"
                }
            }
            out += line + "\n"
        }
        return out
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
