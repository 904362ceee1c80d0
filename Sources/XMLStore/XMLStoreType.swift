import Foundation
import AtomicStore
import ObjectGraph

/// Core Data's XML store type (`NSXMLStoreType`): files ending in `.xml`.
///
/// An atomic store: the whole file is read at open and written at every save. The format follows
/// Core Data's own XML stores (the corpus has them); storefs's own choices (ids and keys, escapes, the spelling
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
        try XMLStoreFormat().open(at: url, model: model, options: options, initialMetadata: initialMetadata)
    }
}

/// The XML file of an XML store, whole.
struct XMLStoreFormat: AtomicStoreFormat {
    var typeName: String { XMLStoreType.typeName }

    func encode(_ graph: StoreGraph, model: ManagedObjectModel) throws(ObjectGraphError) -> Data {
        try XMLStoreWriter.encode(graph, model: model)
    }

    /// Streamed: the text goes to the file as it is made (see ``XMLStoreWriter/chunkSize``).
    func write(_ graph: StoreGraph, model: ManagedObjectModel, to sink: inout AtomicFile.Sink)
        throws(ObjectGraphError)
    {
        try XMLStoreWriter.write(graph, model: model) { (chunk) throws(ObjectGraphError) in try sink.write(chunk) }
    }

    func decode(_ data: consuming Data, of url: URL, model: ManagedObjectModel?, progress: LoadProgress?)
        throws(ObjectGraphError) -> (ManagedObjectModel, StoreGraph)
    {
        let path = url.path
        // The file's bytes are released once scanned, before the graph is built: a million
        // objects are 1.2 GB of them.
        var doc = try XMLStoreReader.document(of: consume data, path: path, progress: progress)
        let resolved: ManagedObjectModel
        if let model {
            resolved = model
        } else if case .string(let text) = doc.metadata[StoreMetadata.modelKey] {
            resolved = try XcodeModelLoader.load(contents: Data(text.utf8), source: "\(path) (embedded model)")
        } else {
            resolved = try XMLModelInference.model(from: doc, path: path)
        }
        let graph = try XMLGraphBuilder.graph(from: &doc, model: resolved, path: path)
        progress?.report(doc.lineCount, doc.lineCount)
        return (resolved, graph)
    }

    /// Core Data's XML stores carry the entity version hashes too (the corpus's do).
    func newStoreMetadata(for model: ManagedObjectModel) -> [String: MetadataValue] {
        VersionHash.metadata(for: model)
    }
}
