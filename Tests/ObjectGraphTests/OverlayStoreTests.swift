import Foundation
import ObjectGraph
import Testing

/// The overlay of evidence mounts: saves show through it and never reach the store below, and
/// its changes, replayed on a copy of that store, give the same graph.
@Suite struct OverlayStoreTests {
    /// A store of the sample company; the same seed gives the same store.
    func company(objects: Int = 300) throws -> GraphStore {
        let store = GraphStore(
            model: SampleModel.make(), metadata: StoreMetadata([StoreMetadata.storeUUIDKey: .string("BASE-UUID")]))
        try SampleGenerator(objectCount: objects).populate(PersistentStoreCoordinator(store: store).newContext())
        return store
    }

    /// Everything a store shows: each object's values and to-one links, every to-many list (of
    /// objects that exist), and the custom metadata; versions left out (a replay counts them anew).
    struct Dump: Equatable {
        var objects: [ObjectID: Snapshot] = [:]
        var lists: [String: [ObjectID]] = [:]
        var metadata: [String: MetadataValue] = [:]
    }

    func dump(_ store: any PersistentStore) throws -> Dump {
        var result = Dump()
        let model = store.model
        var all: [ObjectID] = []
        for entity in model.entities { all += try store.objectIDs(of: entity.id) }
        let existing = Set(all)
        for var snapshot in try store.snapshots(for: all) {
            snapshot.version = 0
            for (name, destination) in snapshot.toOne where !existing.contains(destination) {
                snapshot.toOne[name] = nil
            }
            result.objects[snapshot.objectID] = snapshot
        }
        for entity in model.entities {
            let ids = try store.objectIDs(of: entity.id)
            for relationship in entity.allRelationships where relationship.isToMany {
                let lists = try store.toManyDestinations(of: relationship.name, in: entity.id, for: ids)
                for (source, list) in lists {
                    let kept = list.filter(existing.contains)
                    if !kept.isEmpty {
                        result.lists["\(source) \(relationship.name)"] = relationship.isOrdered ? kept : kept.sorted()
                    }
                }
            }
        }
        result.metadata = try store.metadata().values.filter { !StoreMetadata.managedKeys.contains($0.key) }
        return result
    }

    @Test func savesShowThroughTheOverlayAndNeverReachTheStoreBelow() throws {
        let base = try company()
        let before = try dump(base)
        let overlay = OverlayStore(base: base)
        let context = PersistentStoreCoordinator(store: overlay).newContext()
        let model = context.model
        let employees = try context.objectIDs(of: model.id("Employee"))
        let milestones = try context.objectIDs(of: model.id("Milestone"))
        let target = employees[3]
        try context.setValue(.string("Hopper"), of: "lastName", for: target)
        let added = try context.insertObject(of: model.id("Employee"))
        try context.setValue(.string("Ada"), of: "firstName", for: added)
        try context.setValue(.string("Lovelace"), of: "lastName", for: added)
        try context.delete(milestones[0])
        try context.setMetadata(.string("checked"), for: "examiner")
        try context.save()

        let reader = PersistentStoreCoordinator(store: overlay).newContext()
        #expect(try reader.value(of: "lastName", for: target) == .string("Hopper"))
        #expect(try reader.value(of: "lastName", for: added) == .string("Lovelace"))
        #expect(try !reader.exists(milestones[0]))
        #expect(try overlay.objectIDs(of: model.id("Milestone")) == Array(milestones.dropFirst()))
        #expect(try overlay.count(of: model.id("Milestone")) == milestones.count - 1)
        let baseEmployees = try base.count(of: model.id("Employee"))
        #expect(try overlay.count(of: model.id("Employee")) == baseEmployees + 1)
        #expect(try overlay.metadata()["examiner"] == .string("checked"))
        #expect(try overlay.metadata().storeUUID == "BASE-UUID", "the overlay is the base store, changed")
        let project = try #require(try base.snapshots(for: [milestones[0]]).first?.toOne["project"])
        let list = try overlay.toManyDestinations(of: "milestones", in: project.entity, for: [project])[project] ?? []
        #expect(!list.contains(milestones[0]), "a deleted object leaves the lists that held it")
        #expect(try dump(base) == before, "the store below is as it was")
    }

