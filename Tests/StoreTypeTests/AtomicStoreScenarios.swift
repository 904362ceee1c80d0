import Foundation
import ObjectGraph
import Testing

/// Scenarios every atomic store type must pass; XMLStoreTests and BinaryStoreTests run them.
enum AtomicStoreScenarios {
    static func create(_ type: any PersistentStoreType, at url: URL, model: ManagedObjectModel = SampleModel.make())
        throws -> any PersistentStore
    {
        try type.open(
            at: url, model: model, options: StoreOptions(createIfMissing: true),
            initialMetadata: StoreMetadata(["Custom": .string("kept"), "Build": .integer(591)]))
    }

    /// Sample graph → file → reopen with the model and without it → the same graph.
    static func sampleRoundTrip(_ type: any PersistentStoreType, objects: Int = 1000) throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("sample.\(type.fileExtensions[0])")
        let source = try StoreFixtures.sampleStore(objects: objects)
        let store = try create(type, at: url)
        try StoreFixtures.copyGraph(from: source, to: store)
        try StoreFixtures.expectSameGraph(source, store, metadata: false)
        #expect(try store.metadata().storeType == type.name)
        #expect(try store.metadata()["Custom"] == .string("kept"))

        let withModel = try type.open(
            at: url, model: SampleModel.make(), options: StoreOptions(), initialMetadata: StoreMetadata())
        try StoreFixtures.expectSameGraph(store, withModel)
        let withoutModel = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        #expect(withoutModel.model.entities.map(\.name) == SampleModel.make().entities.map(\.name))
        try StoreFixtures.expectSameGraph(store, withoutModel)
        #expect(try withoutModel.metadata().storeUUID == store.metadata().storeUUID)
        #expect(try type.metadata(at: url) == store.metadata())

        // Keys handed out survive a reopen: the next key is above every key ever used.
        let person = withoutModel.model.entityID(named: "Person")!
        let maxPerson = try withoutModel.model.entityAndSubentities(of: person).flatMap {
            try withoutModel.objectIDs(of: $0)
        }
        .map(\.key).max()!
        #expect(try withoutModel.reserveKeys(in: person, count: 1) == [PrimaryKey(maxPerson.rawValue + 1)])

