import BinaryStore
import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing
import XMLStore

/// Migration between store types: the same graph at every step, the source never touched, and no
/// destination left behind by a failure.
@Suite(.serialized) struct MigrationTests {
    let types: [any PersistentStoreType] = [SQLiteStoreType(), XMLStoreType(), BinaryStoreType()]

    func open(_ url: URL, model: ManagedObjectModel? = nil) throws -> PersistentStoreCoordinator {
        try PersistentStoreCoordinator.open(at: url, types: types, model: model, options: StoreOptions(readOnly: true))
    }

    func sha256(_ url: URL) throws -> String {
        try runTool("sha256sum", [url.path]).output.prefix(64).description
    }

    /// A store whose model storefs cannot hash as Core Data did (DataUsage: its model cache does
    /// not decode, so the model is inferred) keeps the hashes Core Data recorded through a type
    /// migration: the new store's objects are the old one's, so Core Data's record of the app's
    /// model stays true of them, and storefs's inferred hashes would describe no app's model.
    @Test func migrationKeepsTheRecordedVersionHashes() throws {
        let directory = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let name = "mvt-project_mvt_DataUsage_0d609c54856a.sqlite"
        let source = directory.appendingPathComponent(name)
        try FileManager.default.copyItem(at: StoreFixtures.corpus.appendingPathComponent("sqlite/\(name)"), to: source)
        let recorded = try #require(
            VersionHashComparison.recordedHashes(in: try SQLiteStoreType().metadata(at: source)))
        let xml = directory.appendingPathComponent("DataUsage.xml")
        let coordinator = try open(source)
        #expect(coordinator.modelSource == .inferred)
        let computed = VersionHash.entityHashes(of: coordinator.model)
        try coordinator.migrate(to: xml, type: XMLStoreType())
        coordinator.close()
        let migrated = try XMLStoreType().metadata(at: xml)
        #expect(VersionHashComparison.recordedHashes(in: migrated) == recorded)
        #expect(migrated["NSPersistenceFrameworkVersion"] == .integer(1044))
        #expect(computed.allSatisfy { recorded[$0.key] != $0.value }, "the inferred model's hashes are not the app's")
    }

    @Test func sampleGraphIsTheSameThroughSQLiteXMLBinaryMemoryAndBackToSQLite() throws {
        let directory = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = directory.appendingPathComponent("Company.sqlite")
        let source = try PersistentStoreCoordinator.open(
            at: first, types: types, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        let context = source.newContext()
        try SampleGenerator(objectCount: 1_000).populate(context)
        try context.setMetadata(.string("kept"), for: "com.example.custom")
        try context.save()
        let uuid = try source.store.metadata().storeUUID
        source.close()

        let xml = directory.appendingPathComponent("Company.xml")
        let binary = directory.appendingPathComponent("Company.binary")
        let last = directory.appendingPathComponent("Again.sqlite")
        let checksum = try sha256(first)
        let sqliteStore = try open(first)
        try sqliteStore.migrate(to: xml, type: XMLStoreType())
        let xmlStore = try open(xml)
        try StoreFixtures.expectSameGraph(sqliteStore.store, xmlStore.store)
        try xmlStore.migrate(to: binary, type: BinaryStoreType())
        let binaryStore = try open(binary)
        try StoreFixtures.expectSameGraph(sqliteStore.store, binaryStore.store)
        let memory = GraphStore(model: binaryStore.model)
        try binaryStore.migrate(into: memory)
        try StoreFixtures.expectSameGraph(sqliteStore.store, memory)
        try PersistentStoreCoordinator(store: memory).migrate(to: last, type: SQLiteStoreType())
        let again = try open(last)
        try StoreFixtures.expectSameGraph(sqliteStore.store, again.store)

        for store in [xmlStore.store, binaryStore.store, memory, again.store] {
            let metadata = try store.metadata()
            #expect(
                metadata["com.example.custom"] == .string("kept"), "custom metadata comes along (\(store.storeType))")
            #expect(
                metadata.storeUUID == uuid, "the store UUID is kept, so object URIs stay valid (\(store.storeType))")
        }
        #expect(try xmlStore.store.metadata().storeType == "XML")
        #expect(try binaryStore.store.metadata().storeType == "Binary")
        #expect(try again.store.metadata().storeType == "SQLite")
        #expect(try again.store.metadata().embeddedModel != nil, "the new store keeps the model")
        for coordinator in [sqliteStore, xmlStore, binaryStore, again] { coordinator.close() }
        #expect(try sha256(first) == checksum, "the source was only read")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("migrating") }
                .isEmpty)
    }

    @Test(arguments: [
        "alemar11_CoreDataPlus_SampleModel_V1.sqlite", "alemar11_CoreDataPlus_SampleModel_V2.sqlite",
        "alemar11_CoreDataPlus_SampleModel2_V1.sqlite", "alemar11_CoreDataPlus_SampleModel3_V1.sqlite",
        "magicalpanda_MagicalRecord_Recipes.sqlite",
        "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_1.sqlite",
        "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_2.sqlite",
        "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite",
        "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_WAL.sqlite"
    ])
    func corpusStoresMigrateToXMLAndBinaryAndBack(_ name: String) throws {
        let directory = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = StoreFixtures.corpus.appendingPathComponent("sqlite/\(name)")
        let copy = directory.appendingPathComponent(name)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: original.path + suffix) {
            try FileManager.default.copyItem(atPath: original.path + suffix, toPath: copy.path + suffix)
        }
        let source = try open(copy)
        defer { source.close() }
        for type in [XMLStoreType() as any PersistentStoreType, BinaryStoreType()] {
            let there = directory.appendingPathComponent("there.\(type.fileExtensions[0])")
            let back = directory.appendingPathComponent("back-\(type.name).sqlite")
            try source.migrate(to: there, type: type)
            let middle = try open(there)
            try StoreFixtures.expectSameGraph(source.store, middle.store, metadata: false)
            try middle.migrate(to: back, type: SQLiteStoreType())
            let returned = try open(back)
            try StoreFixtures.expectSameGraph(source.store, returned.store, metadata: false)
            middle.close()
            returned.close()
        }
    }

    @Test func aFailedMigrationLeavesTheSourceAndNoDestination() throws {
        let directory = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sourceURL = directory.appendingPathComponent("Company.sqlite")
        let created = try PersistentStoreCoordinator.open(
            at: sourceURL, types: types, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        try SampleGenerator(objectCount: 2_000).populate(created.newContext())
        created.close()
        let checksum = try sha256(sourceURL)
        let source = try open(sourceURL)
        defer { source.close() }

        // A read-only destination folder (root ignores permissions: a read-only tmpfs does not).
        let readOnly = directory.appendingPathComponent("ro")
        try FileManager.default.createDirectory(at: readOnly, withIntermediateDirectories: true)
        #expect(try runTool("mount", ["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", readOnly.path]).status == 0)
        defer { _ = try? runTool("umount", [readOnly.path]) }
        let refused = #expect(throws: ObjectGraphError.self) {
            try source.migrate(to: readOnly.appendingPathComponent("Company.xml"), type: XMLStoreType())
        }
        #expect(refused != nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: readOnly.path).isEmpty)

        // A full disk, for each destination type.
        let small = directory.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        #expect(try runTool("mount", ["-t", "tmpfs", "-o", "size=128k", "tmpfs", small.path]).status == 0)
        defer { _ = try? runTool("umount", [small.path]) }
        for type in types {
            let target = small.appendingPathComponent("Company.\(type.fileExtensions[0])")
            let error = #expect(throws: ObjectGraphError.self, "\(type.name) on a full disk") {
                try source.migrate(to: target, type: type)
            }
            #expect(error != nil)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: small.path).isEmpty,
                "nothing is left behind (\(type.name))")
        }

        // A value the target cannot hold: SQLite has no NaN.
        let xml = directory.appendingPathComponent("WithNaN.xml")
        let xmlStore = try PersistentStoreCoordinator.open(
            at: xml, types: types, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        let context = xmlStore.newContext()
        let project = try context.insertObject(of: xmlStore.model.entityID(named: "Project")!)
        try context.setValue(.double(.nan), of: "budget", for: project)
        try context.save()
        let nanChecksum = try sha256(xml)
        let nanTarget = directory.appendingPathComponent("WithNaN.sqlite")
        let nan = #expect(throws: ObjectGraphError.self) {
            try xmlStore.migrate(to: nanTarget, type: SQLiteStoreType())
        }
        #expect(nan?.message.contains("NaN") == true)
        #expect(!FileManager.default.fileExists(atPath: nanTarget.path))
        #expect(try sha256(xml) == nanChecksum)
        xmlStore.close()

        #expect(try sha256(sourceURL) == checksum, "the source was only read")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "no temporary stores left: \(leftovers)")
        // An existing destination is never overwritten.
        let exists = #expect(throws: ObjectGraphError.self) { try source.migrate(to: xml, type: XMLStoreType()) }
        #expect(exists?.code == .exists)
    }
}
