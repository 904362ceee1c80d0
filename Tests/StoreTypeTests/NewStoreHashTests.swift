import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing
import XMLStore

/// Stores storefs creates from an Xcode model carry the entity version hashes Core Data wrote for
/// the same model, whatever their type (binary stores are storefs's own format and need none).
@Suite struct NewStoreHashTests {
    @Test(arguments: ["sqlite", "xml"])
    func newStoresCarryCoreDatasHashes(_ suffix: String) throws {
        let model = try XcodeModelLoader.load(
            from: Corpus.url("models/alemar11_CoreDataPlus_SampleModel.xcdatamodeld/SampleModel.xcdatamodel"))
        // The hashes Core Data wrote into a store of this model (read from a copy).
        let folder = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let apple = folder.appendingPathComponent("apple.sqlite")
        try FileManager.default.copyItem(
            at: Corpus.url("sqlite/alemar11_CoreDataPlus_SampleModel_V1.sqlite"), to: apple)
        let expected = try SQLiteStoreType().metadata(at: apple)["NSStoreModelVersionHashes"]
        #expect(expected != nil)

        let url = folder.appendingPathComponent("New.\(suffix)")
        let types: [any PersistentStoreType] = [SQLiteStoreType(), XMLStoreType()]
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: types, model: model, options: StoreOptions(createIfMissing: true))
        coordinator.close()
        let metadata = try PersistentStoreCoordinator.metadata(at: url, types: types)
        #expect(metadata["NSStoreModelVersionHashes"] == expected)
        #expect(metadata["NSStoreModelVersionHashesVersion"] == .integer(3))
        #expect(metadata["NSStoreModelVersionIdentifiers"] == .array([.string("1")]))
    }
}