        // The graph also goes through the engine: a context reads and saves it.
        let coordinator = PersistentStoreCoordinator(store: withoutModel)
        let context = coordinator.newContext()
        let department = try #require(
            try withoutModel.objectIDs(of: withoutModel.model.entityID(named: "Department")!).first)
        try context.setValue(.string("Renamed <&>"), of: "name", for: department)
        try context.save()
        let reopened = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        #expect(try reopened.snapshots(for: [department]).first?.attributes["name"] == .string("Renamed <&>"))
        try StoreFixtures.expectSameGraph(withoutModel, reopened)
    }

    /// Awkward values round-trip bit for bit.
    static func awkwardValues(_ type: any PersistentStoreType) throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("awkward.\(type.fileExtensions[0])")
        let store = try create(type, at: url)
        try store.save(StoreFixtures.awkwardSave(model: store.model))
        let reopened = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        try StoreFixtures.expectSameGraph(store, reopened)
        let employee = reopened.model.entityID(named: "Employee")!
        let first = try #require(try reopened.snapshots(for: [ObjectID(entity: employee, key: PrimaryKey(2))]).first)
        #expect(first.attributes["hoursPerWeek"].map { if case .double(let d) = $0 { d.isNaN } else { false } } == true)
        #expect(first.attributes["firstName"] == .string("line1\nline2\r\nline3\rend"))
    }

    /// A save that cannot be written (disk full) throws .io, leaves the old file byte for byte
    /// and no temporary file, and leaves the open store's graph as it was.
    static func fullDisk(_ type: any PersistentStoreType) throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let mountPoint = dir.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        try #require(try StoreFixtures.run("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mountPoint.path) == 0)
        defer { _ = try? StoreFixtures.run("umount", mountPoint.path) }
        let url = mountPoint.appendingPathComponent("store.\(type.fileExtensions[0])")
        let store = try create(type, at: url)
        let before = try Data(contentsOf: url)
        let filesBefore = try StoreFixtures.files(in: mountPoint)

        var request = SaveRequest()
        let department = store.model.entityID(named: "Department")!
        request.inserted = [
            Snapshot(
                objectID: ObjectID(entity: department, key: PrimaryKey(1)), version: 1,
                attributes: ["name": .string(String(repeating: "x", count: 400_000))])
        ]
        // A full disk is said as such (ENOSPC to a mount's writer), not as any i/o error.
        StoreFixtures.expectError(.noSpace, mentioning: url.path) { try store.save(request) }
        #expect(try Data(contentsOf: url) == before)
        #expect(try StoreFixtures.files(in: mountPoint) == filesBefore)
        #expect(try store.count(of: department) == 0)

        // A small save still works afterwards.
        request.inserted[0].attributes["name"] = .string("small")
        try store.save(request)
        #expect(try store.count(of: department) == 1)
        let reopened = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        #expect(try reopened.count(of: department) == 1)
    }

    /// Read-only stores refuse saves and never touch the file; an update whose changed property
    /// no longer holds the value it read gives .conflict.
    static func readOnlyAndConflict(_ type: any PersistentStoreType) throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("s.\(type.fileExtensions[0])")
        let store = try create(type, at: url)
        try StoreFixtures.copyGraph(from: try StoreFixtures.sampleStore(objects: 100), to: store)
        let before = try Data(contentsOf: url)

        let readOnly = try type.open(
            at: url, model: nil, options: StoreOptions(readOnly: true), initialMetadata: StoreMetadata())
        #expect(readOnly.isReadOnly)
        let department = readOnly.model.entityID(named: "Department")!
        let original = try #require(try readOnly.snapshots(for: readOnly.objectIDs(of: department)).first)
        var snapshot = original
        snapshot.attributes["name"] = .string("changed")
        var update = SaveRequest()
        update.updated = [SaveRequest.Update(snapshot: snapshot, original: original)]
        StoreFixtures.expectError(.readOnly, mentioning: url.path) { try readOnly.save(update) }
        #expect(try Data(contentsOf: url) == before)

        let requestsBefore = store.requestCount
        var misread = original
        misread.attributes["name"] = .string("not what the store holds")
        var conflicting = SaveRequest()
        conflicting.updated = [SaveRequest.Update(snapshot: snapshot, original: misread)]
        StoreFixtures.expectError(.conflict, mentioning: "Department") { try store.save(conflicting) }
        #expect(try Data(contentsOf: url) == before)
        #expect(store.requestCount == requestsBefore + 1)

        try store.save(update)
        #expect(try Data(contentsOf: url) != before)
        // What was read before that save is now stale: the name no longer holds it.
        var again = update
        again.updated[0].snapshot.attributes["name"] = .string("changed again")
        StoreFixtures.expectError(.conflict, mentioning: "changed by another save") { try store.save(again) }
        #expect(try store.snapshots(for: [snapshot.objectID]).first?.version == snapshot.version + 1)
        #expect(try store.externalChangeToken() != nil)
    }

    /// Every listed damage gives .corruptStore naming the file.
    static func expectCorrupt(
        _ type: any PersistentStoreType, _ data: Data, model: ManagedObjectModel? = SampleModel.make(),
        mentioning: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("bad.\(type.fileExtensions[0])")
        try data.write(to: url)
        StoreFixtures.expectError(.corruptStore, mentioning: url.path, sourceLocation: sourceLocation) {
            _ = try type.open(at: url, model: model, options: StoreOptions(), initialMetadata: StoreMetadata())
        }
        if !mentioning.isEmpty {
            StoreFixtures.expectError(.corruptStore, mentioning: mentioning, sourceLocation: sourceLocation) {
                _ = try type.open(at: url, model: model, options: StoreOptions(), initialMetadata: StoreMetadata())
            }
        }
    }

    /// A small valid store file's bytes.
    static func smallStoreBytes(_ type: any PersistentStoreType) throws -> Data {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("small.\(type.fileExtensions[0])")
        let store = try create(type, at: url)
        try StoreFixtures.copyGraph(from: try StoreFixtures.sampleStore(objects: 100), to: store)
        return try Data(contentsOf: url)
    }
}