    @Test func newKeysStartAboveTheHighestKeyTheStoreBelowHandedOut() throws {
        let base = try company()
        let model = base.model
        let root = model[model.id("Employee")].rootID
        // The store's highest key was handed out to an object that is gone since: never reused.
        let writer = PersistentStoreCoordinator(store: base).newContext()
        let last = try #require(try writer.objectIDs(of: model.id("Employee")).max(by: { $0.key < $1.key }))
        let highest = try base.highestKey(in: root)
        #expect(highest >= last.key.rawValue)
        try writer.delete(last)
        try writer.save()

        let overlay = OverlayStore(base: base)
        let context = PersistentStoreCoordinator(store: overlay).newContext()
        let added = try context.insertObject(of: model.id("Employee"))
        #expect(added.key.rawValue == highest + 1)
        #expect(try !overlay.claimKey(PrimaryKey(1), in: root), "a key an object of the store has")
        #expect(
            try overlay.claimKey(last.key, in: root), "a key no object has any more, as the store below would allow")
        #expect(try overlay.claimKey(PrimaryKey(highest + 50), in: root))
        #expect(try overlay.reserveKeys(in: root, count: 1) == [PrimaryKey(highest + 51)], "after the claimed key")
    }

    /// Random edits through a context, saved in rounds; the overlay's changes replayed on a copy
    /// of the store below give what the overlay shows.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func theChangesReplayedOnACopyOfTheStoreBelowGiveWhatTheOverlayShows(seed: UInt64) throws {
        let base = try company()
        let copy = try company()
        #expect(try dump(copy) == dump(base))
        let overlay = OverlayStore(base: base)
        let context = PersistentStoreCoordinator(store: overlay).newContext()
        let model = context.model
        var random = SplitMix64(seed: seed)
        func pick(_ entity: String) throws(ObjectGraphError) -> ObjectID? {
            try context.objectIDs(of: model.id(entity)).randomElement(using: &random)
        }
        for _ in 0..<8 {
            for _ in 0..<12 {
                do throws(ObjectGraphError) {
                    switch Int.random(in: 0..<9, using: &random) {
                    case 0:
                        if let e = try pick("Employee") {
                            try context.setValue(.string("N\(random.next() % 1000)"), of: "firstName", for: e)
                        }
                    case 1:
                        let e = try context.insertObject(of: model.id("Employee"))
                        try context.setValue(.string("New"), of: "lastName", for: e)
                        if let d = try pick("Department") { try context.setDestination(d, of: "department", for: e) }
                    case 2:
                        if let m = try pick("Milestone") { try context.delete(m) }
                    case 3:
                        if let e = try pick("Employee") { try context.delete(e) }
                    case 4:
                        if let e = try pick("Employee"), let p = try pick("Project") {
                            try context.addDestination(p, to: "projects", of: e)
                        }
                    case 5:
                        if let e = try pick("Employee"), let m = try pick("Manager"), e != m {
                            try context.setDestination(m, of: "manager", for: e)
                        }
                    case 6:
                        if let p = try pick("Project") {
                            let m = try context.insertObject(of: model.id("Milestone"))
                            try context.addDestination(m, to: "milestones", of: p, at: 0)
                        }
                    case 7:
                        if let e = try pick("Employee") { try context.setValue(nil, of: "salary", for: e) }
                    default:
                        try context.setMetadata(.integer(Int64(random.next() % 100)), for: "round")
                    }
                } catch {
                    // A Deny rule or a validation refusal: the edit is not made, as in a mount.
                }
            }
            let outcome = context.save(holding: [])
            for id in outcome.failed.keys { _ = context.discardChanges(of: [id]) }
        }
        let shown = try dump(overlay)
        let changes = try overlay.changes()
        #expect(
            !changes.inserted.isEmpty && !changes.updated.isEmpty && !changes.deleted.isEmpty
                && !changes.toManyChanges.isEmpty)
        try copy.save(changes)
        #expect(try dump(copy) == shown, "seed \(seed)")
        let fresh = try company()
        #expect(try dump(base) == dump(fresh), "the store below is as it was")
    }

    @Test func aReplayOnACopyThatDiffersWhereTheOverlayChangedItIsRefusedWhole() throws {
        let base = try company()
        let overlay = OverlayStore(base: base)
        let context = PersistentStoreCoordinator(store: overlay).newContext()
        let model = context.model
        let employees = try context.objectIDs(of: model.id("Employee"))
        try context.setValue(.string("Overlay"), of: "firstName", for: employees[0])
        try context.setValue(.string("Overlay"), of: "firstName", for: employees[1])
        try context.save()

        let other = try company()
        let writer = PersistentStoreCoordinator(store: other).newContext()
        try writer.setValue(.string("Elsewhere"), of: "firstName", for: employees[1])
        try writer.save()
        let before = try dump(other)
        #expect {
            try other.save(try overlay.changes())
        } throws: { error in
            (error as? ObjectGraphError)?.code == .conflict && (error as? ObjectGraphError)?.objects == [employees[1]]
        }
        #expect(try dump(other) == before, "nothing of the refused replay was applied")
    }
}
