import Foundation
import GRDB
import ObjectGraph
import SQLiteStore
import Testing

/// Which model a SQLite store opens with (storefs's own > Core Data's cache > inference), what
/// inference makes of a store with no model, and stores other tools left in odd shapes.
@Suite struct ModelOrderTests {
    typealias F = Fixtures
    static let recipes = "magicalpanda_MagicalRecord_Recipes.sqlite"

    // MARK: - Order

    @Test func storefsModelWinsOverTheCache() throws {
        // A Core Data store with a cache that storefs has also written its model into.
        let url = try F.corpusCopy("sergd2005_ResourcesManager_default.store")
        let ours = try F.model()
        let store = try F.open(url)
        let context = PersistentStoreCoordinator(store: store).newContext()
        try context.setMetadata(.string(XcodeModelWriter.contents(of: ours)), for: StoreMetadata.modelKey)
        try context.save()
        store.close()
        let reopened = try F.open(url, readOnly: true)
        defer { reopened.close() }
        #expect(reopened.modelSource == .keptByStoreFS)
        #expect(reopened.model.entities.map(\.name) == ours.entities.map(\.name))
    }

    @Test func aDamagedCacheFallsBackToInference() throws {
        let url = try F.corpusCopy("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite")
        _ = try F.sqlite3Write(url, "UPDATE Z_MODELCACHE SET Z_CONTENT = x'00ff00ff'")
        let store = try F.open(url, readOnly: true)
        defer { store.close() }
        #expect(store.modelSource == .inferred)
        #expect(store.model.entity(named: "Post")?.attribute(named: "postid") != nil)
    }

    @Test func aGivenModelWins() throws {
        let url = try F.corpusCopy("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite")
        let model = try XcodeModelLoader.load(
            from: F.corpus.appendingPathComponent(
                "models/wibosco_CoreDataMigration-Example_CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example 3.xcdatamodel"
            ))
        let store = try F.open(url, model: model, readOnly: true)
        defer { store.close() }
        if case .given = store.modelSource {} else { Issue.record("model source \(store.modelSource)") }
    }

    // MARK: - Inference

    /// The 2009 Recipes store has no cache: relationships come out on both sides, by name.
    @Test func inferenceFindsBothSidesOfEveryRelationship() throws {
        let url = try F.corpusCopy(Self.recipes)
        let store = try F.open(url, readOnly: true)
        defer { store.close() }
        #expect(store.modelSource == .inferred)
        let model = store.model
        let recipe = try #require(model.entity(named: "Recipe"))
        #expect(recipe.relationship(named: "type")?.destinationEntityName == "RecipeType")
        #expect(recipe.relationship(named: "type")?.inverseName == "recipes")
        #expect(recipe.relationship(named: "ingredients")?.isToMany == true)
        #expect(recipe.relationship(named: "ingredients")?.inverseName == "recipe")
        #expect(recipe.relationship(named: "image")?.inverseName == "recipe")
        #expect(model.entity(named: "Image")?.relationship(named: "recipe")?.inverseName == "image")
        #expect(model.entity(named: "RecipeType")?.relationship(named: "recipes")?.isToMany == true)
        #expect(recipe.attribute(named: "type") == nil, "ZTYPE is a link to RecipeType, not a number")
        // Recipe p1's type is a RecipeType whose row exists.
        let first = try #require(try store.objectIDs(of: recipe.id).first)
        let snapshot = try #require(try store.snapshots(for: [first]).first)
        let type = try #require(snapshot.toOne["type"])
        #expect(type.entity == model.entityID(named: "RecipeType"))
        #expect(try store.snapshots(for: [type]).count == 1)
        let ingredients = try store.toManyDestinations(of: "ingredients", in: recipe.id, for: [first])[first] ?? []
        let expected = try F.sqlite3(url, "SELECT COUNT(*) FROM ZINGREDIENT WHERE ZRECIPE = \(first.key.rawValue)")
        #expect([String(ingredients.count)] == expected)
        #expect(!ingredients.isEmpty)
    }

