import Foundation
import ObjectGraph
import Synchronization
import Testing

/// An in-memory store whose saves wait at a gate the test opens: a save that waits on the
/// network, a lock or a stopped server, as the engine meets it. The gate stands either before
/// the save (nothing written yet) or after it (committed, the answer not back yet), and can
/// make the save fail. Everything else is the real in-memory store's.
final class GatedStore: PersistentStore {
    enum Stage: Sendable { case beforeWriting, afterWriting }

    struct Gate {
        var closed = false
        var stage = Stage.beforeWriting
        var failure: ObjectGraphError?
        var waiting = 0
    }

    let base: GraphStore
    let gate = Mutex(Gate())

    init(model: ManagedObjectModel) { base = GraphStore(model: model) }

    /// Saves from now on wait at `stage` until ``open(failing:)``.
    func close(at stage: Stage) { gate.withLock { $0 = Gate(closed: true, stage: stage) } }

    /// Lets waiting and later saves go, failing with `failure` (before writing anything) if given.
    func open(failing failure: ObjectGraphError? = nil) {
        gate.withLock {
            $0.closed = false
            $0.failure = failure
        }
    }

    /// Waits until a save waits at the gate.
    func waitForSaveAtGate(seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if gate.withLock({ $0.waiting }) > 0 { return true }
            usleep(1000)
        }
        return false
    }

    private func pass(_ stage: Stage) throws(ObjectGraphError) {
        guard gate.withLock({ $0.closed && $0.stage == stage }) else { return }
        gate.withLock { $0.waiting += 1 }
        while gate.withLock({ $0.closed }) { usleep(1000) }
        let failure = gate.withLock { gate -> ObjectGraphError? in
            gate.waiting -= 1
            return gate.failure
        }
        if let failure, stage == .beforeWriting { throw failure }
    }

    var storeType: String { base.storeType }
    var url: URL? { nil }
    var model: ManagedObjectModel { base.model }
    var isReadOnly: Bool { false }
    var requestCount: Int { base.requestCount }
    func metadata() throws(ObjectGraphError) -> StoreMetadata { try base.metadata() }
    func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] { try base.objectIDs(of: entity) }
    func count(of entity: EntityID) throws(ObjectGraphError) -> Int { try base.count(of: entity) }
    func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] { try base.snapshots(for: ids) }
    func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]
    { try base.toManyDestinations(of: relationship, in: entity, for: sources) }
    func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey] {
        try base.reserveKeys(in: root, count: count)
    }
    func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        try base.claimKey(key, in: root)
    }
    func save(_ request: SaveRequest) throws(ObjectGraphError) {
        try pass(.beforeWriting)
        try base.save(request)
        try pass(.afterWriting)
    }
    func externalChangeToken() throws(ObjectGraphError) -> Int64? { nil }
    func close() { base.close() }
}

/// Runs `body` on a thread of its own and says whether it finished within `seconds` (a read
/// that waits for a stalled save would not).
func finishes(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    Thread {
        body()
        done.signal()
    }.start()
    return done.wait(timeout: .now() + seconds) == .success
}

/// Saves run outside the context's locks: while one waits, reads are served from memory and
/// changes go on, and what the save writes and what was changed meanwhile both end up right
/// whether the save commits or fails (ObjectContext+Saving.swift).
@Suite struct SavesInFlightTests {
    let store = GatedStore(model: SampleModel.make())
    let coordinator: PersistentStoreCoordinator
    let employee: EntityID

    init() {
        coordinator = PersistentStoreCoordinator(store: store)
        employee = coordinator.model.entityID(named: "Employee")!
    }

