import BinaryStore
import Foundation
import ObjectGraph
import PostgresStore
import SQLiteStore
import TestSupport
import Testing
import XMLStore

/// Every direction of migration between the store types (SQLite, XML, binary, PostgreSQL) carries
/// what a store remembers beyond its objects: the key counters (keys of objects deleted before
/// the migration are never handed out again), each object's version (`Z_OPT`) where both formats
/// keep one (Core Data's XML keeps none), and the metadata (custom keys, the store UUID).
@Suite(.serialized) struct MigrationDirectionTests {
    enum Kind: String, CaseIterable, Sendable {
        case sqlite, xml, binary, postgresql

        var keepsVersions: Bool { self != .xml }

        var type: any PersistentStoreType {
            switch self {
            case .sqlite: SQLiteStoreType()
            case .xml: XMLStoreType()
            case .binary: BinaryStoreType()
            case .postgresql: PostgresStoreType()
            }
        }

        func url(in folder: URL, name: String) throws -> URL {
            switch self {
            case .postgresql:
                try PostgresServer.shared().url(schema: PostgresServer.uniqueSchema(name))
            default:
                folder.appendingPathComponent("\(name).\(rawValue)")
            }
        }
    }

    static let types: [any PersistentStoreType] = Kind.allCases.map(\.type)

    static var directions: [(Kind, Kind)] {
        Kind.allCases.flatMap { from in Kind.allCases.filter { $0 != from }.map { (from, $0) } }
    }

    /// What the source remembers, to find again in the destination.
    struct Remembered {
        var counters: [EntityID: Int64] = [:]
        var versions: [ObjectID: Int64] = [:]
        var uuid: String?
    }

    /// A sample store of `kind` whose last Milestones were deleted (its counter above every key
    /// left), some objects updated twice (version 3), and a custom metadata key.
    func source(_ kind: Kind, in folder: URL) throws -> (URL, Remembered) {
        let url = try kind.url(in: folder, name: "source")
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: Self.types, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        defer { coordinator.close() }
        let model = coordinator.model
        let context = coordinator.newContext()
        try SampleGenerator(objectCount: 200).populate(context)
        try context.save()
        let milestone = model.entityID(named: "Milestone")!
        let employee = model.entityID(named: "Employee")!
        let milestones = try context.objectIDs(of: milestone)
        #expect(milestones.count > 10)
        for id in milestones.suffix(5) { try context.delete(id) }
        try context.setMetadata(.string("carried"), for: "com.example.direction")
        try context.save()
        let updated = Array(try context.objectIDs(of: employee).prefix(3))
        for round in 0..<2 {
            for id in updated { try context.setValue(.string("Round\(round)"), of: "lastName", for: id) }
            try context.save()
        }
        var remembered = Remembered()
        for root in model.rootEntities { remembered.counters[root.id] = try coordinator.store.highestKey(in: root.id) }
        let verify = coordinator.newContext()
        for id in updated { remembered.versions[id] = try verify.version(of: id) }
        remembered.uuid = try coordinator.store.metadata().storeUUID
        let milestoneRoot = model[milestone].rootID
        #expect(
            try remembered.counters[milestoneRoot]! > (context.objectIDs(of: milestone).map(\.key.rawValue).max() ?? 0),
            "the source's counter is above its highest key")
        return (url, remembered)
    }

    @Test(arguments: directions)
    func keyCountersVersionsAndMetadataAreCarried(_ from: Kind, _ to: Kind) throws {
        let folder = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (sourceURL, remembered) = try source(from, in: folder)
        let destinationURL = try to.url(in: folder, name: "destination")
        let source = try PersistentStoreCoordinator.open(
            at: sourceURL, types: Self.types, options: StoreOptions(readOnly: true))
        defer { source.close() }
        try source.migrate(to: destinationURL, type: to.type)
        let destination = try PersistentStoreCoordinator.open(
            at: destinationURL, types: Self.types, options: StoreOptions(readOnly: true))
        defer { destination.close() }
        // Metadata: the custom key and the UUID below (a new SQLite store adds its own _NSAutoVacuumLevel).
        try StoreFixtures.expectSameGraph(source.store, destination.store, metadata: false)
        for (root, counter) in remembered.counters {
            #expect(
                try destination.store.highestKey(in: root) == counter,
                "\(from) → \(to): the key counter of \(source.model[root].name)")
        }
        let context = destination.newContext()
        for (id, version) in remembered.versions {
            let expected = from.keepsVersions && to.keepsVersions ? version : 1
            #expect(try context.version(of: id) == expected, "\(from) → \(to): the version of \(id)")
        }
        let metadata = try destination.store.metadata()
        #expect(metadata["com.example.direction"] == .string("carried"), "\(from) → \(to): metadata")
        #expect(metadata.storeUUID == remembered.uuid, "\(from) → \(to): the store UUID")
        #expect(metadata.storeType == to.type.name)
    }

    /// An app's persistent history goes along into PostgreSQL: the same transactions (numbers,
    /// times, authors) with the same changes (IDs, kinds, objects, updated properties), and no
    /// transaction of the migration's own inserts.
    @Test(arguments: [
        "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite", "alemar11_CoreDataPlus_SampleModel2_V1.sqlite"
    ])
    func historyIsCarriedFromSQLiteIntoPostgreSQL(_ name: String) throws {
        let folder = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent(name)
        for suffix in ["", "-wal"]
        where FileManager.default.fileExists(
            atPath: StoreFixtures.corpus.appendingPathComponent("sqlite/\(name)").path + suffix)
        {
            try FileManager.default.copyItem(
                atPath: StoreFixtures.corpus.appendingPathComponent("sqlite/\(name)").path + suffix,
                toPath: copy.path + suffix)
        }
        let source = try PersistentStoreCoordinator.open(
            at: copy, types: Self.types, options: StoreOptions(readOnly: true))
        defer { source.close() }
        let sqlite = try #require(source.store as? SQLiteStore)
        let expected = try sqlite.persistentHistory()
        #expect(!expected.isEmpty, "the corpus store keeps history")
        let url = try Kind.postgresql.url(in: folder, name: "history")
        try source.migrate(to: url, type: PostgresStoreType())
        let store = try PostgresStore(location: try PostgresLocation(url), model: nil)
        defer { store.close() }
        let carried = try store.persistentHistory()
        #expect(carried.count == expected.count, "transactions: \(carried.count) of \(expected.count)")
        for (a, b) in zip(expected, carried) {
            #expect(
                a.number == b.number && a.timestamp == b.timestamp && a.author == b.author, "transaction \(a.number)")
            #expect(a.changes.count == b.changes.count, "changes of transaction \(a.number)")
            for (x, y) in zip(a.changes, b.changes) where x != y {
                #expect(
                    x.changeID == y.changeID && x.kind == y.kind && x.objectID == y.objectID
                        && x.updatedProperties == y.updatedProperties,
                    "change \(x.changeID): \(x) became \(y)")
            }
        }
    }
}