    /// Deleting an object of a store without model leaves no row pointing at it.
    @Test func deletingWithAnInferredModelLeavesNoDanglingKeys() throws {
        let url = try F.corpusCopy(Self.recipes)
        let store = try F.open(url)
        let coordinator = PersistentStoreCoordinator(store: store)
        let context = coordinator.newContext()
        let recipe = try #require(store.model.entityID(named: "Recipe"))
        let type = try #require(store.model.entityID(named: "RecipeType"))
        let victim = try #require(
            try context.objectIDs(of: recipe).first { id in
                (try? F.sqlite3(url, "SELECT COUNT(*) FROM ZINGREDIENT WHERE ZRECIPE = \(id.key.rawValue)")) != ["0"]
            })
        let dessert = try #require(
            try context.objectIDs(of: type).first { id in
                (try? F.sqlite3(url, "SELECT COUNT(*) FROM ZRECIPE WHERE ZTYPE = \(id.key.rawValue)")) != ["0"]
            })
        try context.delete(victim)
        try context.delete(dessert)
        try context.save()
        store.close()
        for (table, column, key) in [
            ("ZINGREDIENT", "ZRECIPE", victim.key.rawValue), ("ZIMAGE", "ZRECIPE", victim.key.rawValue),
            ("ZRECIPE", "ZTYPE", dessert.key.rawValue)
        ] {
            #expect(
                try F.sqlite3(url, "SELECT COUNT(*) FROM \(table) WHERE \(column) = \(key)") == ["0"],
                "\(table).\(column)")
        }
        #expect(try F.sqlite3(url, "SELECT COUNT(*) FROM ZRECIPE WHERE Z_PK = \(victim.key.rawValue)") == ["0"])
        #expect(try F.sqlite3(url, "PRAGMA integrity_check") == ["ok"])
    }

    /// A to-many without inverse lives in a hidden column of its destinations; deleting the
    /// source clears it (with any model, not only inferred ones).
    @Test func deletingTheSourceOfAToManyWithoutInverseClearsItsHiddenKeys() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Shelf", attributes: [AttributeDescription(name: "label", type: .string)],
                relationships: [RelationshipDescription(name: "books", destinationEntityName: "Book", isToMany: true)]),
            EntityDescription(name: "Book", attributes: [AttributeDescription(name: "title", type: .string)])
        ])
        let url = try F.temporaryDirectory().appendingPathComponent("Shelves.sqlite")
        let store = try SQLiteStoreType().open(
            at: url, model: model, options: StoreOptions(createIfMissing: true), initialMetadata: StoreMetadata())
        let context = PersistentStoreCoordinator(store: store).newContext()
        let shelf = try context.insertObject(of: try #require(model.entityID(named: "Shelf")))
        let books = try context.insertObjects(of: try #require(model.entityID(named: "Book")), count: 3)
        try context.setDestinations(books, of: "books", for: shelf)
        try context.save()
        // Core Data's hidden column: Z<Z_ENT of the source><RELATIONSHIP>, in the destination table.
        let hidden = "Z\(shelf.entity.rawValue)BOOKS"
        #expect(try F.sqlite3(url, "SELECT COUNT(*) FROM ZBOOK WHERE \(hidden) = \(shelf.key.rawValue)") == ["3"])
        try context.delete(shelf)
        try context.save()
        store.close()
        #expect(try F.sqlite3(url, "SELECT COUNT(*) FROM ZBOOK WHERE \(hidden) IS NOT NULL") == ["0"])
        #expect(try F.sqlite3(url, "SELECT COUNT(*) FROM ZBOOK") == ["3"])
    }

    @Test func pluralNamesOfInferredToManyRelationships() {
        // Through the model the inference makes, not the helper: names as a user sees them.
        #expect(
            ["Ingredient", "Category", "Address", "Box", "Day"].map(Self.plural) == [
                "ingredients", "categories", "addresses", "boxes", "days"
            ])
    }

    static func plural(_ entity: String) -> String {
        // A one-entity store whose table has an indexed key column pointing at a second entity.
        (try? {
            let url = try F.temporaryDirectory().appendingPathComponent("p.sqlite")
            let sql = """
                CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
                CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
                INSERT INTO Z_PRIMARYKEY VALUES (1, '\(entity)', 0, 0), (2, 'Owner', 0, 0);
                INSERT INTO Z_METADATA VALUES (1, 'A0A0A0A0-0000-0000-0000-000000000000', NULL);
                CREATE TABLE Z\(entity.uppercased()) ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER INTEGER );
                CREATE INDEX Z\(entity.uppercased())_ZOWNER_INDEX ON Z\(entity.uppercased()) (ZOWNER);
                CREATE TABLE ZOWNER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER );
                """
            _ = try F.sqlite3Write(url, sql)
            let store = try F.open(url, readOnly: true)
            defer { store.close() }
            return store.model.entity(named: "Owner")?.relationships.first?.name ?? "none"
        }()) ?? "error"
    }

    // MARK: - Stores in other shapes

    @Test func textKeysFromARebuiltTableAreReadAndNotWritten() throws {
        let url = try F.corpusCopy("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_1.sqlite")
        _ = try F.sqlite3Write(
            url,
            """
            BEGIN;
            CREATE TABLE ZPOST_NEW (Z_PK, Z_ENT, Z_OPT, ZDATE, ZCOLOR, ZPOSTID);
            INSERT INTO ZPOST_NEW SELECT CAST(Z_PK AS TEXT), CAST(Z_ENT AS TEXT), CAST(Z_OPT AS TEXT), ZDATE, ZCOLOR, ZPOSTID FROM ZPOST;
            DROP TABLE ZPOST; ALTER TABLE ZPOST_NEW RENAME TO ZPOST;
            COMMIT;
            """)
        #expect(try F.sqlite3(url, "SELECT typeof(Z_PK) FROM ZPOST LIMIT 1") == ["text"])
        let before = try F.sqlite3(url, "SELECT Z_PK, Z_OPT, ZPOSTID FROM ZPOST ORDER BY CAST(Z_PK AS INTEGER)")
        let store = try F.open(url)
        let post = try #require(store.model.entityID(named: "Post"))
        let ids = try store.objectIDs(of: post)
        #expect([String(ids.count)] == (try F.sqlite3(url, "SELECT COUNT(*) FROM ZPOST")))
        #expect(ids.count > 0)
        let snapshot = try #require(try store.snapshots(for: [ids[0]]).first)
        #expect(snapshot.attributes["postID"] != nil)
        let context = PersistentStoreCoordinator(store: store).newContext()
        try context.setValue(.string("changed"), of: "postID", for: ids[0])
        #expect(throws: ObjectGraphError.self) { try context.save() }
        store.close()
        #expect(
            try F.sqlite3(url, "SELECT Z_PK, Z_OPT, ZPOSTID FROM ZPOST ORDER BY CAST(Z_PK AS INTEGER)") == before,
            "the refused save changed nothing")
    }

    @Test func aZMaxBelowTheLargestKeyNeverHandsOutATakenKey() throws {
        let url = try F.corpusCopy("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_1.sqlite")
        let largest = try #require(Int64(try F.sqlite3(url, "SELECT MAX(Z_PK) FROM ZPOST").first ?? ""))
        _ = try F.sqlite3Write(url, "UPDATE Z_PRIMARYKEY SET Z_MAX = 3 WHERE Z_NAME = 'Post'")
        let store = try F.open(url)
        let post = try #require(store.model.entityID(named: "Post"))
        let keys = try store.reserveKeys(in: post, count: 2)
        #expect(keys.map(\.rawValue) == [largest + 1, largest + 2])
        let context = PersistentStoreCoordinator(store: store).newContext()
        let inserted = try context.insertObject(of: post)
        try context.setValue(.string("new"), of: "postID", for: inserted)
        try context.save()
        store.close()
        #expect(inserted.key.rawValue > largest + 2)
        #expect(try F.sqlite3(url, "SELECT ZPOSTID FROM ZPOST WHERE Z_PK = \(inserted.key.rawValue)") == ["new"])
    }

    /// SwiftData's `default.store` opens by suffix; any Core Data SQLite file opens by content.
    @Test func storesOpenBySuffixOrContent() throws {
        let types: [any PersistentStoreType] = [SQLiteStoreType()]
        let swiftData = try F.corpusCopy("sergd2005_ResourcesManager_default.store")
        #expect(try PersistentStoreCoordinator.storeType(for: swiftData, among: types).name == "SQLite")
        let renamed = swiftData.deletingLastPathComponent().appendingPathComponent("Library.data")
        try FileManager.default.copyItem(at: swiftData, to: renamed)
        let coordinator = try PersistentStoreCoordinator.open(
            at: renamed, types: types, options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        #expect(coordinator.store.storeType == "SQLite")
        #expect(coordinator.modelSource == .coreDataCache)
        #expect(coordinator.model.entity(named: "Item") != nil)
        let text = swiftData.deletingLastPathComponent().appendingPathComponent("notes.data")
        try Data("not a store".utf8).write(to: text)
        #expect(throws: ObjectGraphError.self) { try PersistentStoreCoordinator.storeType(for: text, among: types) }
    }
}
