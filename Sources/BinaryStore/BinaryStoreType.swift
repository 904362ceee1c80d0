import Foundation
import AtomicStore
import ObjectGraph

/// storefs's binary store type: files ending in `.binary`, in the format of docs/BINARY_FORMAT.md.
///
/// An atomic store like Core Data's binary store (whose format is private): the whole file is read
/// at open and written at every save; fast to load, versioned, checksummed. The model is read from
/// the metadata key ``StoreMetadata/modelKey`` when none is given. Stateless; safe from any thread.
public struct BinaryStoreType: PersistentStoreType {
    public static let typeName = "Binary"

    public var name: String { Self.typeName }
    public var fileExtensions: [String] { ["binary"] }

    /// storefs's binary format, by its magic bytes.
    public func recognizes(fileStart: Data) -> Bool {
        fileStart.count >= BinaryStoreFormat.magic.count
            && fileStart.prefix(BinaryStoreFormat.magic.count).elementsEqual(BinaryStoreFormat.magic)
    }

    public init() {}

    /// Reads the header and the metadata section only.
    public func metadata(at url: URL) throws(ObjectGraphError) -> StoreMetadata {
        let path = url.path
        // A regular file only, opened without waiting (a FIFO is refused: RegularFile).
        let (descriptor, status) = try RegularFile.openForReading(url)
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        defer { try? handle.close() }
        let size = Int(status.st_size)
        let head: Data
        let body: Data
        do {
            head = try handle.read(upToCount: BinaryStoreFormat.headerSize) ?? Data()
        } catch {
            throw ObjectGraphError(.io, "\(path): could not read the store: \(error)")
        }
        let header = try head.withBytes { (b) throws(ObjectGraphError) in
            try BinaryStoreFormat.header(b, fileSize: size, path: path)
        }
        do {
            body = try handle.read(upToCount: header.metadataLength) ?? Data()
        } catch {
            throw ObjectGraphError(.io, "\(path): could not read the store: \(error)")
        }
        guard body.count == header.metadataLength else {
            throw ObjectGraphError(.corruptStore, "\(path): truncated metadata section")
        }
        var metadata = try body.withBytes { (b) throws(ObjectGraphError) in
            try BinaryStoreFormat.decodeMetadata(b, expectedCRC: header.metadataCRC, path: path)
        }
        metadata.storeType = Self.typeName
        return metadata
    }

    public func open(
        at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata
    ) throws(ObjectGraphError) -> any PersistentStore {
        try BinaryStoreFile().open(at: url, model: model, options: options, initialMetadata: initialMetadata)
    }
}

/// The file of a binary store, whole (docs/BINARY_FORMAT.md).
struct BinaryStoreFile: AtomicStoreFormat {
    var typeName: String { BinaryStoreType.typeName }

    func encode(_ graph: StoreGraph, model: ManagedObjectModel) throws(ObjectGraphError) -> Data {
        try BinaryStoreFormat.encode(graph, model: model)
    }

    /// The two parts as they are encoded: no copy of the whole file is made to write it.
    func write(_ graph: StoreGraph, model: ManagedObjectModel, to sink: inout AtomicFile.Sink)
        throws(ObjectGraphError)
    {
        let (head, objects) = try BinaryStoreFormat.encodeParts(graph, model: model)
        try sink.write(head)
        try sink.write(objects)
    }

    func decode(_ data: consuming Data, of url: URL, model: ManagedObjectModel?, progress: LoadProgress?)
        throws(ObjectGraphError) -> (ManagedObjectModel, StoreGraph)
    {
        try BinaryStoreFormat.decode(data, model: model, path: url.path)
    }
}
