import Foundation
import AtomicStore
import ObjectGraph

/// Core Data's XML store type (`NSXMLStoreType`): files ending in `.xml`.
///
/// An atomic store: the whole file is read at open and written at every save. The format follows
/// notes/COREDATA_FORMATS.md section 2; storefs's own choices (ids and keys, escapes, the spelling
/// of types Core Data's files do not show) are documented on ``XMLStoreReader``,
/// ``XMLStoreWriter`` and ``XMLValueFormat``. Stateless; safe from any thread.
public struct XMLStoreType: PersistentStoreType {
    public static let typeName = "XML"

    public var name: String { Self.typeName }
    public var fileExtensions: [String] { ["xml"] }

    /// Core Data's XML store: a `<database>` document with its `<databaseInfo>` near the top.
    public func recognizes(fileStart: Data) -> Bool {
        let text = String(decoding: fileStart, as: UTF8.self)
        return text.contains("<database>") && (text.contains("<databaseInfo>") || text.contains("CoreData.dtd"))
    }

    public init() {}

    /// Reads `<databaseInfo>` only (a byte scan, not a parse of the objects).
    public func metadata(at url: URL) throws(ObjectGraphError) -> StoreMetadata {
        let doc = try XMLStoreReader.header(at: url)
        var metadata = StoreMetadata(doc.metadata)
        metadata[XMLStoreWriter.keysKey] = nil
        metadata.storeType = Self.typeName
        if let uuid = doc.uuid, !uuid.isEmpty { metadata.storeUUID = uuid }
        return metadata
    }

    public func open(
        at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata
    ) throws(ObjectGraphError) -> any PersistentStore {
        let path = url.path
        if !FileManager.default.fileExists(atPath: path) {
            guard options.createIfMissing else { throw ObjectGraphError(.notFound, "\(path) does not exist") }
            guard !options.readOnly else {
                throw ObjectGraphError(.notFound, "\(path) does not exist, and a read-only store cannot be created")
            }
            guard let model else { throw ObjectGraphError(.invalidModel, "creating \(path) needs a model") }
            var metadata = initialMetadata
            metadata.storeType = Self.typeName
            if metadata.storeUUID == nil { metadata.storeUUID = StoreMetadata.newStoreUUID() }
            if metadata[StoreMetadata.modelKey] == nil {
                metadata[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: model))
            }
            // Core Data's XML stores carry the entity version hashes too (the corpus's do).
            for (key, value) in VersionHash.metadata(for: model) { metadata[key] = value }
            let graph = AtomicGraph(metadata: metadata)
            try AtomicFile.write(try XMLStoreWriter.encode(graph, model: model), to: url)
            return XMLStore(model: model, url: url, readOnly: false, graph: graph)
        }
        // A save killed between writing its temporary file and renaming it left that file behind.
        if !options.readOnly { AtomicFile.removeStaleTemporaries(of: url) }
        var inputs: [InputFile] = []
        var doc = try Self.document(at: url, progress: options.progress, hashing: options.readOnly && options.hashesInputs, inputs: &inputs)
        let resolved: ManagedObjectModel
        if let model {
            resolved = model
        } else if case .string(let text) = doc.metadata[StoreMetadata.modelKey] {
            resolved = try XcodeModelLoader.load(contents: Data(text.utf8), source: "\(path) (embedded model)")
        } else {
            resolved = try XMLModelInference.model(from: doc, path: path)
        }
        let graph = try XMLGraphBuilder.graph(from: &doc, model: resolved, path: path)
        options.progress?.report(doc.lineCount, doc.lineCount)
        return XMLStore(model: resolved, url: url, readOnly: options.readOnly, graph: graph, inputs: inputs)
    }

    /// The file's objects, scanned (and the file as read, hashed, when `hashing`). The file's
    /// bytes are released when this returns, before the graph is built: a million objects are
    /// 1.2 GB of them.
    private static func document(at url: URL, progress: LoadProgress?, hashing: Bool, inputs: inout [InputFile])
        throws(ObjectGraphError) -> XMLStoreDocument
    {
        let data: Data
        (data, inputs) = try AtomicStoreCore.read(url, hashing: hashing)
        return try XMLStoreReader.document(of: data, path: url.path, progress: progress)
    }
}
