import Foundation
import ObjectGraph
import PostgresStore
import SQLiteStore
import TestSupport
import Testing

/// Composite attributes in the PostgreSQL store: the SwiftData store with 11 composites migrates
/// into a real server (the element columns, the uniqueness constraint as a UNIQUE index) and
/// back, unchanged, and a duplicate of a unique value is refused when it is made.
@Suite struct CompositePostgresTests {
    static let cocktails = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/swiftdata/MatthewHunt84_MetaCocktailsSwiftData_PreloadedCocktails.store")
        .standardizedFileURL

    @Test func theSwiftDataStoreMigratesIntoPostgreSQLAndBackUnchanged() throws {
        let server = try PostgresServer.shared()
        let directory = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("Cocktails.store")
        try FileManager.default.copyItem(at: Self.cocktails, to: copy)
        let types: [any PersistentStoreType] = [SQLiteStoreType(), PostgresStoreType()]
        let url = server.url(schema: PostgresServer.uniqueSchema("composites"))
        let source = try PersistentStoreCoordinator.open(at: copy, types: types, options: StoreOptions(readOnly: true))
        defer { source.close() }
        try source.migrate(to: url, type: PostgresStoreType())
        let postgres = try PersistentStoreCoordinator.open(at: url, types: types)
        defer { postgres.close() }
        try StoreFixtures.expectSameGraph(source.store, postgres.store, metadata: false)
        let context = postgres.newContext()
        let cocktail = try #require(postgres.model.entityID(named: "Cocktail"))
        let first = ObjectID(entity: cocktail, key: PrimaryKey(1))
        #expect(try context.value(of: "author.person", for: first) == .string("Kenny Remster"))
        let taken = try #require(try context.value(of: "cocktailName", for: first))
        let second = ObjectID(entity: cocktail, key: PrimaryKey(2))
        #expect(throws: ObjectGraphError.self) { try context.setValue(taken, of: "cocktailName", for: second) }
        try context.setValue(.string("Jane Doe"), of: "author.person", for: second)
        try context.save()
        let back = directory.appendingPathComponent("back.sqlite")
        try postgres.migrate(to: back, type: SQLiteStoreType())
        let again = try PersistentStoreCoordinator.open(at: back, types: types, options: StoreOptions(readOnly: true))
        defer { again.close() }
        #expect(try again.newContext().value(of: "author.person", for: second) == .string("Jane Doe"))
        #expect(VersionHash.entityHashes(of: again.model) == VersionHash.entityHashes(of: source.model))
    }
}
