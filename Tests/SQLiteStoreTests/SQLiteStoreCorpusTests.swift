import Foundation
import ObjectGraph
import SQLiteStore
import Testing

/// Every corpus store (real files written by Apple's Core Data) opens, with and without its
/// model, and reads every row; counts are checked against the `sqlite3` tool.
@Suite struct SQLiteStoreCorpusTests {
    typealias F = Fixtures

    static let wibosco = "wibosco_CoreDataMigration-Example_CoreDataMigration_Example"
    static let stores = [
        "alemar11_CoreDataPlus_SampleModel2_V1.sqlite", "alemar11_CoreDataPlus_SampleModel3_V1.sqlite",
        "alemar11_CoreDataPlus_SampleModel_V1.sqlite", "alemar11_CoreDataPlus_SampleModel_V2.sqlite",
        "magicalpanda_MagicalRecord_Recipes.sqlite", "\(wibosco)_1.sqlite", "\(wibosco)_2.sqlite",
        "\(wibosco)_3.sqlite",
        "\(wibosco)_WAL.sqlite"
    ]

    /// Store ↔ model version, chosen by comparing each version's attributes with the store's columns.
    static let models: [(store: String, model: String)] = [
        (
            "alemar11_CoreDataPlus_SampleModel_V1.sqlite",
            "alemar11_CoreDataPlus_SampleModel.xcdatamodeld/SampleModel.xcdatamodel"
        ),
        (
            "alemar11_CoreDataPlus_SampleModel_V2.sqlite",
            "alemar11_CoreDataPlus_SampleModel.xcdatamodeld/SampleModel2.xcdatamodel"
        ),
        (
            "alemar11_CoreDataPlus_SampleModel3_V1.sqlite",
            "alemar11_CoreDataPlus_SampleModel3.xcdatamodeld/SampleModel3.xcdatamodel"
        ),
        ("\(wibosco)_1.sqlite", "\(wibosco).xcdatamodeld/CoreDataMigration_Example.xcdatamodel"),
        ("\(wibosco)_2.sqlite", "\(wibosco).xcdatamodeld/CoreDataMigration_Example 2.xcdatamodel"),
        ("\(wibosco)_3.sqlite", "\(wibosco).xcdatamodeld/CoreDataMigration_Example 3.xcdatamodel"),
        ("\(wibosco)_WAL.sqlite", "\(wibosco).xcdatamodeld/CoreDataMigration_Example 4.xcdatamodel")
    ]

    /// Checks counts against sqlite3 and reads every object's snapshot and to-many relationships.
    func checkEveryRow(of store: SQLiteStore, file: URL) throws -> Int {
        var total = 0
        for entity in store.model.entities {
            let rootName = store.model[entity.rootID].name
            let zent = try F.sqlite3(file, "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = '\(entity.name)'").first
            let ids = try store.objectIDs(of: entity.id)
            if let zent {
                let expected = try F.sqlite3(
                    file, "SELECT COUNT(*) FROM Z\(rootName.uppercased()) WHERE Z_ENT = \(zent)")
                #expect([String(ids.count)] == expected, "\(file.lastPathComponent) \(entity.name)")
            }
            #expect(try store.count(of: entity.id) == ids.count)
            let snapshots = try store.snapshots(for: ids)
            #expect(snapshots.count == ids.count, "\(file.lastPathComponent) \(entity.name)")
            for relationship in entity.allRelationships where relationship.isToMany {
                let destinations = try store.toManyDestinations(of: relationship.name, in: entity.id, for: ids)
                #expect(destinations.count == ids.count)
            }
            total += ids.count
        }
        return total
    }

    @Test(arguments: stores) func opensWithoutModelAndReadsEveryRow(_ name: String) throws {
        let url = try F.corpusCopy(name)
        let store = try F.open(url)
        defer { store.close() }
        #expect(try checkEveryRow(of: store, file: url) > 0)
        #expect(try store.metadata().storeType == "SQLite")
        #expect(try store.metadata().storeUUID?.count == 36)
    }

    @Test(arguments: models) func opensWithItsModelAndReadsEveryRow(_ pair: (store: String, model: String)) throws {
        let url = try F.corpusCopy(pair.store)
        let model = try XcodeModelLoader.load(from: F.corpus.appendingPathComponent("models/\(pair.model)"))
        let store = try F.open(url, model: model)
        defer { store.close() }
        #expect(try checkEveryRow(of: store, file: url) > 0)
        // Every attribute with a column reads with its model type: spot-check one object per entity.
        for entity in model.entities {
            guard let first = try store.objectIDs(of: entity.id).first else { continue }
            let snapshot = try #require(try store.snapshots(for: [first]).first)
            for (name, value) in snapshot.attributes {
                #expect(value.matches(try #require(entity.attribute(named: name)).type))
            }
        }
    }

    @Test func renamedEntityMatchesItsStaleZPrimaryKeyRow() throws {
        // cdpV2 was migrated renaming ExpensiveSportCar → LuxuryCar; Z_PRIMARYKEY still has the old name.
        let url = try F.corpusCopy("alemar11_CoreDataPlus_SampleModel_V2.sqlite")
        let model = try XcodeModelLoader.load(
            from: F.corpus.appendingPathComponent(
                "models/alemar11_CoreDataPlus_SampleModel.xcdatamodeld/SampleModel2.xcdatamodel"))
        let store = try F.open(url, model: model)
        let luxury = try #require(model.entityID(named: "LuxuryCar"))
        let expected = try F.sqlite3(url, "SELECT COUNT(*) FROM ZCAR WHERE Z_ENT = 3")
        #expect([String(try store.count(of: luxury))] == expected)
        #expect(try store.count(of: luxury) > 0)
    }

    @Test func walStoreReadsRowsThatLiveOnlyInTheLog() throws {
        let url = try F.corpusCopy("\(Self.wibosco)_WAL.sqlite")
        let store = try F.open(url)
        let post = try #require(store.model.entityID(named: "Post"))
        #expect(try store.count(of: post) == 84)
        let snapshot = try #require(try store.snapshots(for: store.objectIDs(of: post)).first)
        #expect(snapshot.attributes["postID"] != nil)
        #expect(snapshot.toOne["color"]?.entity == store.model.entityID(named: "Color"))
    }
}
