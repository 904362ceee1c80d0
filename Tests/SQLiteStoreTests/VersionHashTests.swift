import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Entity version hashes computed by storefs against the ones Apple's Core Data wrote into the
/// corpus stores, entity by entity, bit for bit; and the rules the corpus alone could not show.
@Suite struct VersionHashTests {
    typealias F = Fixtures

    /// The hashes a store's metadata records.
    static func storedHashes(_ url: URL) throws -> [String: Data] {
        VersionHashComparison.recordedHashes(in: try F.open(url, readOnly: true).metadata()) ?? [:]
    }

    /// `Tests/Fixtures/reconstructed`: models written for the corpus stores that hold none (its
    /// README says how each was made).
    static let reconstructed = F.repoRoot.appendingPathComponent("Tests/Fixtures/reconstructed")

    /// The model each corpus store is checked with when it has no model storefs can read.
    static let reconstructedModels = [
        "magicalpanda_MagicalRecord_Recipes.sqlite": "Recipes.xcdatamodel",
        "mvt-project_mvt_DataUsage_0d609c54856a.sqlite": "DataUsage.xcdatamodel"
    ]

    /// Entities whose model the corpus does not give (docs/MODELS.md): DataUsage's `WiFiData`,
    /// which the damaged model cache lost and no candidate reproduced.
    static let unknownEntities = ["mvt-project_mvt_DataUsage_0d609c54856a.sqlite": Set(["WiFiData"])]

