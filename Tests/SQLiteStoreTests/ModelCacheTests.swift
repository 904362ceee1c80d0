import Decoding
import Foundation
import GRDB
import Logging
import ObjectGraph
import TestSupport
import Testing

@testable import SQLiteStore

/// The compiled model Core Data caches in Z_MODELCACHE: every corpus store that has one opens with
/// it, its entity version hashes are Core Data's, and it agrees with the Xcode model the store came
/// from where the corpus has that model.
@Suite struct ModelCacheTests {
    typealias F = Fixtures

    /// The corpus stores with a Z_MODELCACHE that decodes: all but the 2009 Recipes store (written
    /// before Core Data kept one) and iOS's DataUsage store (whose cache ends in a zeroed page;
    /// VersionHashTests checks it).
    static let cacheStores = Corpus.names(in: "sqlite") {
        ($0.hasSuffix(".sqlite") || $0.hasSuffix(".store")) && !$0.contains("MagicalRecord_Recipes")
            && !$0.contains("mvt_DataUsage")
    }

    @Test func corpusHasFifteenStoresWithACacheFourteenDecode() throws {
        let withTable = Corpus.names(in: "sqlite") {
            ($0.hasSuffix(".sqlite") || $0.hasSuffix(".store")) && !$0.contains("Recipes")
        }
        #expect(withTable.count == 15, "\(withTable)")
        #expect(Self.cacheStores.count == 14, "\(Self.cacheStores)")
        for name in withTable {
            // On a copy: sqlite3 makes -shm (and empty -wal) files next to a store even read-only.
            let url = try F.corpusCopy(name)
            #expect(try F.sqlite3(url, "SELECT COUNT(*) FROM Z_MODELCACHE") == ["1"], "\(name)")
            switch try SQLiteStoreType().modelCache(at: url) {
            case .model: #expect(Self.cacheStores.contains(name), "\(name)")
            case .damaged: #expect(name.contains("mvt_DataUsage"), "\(name)")
            case .absent: Issue.record("\(name): the cache reads as absent")
            }
        }
    }