    /// Starts `context.save(holding:)` on a thread; returns a wait for its outcome.
    func saveInBackground(_ context: ObjectContext) -> () -> SaveOutcome? {
        let result = Mutex<SaveOutcome?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let outcome = context.save(holding: [])
            result.withLock { $0 = outcome }
            done.signal()
        }.start()
        return {
            guard done.wait(timeout: .now() + 20) == .success else { return nil }
            return result.withLock { $0 }
        }
    }

    @Test(arguments: [GatedStore.Stage.beforeWriting, .afterWriting])
    func readsAndOtherChangesGoOnWhileASaveWaits(_ stage: GatedStore.Stage) throws {
        let company = try insertSmallCompany(coordinator.newContext(), employees: 4)
        let context = coordinator.newContext()
        let (saved, other) = (company.employees[0], company.employees[1])
        try context.prefetch(company.employees)
        _ = try context.destinations(of: "employees", for: company.department)
        try context.setValue(.string("Saved"), of: "lastName", for: saved)
        let inserted = try context.insertObject(of: employee)
        try context.setValue(.string("New"), of: "lastName", for: inserted)
        try context.setValue(.string("N"), of: "firstName", for: inserted)
        try context.setDestination(company.department, of: "department", for: inserted)

        store.close(at: stage)
        let outcome = saveInBackground(context)
        #expect(store.waitForSaveAtGate(), "the save reached the store")

        // Reads of what the context holds, and of what the save writes, answer at once.
        let reads = finishes(within: 5) {
            #expect(try! context.value(of: "lastName", for: saved) == .string("Saved"))
            #expect(try! context.value(of: "lastName", for: other) == .string("Doe"))
            #expect(try! context.value(of: "lastName", for: inserted) == .string("New"))
            #expect(try! context.destinations(of: "employees", for: company.department).contains(inserted))
            #expect(try! context.destinations(of: "projects", for: inserted) == [])
            let ids = try! context.objectIDs(of: employee)
            #expect(ids.count == 5 && Set(ids).count == 5, "\(ids)")
            #expect(try! context.count(of: employee) == 5)
            #expect(try! context.exists(inserted))
        }
        #expect(reads, "reads waited for the stalled save")

        // Changes go on: to another object, and to the objects in flight.
        let changes = finishes(within: 5) {
            try! context.setValue(.string("Other"), of: "lastName", for: other)
            try! context.setValue(.string("Again"), of: "firstName", for: saved)
            try! context.setValue(.string("Newer"), of: "lastName", for: inserted)
        }
        #expect(changes, "changes waited for the stalled save")

        store.open()
        let result = try #require(outcome())
        #expect(result.storeError == nil && result.failed.isEmpty)
        // What the save wrote is the store's; what changed meanwhile is pending on top of it.
        let fresh = coordinator.newContext()
        coordinator.dropCaches()
        #expect(try fresh.value(of: "lastName", for: saved) == .string("Saved"))
        #expect(try fresh.value(of: "firstName", for: saved) == .string("E0"))
        #expect(try fresh.value(of: "lastName", for: inserted) == .string("New"))
        #expect(try fresh.value(of: "lastName", for: other) == .string("Doe"))
        #expect(context.hasChanges)
        #expect(try context.value(of: "firstName", for: saved) == .string("Again"))
        #expect(context.isInserted(inserted) == false, "the insert is the store's now")

        let second = context.save(holding: [])
        #expect(second.storeError == nil && second.failed.isEmpty && second.conflicts.isEmpty)
        #expect(!context.hasChanges)
        coordinator.dropCaches()
        let last = coordinator.newContext()
        #expect(try last.value(of: "lastName", for: other) == .string("Other"))
        #expect(try last.value(of: "firstName", for: saved) == .string("Again"))
        #expect(try last.value(of: "lastName", for: saved) == .string("Saved"))
        #expect(try last.value(of: "lastName", for: inserted) == .string("Newer"))
        #expect(try last.version(of: inserted) == 2)
        #expect(try last.destinations(of: "employees", for: company.department).contains(inserted))
    }

    @Test func aSaveThatFailsPutsItsChangesBackUnderWhatChangedMeanwhile() throws {
        let company = try insertSmallCompany(coordinator.newContext(), employees: 3)
        let context = coordinator.newContext()
        let (first, second) = (company.employees[0], company.employees[1])
        try context.setValue(.string("One"), of: "lastName", for: first)
        let inserted = try context.insertObject(of: employee)
        try context.setValue(.string("I"), of: "firstName", for: inserted)
        try context.setValue(.string("Inserted"), of: "lastName", for: inserted)
        try context.setDestination(company.manager, of: "manager", for: inserted)
        let doomed = try context.insertObject(of: employee)
        try context.setValue(.string("D"), of: "firstName", for: doomed)
        try context.setValue(.string("Doomed"), of: "lastName", for: doomed)

        store.close(at: .beforeWriting)
        let outcome = saveInBackground(context)
        #expect(store.waitForSaveAtGate())
        let changes = finishes(within: 5) {
            try! context.setValue(.string("E0-changed"), of: "firstName", for: first)
            try! context.setValue(.string("Two"), of: "lastName", for: second)
            try! context.delete(doomed)
        }
        #expect(changes)
        store.open(failing: ObjectGraphError(.io, "the server went away"))
        let result = try #require(outcome())
        #expect(result.storeError?.code == .io)
        #expect(result.saved.isEmpty)

        // Everything is pending again, each change on top of what it was read as.
        #expect(context.isInserted(inserted))
        #expect(!(try context.exists(doomed)), "the insert deleted meanwhile is gone")
        let pending = Dictionary(uniqueKeysWithValues: context.pendingChanges().map { ($0.objectID, $0) })
        #expect(pending[first]?.kind == .updated)
        #expect(pending[first]?.attributes["lastName"] == .some(.string("One")))
        #expect(pending[first]?.attributes["firstName"] == .some(.string("E0-changed")))
        #expect(pending[inserted]?.kind == .inserted)
        #expect(
            pending[doomed] == nil, "nothing of the deleted insert is left: \(pending[doomed].map { "\($0)" } ?? "")")

        let retry = context.save(holding: [])
        #expect(retry.storeError == nil && retry.failed.isEmpty && retry.conflicts.isEmpty)
        coordinator.dropCaches()
        let fresh = coordinator.newContext()
        #expect(try fresh.value(of: "lastName", for: first) == .string("One"))
        #expect(try fresh.value(of: "firstName", for: first) == .string("E0-changed"))
        #expect(try fresh.value(of: "lastName", for: second) == .string("Two"))
        #expect(try fresh.value(of: "lastName", for: inserted) == .string("Inserted"))
        #expect(try fresh.destinations(of: "directReports", for: company.manager).contains(inserted))
        #expect(!(try fresh.exists(doomed)))
        #expect(try fresh.version(of: first) == 2, "one update, not two")
    }

    @Test func anObjectDeletedWhileItsSaveRunsIsDeletedFromTheStoreAfterIt() throws {
        let company = try insertSmallCompany(coordinator.newContext(), employees: 2)
        let context = coordinator.newContext()
        let updated = company.employees[0]
        try context.setValue(.string("Before"), of: "lastName", for: updated)
        let inserted = try context.insertObject(of: employee)
        try context.setValue(.string("I"), of: "firstName", for: inserted)
        try context.setValue(.string("Gone"), of: "lastName", for: inserted)

        store.close(at: .afterWriting)
        let outcome = saveInBackground(context)
        #expect(store.waitForSaveAtGate())
        let deletes = finishes(within: 5) {
            try! context.delete(updated)
            try! context.delete(inserted)
            #expect(!(try! context.objectIDs(of: employee).contains(updated)))
        }
        #expect(deletes)
        store.open()
        #expect(try #require(outcome()).storeError == nil)
        // The deletions expect the versions the save just wrote: no conflict.
        let second = context.save(holding: [])
        #expect(second.conflicts.isEmpty && second.failed.isEmpty && second.storeError == nil)
        coordinator.dropCaches()
        let ids = try coordinator.newContext().objectIDs(of: employee)
        #expect(!ids.contains(updated) && !ids.contains(inserted))
        #expect(try coordinator.newContext().destinations(of: "employees", for: company.department).count == 1)
    }

    @Test func aListingReadWhileSavesFinishShowsEveryObjectOnce() throws {
        let context = coordinator.newContext()
        var inserted: [ObjectID] = []
        for round in 0..<20 {
            let id = try context.insertObject(of: employee)
            try context.setValue(.string("R\(round)"), of: "firstName", for: id)
            try context.setValue(.string("L"), of: "lastName", for: id)
            inserted.append(id)
            let expected = inserted.sorted { $0.key < $1.key }
            let reader = finishes(within: 5) {
                for _ in 0..<5 {
                    let ids = try! context.objectIDs(of: employee)
                    #expect(ids == expected, "round \(round): \(ids.count) listed")
                }
            }
            let saved = context.save(holding: [])
            #expect(saved.storeError == nil)
            #expect(reader)
        }
    }
}