    /// Every SQLite store of the corpus, entity by entity: the hash storefs computes from the
    /// store's own model (its model cache) or, for the two stores without one it can read, from
    /// the reconstructed model, is the one Core Data recorded. Framework versions 241 to 1523.
    @Test(arguments: Corpus.names(in: "sqlite") { $0.hasSuffix(".sqlite") || $0.hasSuffix(".store") })
    func everyCorpusStoreEntityByEntity(_ name: String) throws {
        let url = try F.corpusCopy(name)
        let recorded = try Self.storedHashes(url)
        #expect(!recorded.isEmpty, "\(name) records no hashes")
        let model: ManagedObjectModel
        if let file = Self.reconstructedModels[name] {
            model = try XcodeModelLoader.load(from: Self.reconstructed.appendingPathComponent(file))
        } else {
            let store = try F.open(url, readOnly: true)
            defer { store.close() }
            #expect(
                store.modelSource == .coreDataCache,
                "\(name) has no model cache storefs reads and no reconstructed model")
            model = store.model
        }
        let computed = VersionHash.entityHashes(of: model)
        #expect(Set(computed.keys) == Set(recorded.keys), "\(name)")
        let unknown = Self.unknownEntities[name] ?? []
        for (entity, hash) in recorded.sorted(by: { $0.key < $1.key }) {
            if unknown.contains(entity) {
                #expect(
                    computed[entity] != hash,
                    "\(name) \(entity) now matches: update docs/MODELS.md and the fixture README")
            } else {
                #expect(computed[entity] == hash, "\(name) entity \(entity)")
            }
        }
    }

    /// DataUsage (framework 1044): its model cache ends in a zeroed page, so it does not decode and
    /// storefs reads the store with a model inferred from the schema, saying why.
    @Test func dataUsageCacheIsDamagedNotHashedDifferently() throws {
        let url = try F.corpusCopy("mvt-project_mvt_DataUsage_0d609c54856a.sqlite")
        guard case .damaged(let reason) = try SQLiteStoreType().modelCache(at: url) else {
            Issue.record("the DataUsage model cache decodes")
            return
        }
        #expect(reason.contains("only the first 3102 of its 7194 bytes hold data"), "\(reason)")
        // 7,194 bytes: the first 3,102 data, ending in a non-zero byte; the 4,092 of the overflow page zeros.
        let shape =
            "SELECT length(Z_CONTENT), substr(Z_CONTENT, 3102, 1) != x'00', substr(Z_CONTENT, 3103) = zeroblob(4092) "
            + "FROM Z_MODELCACHE"
        #expect(try F.sqlite3(url, shape) == ["7194|1|1"])
        let store = try F.open(url, readOnly: true)
        defer { store.close() }
        #expect(store.modelSource == .inferred)
        // The four entities the intact part of the archive holds whole hash exactly with what it
        // says, nothing chosen: Core Data 1044 hashes as storefs does.
        let model = try XcodeModelLoader.load(from: Self.reconstructed.appendingPathComponent("DataUsage.xcdatamodel"))
        let recorded = try Self.storedHashes(url)
        for entity in ["CheckUpEvent", "DemoLiveUsage", "Event", "EventScene"] {
            let id = try #require(model.entityID(named: entity))
            #expect(VersionHash.hash(of: id, in: model) == recorded[entity], "\(entity)")
        }
    }

    /// A compiled model as Xcode ships it: its VersionInfo.plist records momc's hashes and checksum.
    @Test func compiledModelHashesEqualVersionInfo() throws {
        let momd = F.corpus.appendingPathComponent("momd/Karim-ezzedine_CartKit_CartStorage.momd")
        let model = try CompiledModelLoader.load(from: momd).model
        let recorded = try #require(CompiledModelLoader.recordedVersionHashes(in: momd))
        let comparison = VersionHashComparison(computed: VersionHash.entityHashes(of: model), recorded: recorded)
        #expect(comparison.matching == ["CDCart", "CDCartItem", "CDCartItemModifier"])
        #expect(comparison.isMatch)
        let info =
            try PropertyListSerialization.propertyList(
                from: Data(contentsOf: momd.appendingPathComponent("VersionInfo.plist")), format: nil) as? [String: Any]
        let checksums = info?["NSManagedObjectModel_VersionChecksums"] as? [String: String]
        #expect(checksums?["CartStorage"] == VersionHash.checksum(of: recorded).base64EncodedString())
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

    // MARK: - Derived attributes

    /// SampleModel2's `Book.pagesCount = pages.@count`: Core Data hashes a derived attribute as the
    /// derivation alone, as NSExpression prints it (`count:(pages)`); the name, type and
    /// optionality do not count. Xcode's key-path spelling and the archive's function hash alike.
    @Test func derivedAttributeHashesItsDerivationOnly() throws {
        let url = try F.corpusCopy("alemar11_CoreDataPlus_SampleModel2_V1.sqlite")
        let store = try F.open(url, readOnly: true)
        defer { store.close() }
        let recorded = try Self.storedHashes(url)
        var model = store.model
        #expect(VersionHash.entityHashes(of: model)["Book"] == recorded["Book"])
        func rewritten(_ change: (inout AttributeDescription) -> Void) throws -> ManagedObjectModel {
            var entities = model.entities
            for index in entities.indices {
                for a in entities[index].attributes.indices where entities[index].attributes[a].name == "pagesCount" {
                    change(&entities[index].attributes[a])
                }
            }
            return try ManagedObjectModel(entities: entities, versionIdentifier: model.versionIdentifier)
        }
        model = try rewritten { $0.derivationExpression = "count:(pages)" }
        #expect(VersionHash.entityHashes(of: model)["Book"] == recorded["Book"])
        model = try rewritten {
            $0.type = .integer32
            $0.isOptional = false
        }
        #expect(VersionHash.entityHashes(of: model)["Book"] == recorded["Book"])
        model = try rewritten { $0.derivationExpression = "pages.@sum" }
        #expect(VersionHash.entityHashes(of: model)["Book"] != recorded["Book"])
        #expect(VersionHash.entityHashes(of: model)["GraphicNovel"] != recorded["GraphicNovel"])
    }

    /// Uniqueness constraints are hashed in sorted order (Core Data sorts them; the corpus has no
    /// entity with two), so the order a model lists them in does not change the hash.
    @Test func uniquenessConstraintsHashInSortedOrder() throws {
        func model(_ constraints: [[String]]) throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [
                EntityDescription(
                    name: "Item",
                    attributes: [
                        AttributeDescription(name: "a", type: .string), AttributeDescription(name: "b", type: .string)
                    ],
                    uniquenessConstraints: constraints)
            ])
        }
        let ab = VersionHash.entityHashes(of: try model([["a"], ["b"]]))
        #expect(ab == VersionHash.entityHashes(of: try model([["b"], ["a"]])))
        #expect(ab != VersionHash.entityHashes(of: try model([["a"]])))
        #expect(ab != VersionHash.entityHashes(of: try model([["a", "b"]])))
    }

    // MARK: - Metadata of new stores

    /// A store created from an Xcode model carries Core Data's hashes, digest and checksum.
    @Test func newStoreFromXcodeModelCarriesCoreDatasHashes() throws {
        let source = try F.corpusCopy("alemar11_CoreDataPlus_SampleModel_V1.sqlite")
        let model = try XcodeModelLoader.load(
            from: F.corpus.appendingPathComponent(
                "models/alemar11_CoreDataPlus_SampleModel.xcdatamodeld/SampleModel.xcdatamodel"))
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
        #expect(
            created["NSStoreModelVersionChecksumKey"] == .string(VersionHash.checksum(of: hashes).base64EncodedString())
        )
    }

    /// Digest and checksum definitions against every corpus store that has them.
    @Test(arguments: [
        "alemar11_CoreDataPlus_SampleModel2_V1.sqlite", "alemar11_CoreDataPlus_SampleModel3_V1.sqlite",
        "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite", "sergd2005_ResourcesManager_default.store",
        "Karim-ezzedine_CartKit_CartKitSwiftData_v1.sqlite"
    ])
    func digestAndChecksumFollowTheHashes(_ name: String) throws {
        let url = try F.corpusCopy(name)
        let metadata = try F.open(url, readOnly: true).metadata()
        let hashes = try Self.storedHashes(url)
        #expect(
            metadata["NSStoreModelVersionHashesDigest"] == .string(VersionHash.digest(of: hashes).base64EncodedString())
        )
        #expect(
            metadata["NSStoreModelVersionChecksumKey"]
                == .string(VersionHash.checksum(of: hashes).base64EncodedString()))
    }
}