    @Test(arguments: cacheStores)
    func opensWithTheCachedModelAndReadsEveryRow(_ name: String) throws {
        let url = try F.corpusCopy(name)
        let store = try F.open(url, readOnly: true)
        defer { store.close() }
        #expect(store.modelSource == .coreDataCache)
        #expect(try SQLiteStoreCorpusTests().checkEveryRow(of: store, file: url) >= 0)
        // Every relationship has its inverse under its real name on the other side.
        for entity in store.model.entities {
            for relationship in entity.relationships {
                guard let inverse = relationship.inverseName else { continue }
                #expect(
                    store.model.entity(named: relationship.destinationEntityName)?.relationship(named: inverse) != nil)
            }
        }
    }

    /// Entity by entity, the hash storefs computes from the cached model is the one Core Data wrote
    /// in the metadata, derived attributes included.
    @Test(arguments: cacheStores)
    func versionHashesOfTheCachedModelAreCoreDatas(_ name: String) throws {
        let url = try F.corpusCopy(name)
        let store = try F.open(url, readOnly: true)
        defer { store.close() }
        let stored = try VersionHashTests.storedHashes(url)
        let computed = VersionHash.entityHashes(of: store.model)
        #expect(Set(computed.keys) == Set(stored.keys), "\(name)")
        for entity in store.model.entities {
            #expect(computed[entity.name] == stored[entity.name], "\(name) entity \(entity.name)")
        }
    }

    /// The figures the documentation quotes: entities whose hash matches, across the stores whose
    /// cache decodes.
    @Test func matchFiguresAcrossTheCorpus() throws {
        var matched = 0
        var total = 0
        for name in Self.cacheStores {
            let url = try F.corpusCopy(name)
            let store = try F.open(url, readOnly: true)
            let stored = try VersionHashTests.storedHashes(url)
            for (entity, hash) in VersionHash.entityHashes(of: store.model) {
                total += 1
                if stored[entity] == hash { matched += 1 }
            }
            store.close()
        }
        #expect(total == 123)
        #expect(matched == 123)
    }

    /// Stores whose Xcode model the corpus has: the cached model has the same entities,
    /// inheritance, properties, types, optionality, relationships and inverses.
    @Test(arguments: SQLiteStoreCorpusTests.models)
    func cachedModelEqualsTheXcodeModel(_ pair: (store: String, model: String)) throws {
        let url = try F.corpusCopy(pair.store)
        let store = try F.open(url, readOnly: true)
        defer { store.close() }
        let cached = store.model
        let xcode = try XcodeModelLoader.load(from: F.corpus.appendingPathComponent("models/\(pair.model)"))
        #expect(cached.entities.map(\.name) == xcode.entities.map(\.name))
        for expected in xcode.entities {
            let entity = try #require(cached.entity(named: expected.name))
            #expect(entity.parentName == expected.parentName)
            #expect(entity.isAbstract == expected.isAbstract)
            #expect(entity.uniquenessConstraints == expected.uniquenessConstraints)
            #expect(entity.renamingIdentifier == expected.renamingIdentifier, "\(expected.name)")
            #expect(Set(entity.attributes.map(\.name)) == Set(expected.attributes.map(\.name)), "\(expected.name)")
            for attribute in expected.attributes {
                let got = try #require(entity.attributes.first { $0.name == attribute.name })
                #expect(got.type == attribute.type, "\(expected.name).\(attribute.name)")
                #expect(got.isOptional == attribute.isOptional, "\(expected.name).\(attribute.name)")
                #expect(got.isTransient == attribute.isTransient, "\(expected.name).\(attribute.name)")
                #expect(got.defaultValue == attribute.defaultValue, "\(expected.name).\(attribute.name)")
                #expect(
                    got.valueTransformerName == attribute.valueTransformerName, "\(expected.name).\(attribute.name)")
                #expect(got.preservesValueInHistoryOnDeletion == attribute.preservesValueInHistoryOnDeletion)
            }
            #expect(
                Set(entity.relationships.map(\.name)) == Set(expected.relationships.map(\.name)), "\(expected.name)")
            for relationship in expected.relationships {
                let got = try #require(entity.relationships.first { $0.name == relationship.name })
                #expect(got.destinationEntityName == relationship.destinationEntityName)
                #expect(got.inverseName == relationship.inverseName)
                #expect(got.isToMany == relationship.isToMany)
                #expect(got.isOrdered == relationship.isOrdered)
                #expect(got.isOptional == relationship.isOptional)
                #expect(got.deleteRule == relationship.deleteRule)
                #expect(got.minCount == relationship.minCount)
                #expect(got.maxCount == relationship.maxCount)
            }
        }
    }

    /// The code-built model of SampleModel2 has what Xcode models in the corpus lack: fetched
    /// properties with predicates, validation ranges, a derived attribute and a configuration.
    @Test func codeBuiltModelKeepsFetchedPropertiesRangesAndDerivations() throws {
        let url = try F.corpusCopy("alemar11_CoreDataPlus_SampleModel2_V1.sqlite")
        let store = try F.open(url, readOnly: true)
        defer { store.close() }
        let model = store.model
        let author = try #require(model.entity(named: "Author"))
        let feedbacks = try #require(author.fetchedProperty(named: "feedbacks"))
        #expect(feedbacks.destinationEntityName == "Feedback")
        #expect(feedbacks.predicateString == "authorAlias == $FETCH_SOURCE.alias")
        let favourites = try #require(author.fetchedProperty(named: "favFeedbacks"))
        #expect(
            favourites.predicateString
                == "authorAlias == $FETCH_SOURCE.alias AND comment CONTAINS[c] $FETCHED_PROPERTY.userInfo.search")
        #expect(favourites.userInfo == ["search": "great"])
        // Both parse as storefs's predicates.
        _ = try PredicateParser.parse(feedbacks.predicateString)
        _ = try PredicateParser.parse(favourites.predicateString)
        let title = try #require(model.entity(named: "Book")?.attribute(named: "title"))
        #expect(title.minValue == .integer(3) && title.maxValue == .integer(50))
        let pagesCount = try #require(model.entity(named: "Book")?.attribute(named: "pagesCount"))
        #expect(pagesCount.derivationExpression == "pages.@count")
        let cover = try #require(model.entity(named: "Book")?.attribute(named: "cover"))
        #expect(
            cover.type == .transformable && cover.valueTransformerName == "CoverTransformer"
                && cover.valueClassName == "Cover")
        #expect(model.configurations.map(\.name) == ["SampleConfigurationV1"])
        #expect(model.configurations.first?.entityNames.count == 6)
        #expect(model.entity(named: "Writer")?.isAbstract == true)
        #expect(model.entity(named: "Author")?.relationship(named: "books")?.deleteRule == .cascade)
    }

    // MARK: - Hostile caches

    /// The Z_CONTENT blob of a corpus store.
    static func cacheBlob(_ name: String) throws -> Data {
        let url = try F.corpusCopy(name)
        let queue = try DatabaseQueue(
            path: url.path,
            configuration: {
                var c = Configuration(); c.readonly = true; return c
            }())
        defer { try? queue.close() }
        return try #require(try queue.read { db in try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE") })
    }

    @Test func inflateStopsAtItsLimitAndAtTheEndOfTheData() throws {
        let blob = try Self.cacheBlob("RhetTbull_merge_photos_libraries_Photos.sqlite")
        let whole = try RawInflate.inflate(blob, limit: 64 << 20)
        #expect(whole.count > blob.count)
        #expect(throws: RawInflate.Failure.self) { try RawInflate.inflate(blob, limit: whole.count - 1) }
        for length in stride(from: 0, to: blob.count - 1, by: max(1, blob.count / 60)) {
            #expect(throws: RawInflate.Failure.self) { try RawInflate.inflate(blob.prefix(length), limit: 64 << 20) }
        }
    }

    /// Bit flips in real caches (compressed and decompressed): decoded, or refused with an error.
    @Test(arguments: [
        "alemar11_CoreDataPlus_SampleModel2_V1.sqlite", "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"
    ])
    func damagedCachesAreRefusedNotCrashedOn(_ name: String) throws {
        let blob = [UInt8](try Self.cacheBlob(name))
        let archive = [UInt8](try RawInflate.inflate(Data(blob), limit: 64 << 20))
        var state: UInt64 = 0xC0FF_EE00_1234_5678
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var refused = 0
        for round in 0..<200 {
            var bytes = round.isMultiple(of: 2) ? blob : archive
            for _ in 0...next(3) { bytes[next(bytes.count)] ^= UInt8(1 << next(8)) }
            do {
                if round.isMultiple(of: 2) {
                    _ = try ModelCache.decode(Data(bytes), file: "damaged", logger: Logger(label: "test"))
                } else {
                    _ = try CompiledModelLoader.decode(archive: Data(bytes), source: "damaged")
                }
            } catch {
                refused += 1
            }
        }
        #expect(refused > 0)
    }
}
