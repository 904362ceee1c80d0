import Foundation
import ObjectGraph

/// The file format of an atomic store type (XML, binary): how a whole graph becomes the file's
/// bytes and back. Everything else about an atomic store (the graph in memory, saves, a file
/// another process replaced) is ``GraphStore``'s, with ``AtomicFilePersistence``.
package protocol AtomicStoreFormat: Sendable {
    /// The store type's name, as metadata records it.
    var typeName: String { get }

    /// The whole file for `graph`.
    func encode(_ graph: StoreGraph, model: ManagedObjectModel) throws(ObjectGraphError) -> Data

    /// Writes the file for `graph` to `sink` (what a save does); a format that can write as it
    /// encodes does so, so that a save never holds the whole file in memory. By default the
    /// bytes of ``encode(_:model:)``.
    func write(_ graph: StoreGraph, model: ManagedObjectModel, to sink: inout AtomicFile.Sink)
        throws(ObjectGraphError)

    /// Reads `data`, the file at `url`, with `model`, or with the model the file carries or
    /// implies when `model` is nil; returns the model used and the graph.
    func decode(_ data: consuming Data, of url: URL, model: ManagedObjectModel?, progress: LoadProgress?)
        throws(ObjectGraphError) -> (ManagedObjectModel, StoreGraph)

    /// Metadata a new, empty store of this type starts with besides its type, UUID and model.
    func newStoreMetadata(for model: ManagedObjectModel) -> [String: MetadataValue]
}

extension AtomicStoreFormat {
    package func newStoreMetadata(for model: ManagedObjectModel) -> [String: MetadataValue] { [:] }

    package func write(_ graph: StoreGraph, model: ManagedObjectModel, to sink: inout AtomicFile.Sink)
        throws(ObjectGraphError)
    {
        try sink.write(try encode(graph, model: model))
    }

    /// Opens (or, when asked, creates) the store at `url`, as ``PersistentStoreType/open`` does.
    package func open(at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata)
        throws(ObjectGraphError) -> GraphStore
    {
        let path = url.path
        if !FileManager.default.fileExists(atPath: path) {
            guard options.createIfMissing else { throw ObjectGraphError(.notFound, "\(path) does not exist") }
            guard !options.readOnly else {
                throw ObjectGraphError(.notFound, "\(path) does not exist, and a read-only store cannot be created")
            }
            guard let model else { throw ObjectGraphError(.invalidModel, "creating \(path) needs a model") }
            var metadata = initialMetadata
            metadata.storeType = typeName
            if metadata.storeUUID == nil { metadata.storeUUID = StoreMetadata.newStoreUUID() }
            if metadata[StoreMetadata.modelKey] == nil {
                metadata[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: model))
            }
            for (key, value) in newStoreMetadata(for: model) { metadata[key] = value }
            let graph = StoreGraph(metadata: metadata)
            let persistence = AtomicFilePersistence(url: url, model: model, format: self)
            try persistence.write(graph)
            return GraphStore(
                model: model, storeType: typeName, url: url, readOnly: false, graph: graph, persistence: persistence)
        }
        // A save killed between writing its temporary file and renaming it left that file behind.
        if !options.readOnly { AtomicFile.removeStaleTemporaries(of: url) }
        // Hashed from the bytes read, so the hash is that of what the store shows.
        let hashing = options.readOnly && options.hashesInputs
        let stamp = hashing ? InputFile.Stamp(path: url.path) : nil
        let data = try AtomicFile.read(url)
        let inputs = hashing ? [InputFile.hashed(data, of: url, stamp: stamp)] : []
        let (resolved, graph) = try decode(data, of: url, model: model, progress: options.progress)
        return GraphStore(
            model: resolved, storeType: typeName, url: url, readOnly: options.readOnly, graph: graph,
            persistence: AtomicFilePersistence(url: url, model: resolved, format: self), inputs: inputs)
    }
}

/// An atomic store's file: the whole graph written at every save through ``AtomicFile`` (a
/// temporary file renamed over the store), read again when another process replaced it.
package struct AtomicFilePersistence<Format: AtomicStoreFormat>: GraphPersistence {
    let url: URL
    let model: ManagedObjectModel
    let format: Format

    package func write(_ graph: StoreGraph) throws(ObjectGraphError) {
        try AtomicFile.write(to: url) { (sink) throws(ObjectGraphError) in
            try format.write(graph, model: model, to: &sink)
        }
    }

    package func read() throws(ObjectGraphError) -> StoreGraph {
        try format.decode(try AtomicFile.read(url), of: url, model: model, progress: nil).1
    }

    /// The file's inode, size and modification time: a save by another process renames a new
    /// file over the store, which moves all three.
    package func changeToken() -> Int64? { AtomicFile.changeToken(url) }
}
