import Foundation
import ObjectGraph
import BinaryStore
import SQLiteStore
import XMLStore

/// The store types the CLI knows, by file suffix.
enum StoreTypes {
    static let all: [any PersistentStoreType] = [SQLiteStoreType(), XMLStoreType(), BinaryStoreType()]

    /// The model at `path` (.xcdatamodeld, .xcdatamodel or a contents file), or nil for no path.
    static func model(at path: String?) throws -> ManagedObjectModel? {
        guard let path else { return nil }
        if path == "sample" && !FileManager.default.fileExists(atPath: path) { return SampleModel.make() }
        return try XcodeModelLoader.load(from: URL(fileURLWithPath: path))
    }
}
