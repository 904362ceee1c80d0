import Foundation
import ObjectGraph
import Testing

/// A change is checked for what it sets, not refused for values it leaves as they were (apps
/// break their own models: Photos leaves non-optional attributes nil), and never makes a store
/// less valid: what it changes through inverses is checked too. A write taken back leaves
/// nothing pending.
@Suite struct ChangeValidationTests {
    /// Owners and pets: an owner's name is mandatory and an owner has at least one pet; a pet
    /// has a mandatory name and owner.
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Owner",
                attributes: [
                    AttributeDescription(name: "name", type: .string, isOptional: false),
                    AttributeDescription(name: "city", type: .string)
                ],
                relationships: [
                    RelationshipDescription(
                        name: "pets", destinationEntityName: "Pet", inverseName: "owner", isToMany: true, minCount: 1)
                ]),
            EntityDescription(
                name: "Pet",
                attributes: [AttributeDescription(name: "name", type: .string, isOptional: false)],
                relationships: [
                    RelationshipDescription(
                        name: "owner", destinationEntityName: "Owner", inverseName: "pets", isOptional: false)
                ])
        ])
    }

    /// A store as an app that broke the model left it: owner p1 has no name (mandatory), and
    /// owns pets p1 and p2; owner p2 ("Ann") owns pet p3.
    static func brokenStore() throws -> (PersistentStoreCoordinator, owner: EntityID, pet: EntityID) {
        let model = try model()
        let store = GraphStore(model: model)
        let (owner, pet) = (model.entityID(named: "Owner")!, model.entityID(named: "Pet")!)
        func id(_ entity: EntityID, _ key: Int64) -> ObjectID { ObjectID(entity: entity, key: PrimaryKey(key)) }
        var request = SaveRequest()
        request.inserted = [
            Snapshot(objectID: id(owner, 1), version: 1),
            Snapshot(objectID: id(owner, 2), version: 1, attributes: ["name": .string("Ann")]),
            Snapshot(
                objectID: id(pet, 1), version: 1, attributes: ["name": .string("Rex")], toOne: ["owner": id(owner, 1)]),
            Snapshot(
                objectID: id(pet, 2), version: 1, attributes: ["name": .string("Tom")], toOne: ["owner": id(owner, 1)]),
            Snapshot(
                objectID: id(pet, 3), version: 1, attributes: ["name": .string("Kit")], toOne: ["owner": id(owner, 2)])
        ]
        request.toManyChanges = [
            .init(source: id(owner, 1), relationship: "pets", destinations: [id(pet, 1), id(pet, 2)]),
            .init(source: id(owner, 2), relationship: "pets", destinations: [id(pet, 3)])
        ]
        try store.save(request)
        return (PersistentStoreCoordinator(store: store), owner, pet)
    }

    @Test func anEditIsNotRefusedForAValueItDidNotTouch() throws {
        let (coordinator, owner, _) = try Self.brokenStore()
        let context = coordinator.newContext()
        let nameless = ObjectID(entity: owner, key: PrimaryKey(1))
        try context.setValue(.string("Paris"), of: "city", for: nameless)
        let outcome = context.save(holding: [])
        #expect(outcome.failed.isEmpty, "\(outcome.failed)")
        #expect(outcome.saved == [nameless])
        let violations = try #require(outcome.untouchedViolations[nameless])
        #expect(violations.contains { $0.contains("name is not optional") }, "reported for a warning: \(violations)")
        #expect(try coordinator.newContext().value(of: "city", for: nameless) == .string("Paris"))
        #expect(try coordinator.newContext().value(of: "name", for: nameless) == nil, "left as it was")
        // The throwing save takes the same rule.
        try context.setValue(.string("Lyon"), of: "city", for: nameless)
        try context.save()
    }

    @Test func whatTheChangeSetsIsChecked() throws {
        let (coordinator, owner, pet) = try Self.brokenStore()
        let context = coordinator.newContext()
        let nameless = ObjectID(entity: owner, key: PrimaryKey(1))
        #expect(throws: ObjectGraphError.self) { try context.setValue(nil, of: "name", for: nameless) }
        // An insert checks every value.
        let inserted = try context.insertObject(of: pet)
        try context.setDestination(nameless, of: "owner", for: inserted)
        let outcome = context.save(holding: [])
        #expect(outcome.failed[inserted]?.message.contains("name") == true, "\(outcome.failed)")
        #expect(outcome.untouchedViolations.isEmpty)
    }

    /// Moving Kit to another owner leaves Ann without pets: the inverse's change is the change's
    /// too, and is refused.
    @Test func whatTheChangeAffectsThroughAnInverseIsChecked() throws {
        let (coordinator, owner, pet) = try Self.brokenStore()
        let context = coordinator.newContext()
        let kit = ObjectID(entity: pet, key: PrimaryKey(3))
        let ann = ObjectID(entity: owner, key: PrimaryKey(2))
        try context.setDestination(ObjectID(entity: owner, key: PrimaryKey(1)), of: "owner", for: kit)
        let outcome = context.save(holding: [])
        #expect(outcome.saved.isEmpty)
        #expect(outcome.failed[ann]?.message.contains("pets needs at least 1") == true, "\(outcome.failed)")
        #expect(try coordinator.newContext().destination(of: "owner", for: kit) == ann, "nothing was saved")
    }

    /// A write taken back (fsync reported it not saved) that was the object's only change leaves
    /// nothing pending: no failure to show, nothing for a recovery file.
    @Test func aWriteTakenBackLeavesNothingPending() throws {
        let (coordinator, owner, pet) = try Self.brokenStore()
        let context = coordinator.newContext()
        let rex = ObjectID(entity: pet, key: PrimaryKey(1))
        try context.setValue(.string("Max"), of: "name", for: rex)
        context.revert("name", of: rex, ifStill: .string("Max"))
        #expect(!context.hasChanges)
        #expect(context.pendingChanges().isEmpty)
        #expect(context.pendingChange(of: rex) == nil)
        // One of two changes taken back: the other stays.
        let ann = ObjectID(entity: owner, key: PrimaryKey(2))
        try context.setValue(.string("Max"), of: "name", for: rex)
        try context.setValue(.string("Nice"), of: "city", for: ann)
        context.revert("name", of: rex, ifStill: .string("Max"))
        #expect(context.pendingChanges().map(\.objectID) == [ann])
    }
}
