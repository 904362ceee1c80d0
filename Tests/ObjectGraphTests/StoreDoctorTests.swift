import Foundation
import ObjectGraph
import Testing

/// `StoreDoctor` on a store that cannot name its orphans itself (an in-memory graph store, as the
/// atomic stores are), without a kernel: every kind of value that breaks a model, dangling
/// references found among the objects, unowned parts, and the repairs as saves.
@Suite struct StoreDoctorTests {
    /// Boxes own their parts (Cascade) and hold 2 to 3 of them; a part's size is 1 to 10.
    static func model() throws -> ManagedObjectModel {
        let box = EntityDescription(
            name: "Box", attributes: [.init(name: "label", type: .string, isOptional: false)],
            relationships: [
                .init(
                    name: "parts", destinationEntityName: "Part", inverseName: "box", isToMany: true, minCount: 2,
                    maxCount: 3, deleteRule: .cascade)
            ])
        let part = EntityDescription(
            name: "Part",
            attributes: [.init(name: "size", type: .integer16, minValue: .integer(1), maxValue: .integer(10))],
            relationships: [.init(name: "box", destinationEntityName: "Box", inverseName: "parts")])
        return try ManagedObjectModel(
            entities: [box, part], fetchRequestTemplates: [], configurations: [], versionIdentifier: nil)
    }

    /// A store whose objects were written by something that skipped the model's rules.
    static func rottenStore() throws -> (PersistentStoreCoordinator, ManagedObjectModel) {
        let model = try model()
        let store = GraphStore(model: model)
        let box = model.entityID(named: "Box")!
        let part = model.entityID(named: "Part")!
        func b(_ key: Int64) -> ObjectID { ObjectID(entity: box, key: PrimaryKey(key)) }
        func p(_ key: Int64) -> ObjectID { ObjectID(entity: part, key: PrimaryKey(key)) }
        var request = SaveRequest()
        request.inserted = [
            Snapshot(objectID: b(1), version: 1, attributes: ["label": .string("A")]),
            // No label (not optional), one part (at least two).
            Snapshot(objectID: b(2), version: 1),
            Snapshot(objectID: p(1), version: 1, attributes: ["size": .integer(5)], toOne: ["box": b(1)]),
            Snapshot(objectID: p(2), version: 1, attributes: ["size": .integer(11)], toOne: ["box": b(1)]),
            Snapshot(objectID: p(3), version: 1, attributes: ["size": .integer(2)], toOne: ["box": b(2)]),
            // Its box's cascade never ran.
            Snapshot(objectID: p(4), version: 1, attributes: ["size": .integer(2)]),
            // A box that does not exist.
            Snapshot(objectID: p(5), version: 1, attributes: ["size": .integer(2)], toOne: ["box": b(99)])
        ]
        request.toManyChanges = [
            // A member that does not exist.
            .init(source: b(1), relationship: "parts", destinations: [p(1), p(2), p(77)]),
            .init(source: b(2), relationship: "parts", destinations: [p(3)])
        ]
        try store.save(request)
        return (PersistentStoreCoordinator(store: store), model)
    }

    @Test func everyKindOfFindingIsCountedWithItsExamples() throws {
        let (coordinator, _) = try Self.rottenStore()
        let report = try StoreDoctor(coordinator: coordinator).examine()
        #expect(report.objects == ["Box": 2, "Part": 5])
        let problems = Set(report.violations.problems.map { "\($0.entity).\($0.property) \($0.kind) \($0.examples)" })
        #expect(problems == ["Box.label nil [2]", "Box.parts count [2]", "Part.size range [2]"])
        let orphans = report.examination.orphans
        #expect(orphans.toOne.map { "\($0.entity).\($0.relationship) \($0.examples)" } == ["Part.box [5]"])
        #expect(orphans.toMany.map { "\($0.entity).\($0.relationship) \($0.examples)" } == ["Box.parts [1]"])
        #expect(orphans.unowned.map { "\($0.entity).\($0.relationship) \($0.examples)" } == ["Part.box [4]"])
        #expect(report.findings().count == 4, "\(report.findings())")
        #expect(report.examination.integrity.isOK)
    }

    @Test func theRepairNullifiesRemovesAndDeletesTheUnownedThroughSaves() throws {
        let (coordinator, model) = try Self.rottenStore()
        var options = RepairOptions()
        options.deleteUnowned = true
        let result = try StoreDoctor(coordinator: coordinator).repair(options)
        #expect(result.toOnesNullified == 1)
        #expect(result.membersRemoved == 1)
        // p4, and p5 once its dangling box is nil.
        #expect(result.unownedDeleted == 2)
        let part = model.entityID(named: "Part")!
        let box = model.entityID(named: "Box")!
        #expect(try coordinator.store.objectIDs(of: part).map(\.key.rawValue) == [1, 2, 3])
        let parts = try coordinator.store.toManyDestinations(
            of: "parts", in: box, for: [ObjectID(entity: box, key: PrimaryKey(1))])
        #expect(parts.values.first?.map(\.key.rawValue) == [1, 2])
        let after = try StoreDoctor(coordinator: coordinator).examine()
        #expect(after.examination.orphans.toOneCount == 0 && after.examination.orphans.toManyCount == 0)
        #expect(after.examination.orphans.unownedCount == 0)
        #expect(after.violations.total == 3, "values that break the model are left as they are")
    }

    @Test func cutoffsReadAsTransactionsAndDates() {
        #expect(HistoryCutoff("t42") == .transaction(42))
        #expect(HistoryCutoff("t0") == nil && HistoryCutoff("t-1") == nil && HistoryCutoff("42") == nil)
        #expect(HistoryCutoff("2026-01-31") == .date(ISO8601DateText.date(from: "2026-01-31T00:00:00Z")!))
        #expect(HistoryCutoff("2026-01-31T12:00:00Z") != nil)
        #expect(HistoryCutoff("yesterday") == nil && HistoryCutoff("") == nil)
    }
}
