import Foundation
import ObjectGraph
import SQLiteStore
import Testing

/// Entity version hashes computed by storefs against the ones Apple's Core Data wrote into the
/// corpus stores, entity by entity, bit for bit.
@Suite struct VersionHashTests {
    typealias F = Fixtures

    /// The hashes a store's metadata records.
    static func storedHashes(_ url: URL) throws -> [String: Data] {
        let metadata = try F.open(url, readOnly: true).metadata()
        guard case .dictionary(let hashes) = metadata["NSStoreModelVersionHashes"] else { return [:] }
        return hashes.compactMapValues { if case .data(let d) = $0 { d } else { nil } }
    }

    /// The Xcode model each store was written with (the store ↔ version pairs of the corpus tests).
    @Test(arguments: SQLiteStoreCorpusTests.models)
    func xcodeModelHashesEqualCoreDatas(_ pair: (store: String, model: String)) throws {
        let url = try F.corpusCopy(pair.store)
        let model = try XcodeModelLoader.load(from: F.corpus.appendingPathComponent("models/\(pair.model)"))
        let stored = try Self.storedHashes(url)
        let computed = VersionHash.entityHashes(of: model)
        #expect(Set(computed.keys) == Set(stored.keys), "\(pair.store)")
        for (name, hash) in stored.sorted(by: { $0.key < $1.key }) {
            #expect(computed[name] == hash, "\(pair.store) entity \(name)")
        }
    }

    /// A store created from an Xcode model carries Core Data's hashes, digest and checksum.
    @Test func newStoreFromXcodeModelCarriesCoreDatasHashes() throws {
        let source = try F.corpusCopy("alemar11_CoreDataPlus_SampleModel_V1.sqlite")
        let model = try XcodeModelLoader.load(
            from: F.corpus.appendingPathComponent("models/alemar11_CoreDataPlus_SampleModel.xcdatamodeld/SampleModel.xcdatamodel"))
        let url = try F.temporaryDirectory().appendingPathComponent("New.sqlite")
        let store = try SQLiteStoreType().open(
            at: url, model: model, options: StoreOptions(createIfMissing: true), initialMetadata: StoreMetadata())
        let created = try store.metadata()
        store.close()
        let apple = try F.open(source, readOnly: true).metadata()
        for key in ["NSStoreModelVersionHashes", "NSStoreModelVersionHashesDigest", "NSStoreModelVersionIdentifiers"] {
            #expect(created[key] != nil && created[key] == apple[key], "\(key)")
        }
        // The 2024 store (framework 1344) has the checksum too; this one (1044) does not: check it
        // against its definition, the SHA-256 of the hashes in entity name order.
        let hashes = try Self.storedHashes(source)
        #expect(created["NSStoreModelVersionChecksumKey"] == .string(VersionHash.checksum(of: hashes).base64EncodedString()))
    }

    /// Digest and checksum definitions against every corpus store that has them.
    @Test(arguments: ["alemar11_CoreDataPlus_SampleModel2_V1.sqlite", "alemar11_CoreDataPlus_SampleModel3_V1.sqlite",
        "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite", "sergd2005_ResourcesManager_default.store"])
    func digestAndChecksumFollowTheHashes(_ name: String) throws {
        let url = try F.corpusCopy(name)
        let metadata = try F.open(url, readOnly: true).metadata()
        let hashes = try Self.storedHashes(url)
        #expect(metadata["NSStoreModelVersionHashesDigest"] == .string(VersionHash.digest(of: hashes).base64EncodedString()))
        #expect(metadata["NSStoreModelVersionChecksumKey"] == .string(VersionHash.checksum(of: hashes).base64EncodedString()))
    }
}
