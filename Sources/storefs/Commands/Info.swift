import ArgumentParser
import Foundation
import ObjectGraph

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a store's type, UUID, metadata and object counts per entity.")

    @Option(
        name: .long,
        help: "The model to read the store with: an Xcode .xcdatamodeld/.xcdatamodel, a compiled .momd/.mom, or another store. By default the store's own.")
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Argument(help: "The store file, or a postgresql:// URL.")
    var store: String

    @OptionGroup var log: LogOptions

    func run() throws {
        let logger = log.bootstrap()
        let url = StoreTypes.location(store)
        guard try StoreTypes.exists(url) else {
            throw ValidationError("\(StoreURL.describe(url)) does not exist")
        }
        let given = try StoreTypes.loadModel(at: model, logger: logger)
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: given?.model, options: StoreOptions(readOnly: true),
            modelDescription: given?.source, forcedType: try StoreTypes.type(named: type))
        defer { coordinator.close() }
        let metadata = try coordinator.store.metadata()
        var counts: [(String, Int)] = []
        for entity in coordinator.model.entities.sorted(by: { $0.name < $1.name }) {
            counts.append((entity.name, try coordinator.store.count(of: entity.id)))
        }
        let custom = metadata.values.filter { $0.key != StoreMetadata.modelKey }
        if json {
            var object: [String: Any] = [
                "path": StoreURL.describe(url), "type": metadata.storeType ?? coordinator.store.storeType,
                "uuid": metadata.storeUUID ?? "",
                "entities": Dictionary(uniqueKeysWithValues: counts),
                "objects": counts.reduce(0) { $0 + $1.1 },
                "metadata": custom.mapValues(Self.jsonValue),
                "hasEmbeddedModel": metadata.embeddedModel != nil,
                "model": ["source": coordinator.modelSource.kind, "description": coordinator.modelSource.description],
            ]
            object["metadata"] = custom.mapValues(Self.jsonValue)
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print("store:    \(StoreURL.describe(url))")
        print("type:     \(metadata.storeType ?? coordinator.store.storeType)")
        print("uuid:     \(metadata.storeUUID ?? "")")
        print("model:    \(coordinator.modelSource.description)")
        print("metadata:")
        for (key, value) in custom.sorted(by: { $0.key < $1.key }) {
            print("  \(key) = \(Self.text(value))")
        }
        print("objects:  \(counts.reduce(0) { $0 + $1.1 })")
        let width = counts.map(\.0.count).max() ?? 0
        for (name, count) in counts {
            print("  \(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(count)")
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
