import Foundation
import ObjectGraph
import SQLiteStore
import Testing

/// The sample goes to stores as save requests the generator builds itself: the same graph however
/// many saves it is cut into, and one save of an atomic store (whose every save rewrites it whole).
@Suite struct SampleGeneratorTests {
    func sqliteSample(in directory: URL, _ name: String, unitsPerSave: Int) throws -> PersistentStoreCoordinator {
        let coordinator = try PersistentStoreCoordinator.open(
            at: directory.appendingPathComponent(name), types: [SQLiteStoreType()], model: SampleModel.make(),
            options: StoreOptions(createIfMissing: true))
        var generator = SampleGenerator(objectCount: 2_000)
        generator.unitsPerSave = unitsPerSave
        try generator.populate(coordinator.store)
        return coordinator
    }

    func entity(_ model: ManagedObjectModel, _ name: String) throws -> EntityID {
        try #require(model.entityID(named: name))
    }

    /// The company the sample describes, read back from `store`: every unit's shape, and both
    /// sides of every relationship agreeing.
    func expectCompany(_ store: any PersistentStore, units: Int, _ what: String) throws {
        let model = store.model
        func all(_ name: String) throws -> [ObjectID: Snapshot] {
            let ids = try store.objectIDs(of: try entity(model, name))
            return Dictionary(uniqueKeysWithValues: try store.snapshots(for: ids).map { ($0.objectID, $0) })
        }
        func lists(_ relationship: String, of objects: [ObjectID: Snapshot], in name: String) throws -> [ObjectID:
            [ObjectID]]
        {
            try store.toManyDestinations(of: relationship, in: try entity(model, name), for: Array(objects.keys))
        }
        let departments = try all("Department")
        let managers = try all("Manager")
        let employees = try all("Employee")
        let projects = try all("Project")
        let milestones = try all("Milestone")
        let counts: [Int] = [departments.count, managers.count, employees.count, projects.count, milestones.count]
        let expected: [Int] = [units, units * 5, units * 80, units * 4, units * 10]
        #expect(counts == expected, "\(what): objects per entity")
        let people = employees.merging(managers) { a, _ in a }
        let staff = try lists("employees", of: departments, in: "Department")
        let departmentProjects = try lists("projects", of: departments, in: "Department")
        for (id, department) in departments {
            #expect(staff[id]?.count == 85, "\(what): \(id) has its 5 managers and 80 employees")
            #expect(staff[id]?.allSatisfy { people[$0]?.toOne["department"] == id } == true, "\(what): \(id) staff")
            #expect(departmentProjects[id]?.allSatisfy { projects[$0]?.toOne["department"] == id } == true)
            let head = try #require(department.toOne["head"])
            #expect(managers[head]?.toOne["headOf"] == id, "\(what): \(id)'s head is head of it")
        }
        let reports = try lists("directReports", of: managers, in: "Manager")
        #expect(
            reports.values.reduce(0) { $0 + $1.count } == units * 84,
            "\(what): everyone but the heads reports to someone")
        for (id, list) in reports {
            #expect(list.allSatisfy { people[$0]?.toOne["manager"] == id }, "\(what): \(id)'s reports name it")
            #expect(list == list.sorted(), "\(what): \(id)'s reports in the order they were added")
        }
        let members = try lists("members", of: projects, in: "Project")
        let memberships = try lists("projects", of: employees, in: "Employee")
        for (id, list) in members {
            #expect(list.allSatisfy { memberships[$0]?.contains(id) == true }, "\(what): \(id)'s members name it")
        }
        #expect(
            members.values.reduce(0) { $0 + $1.count } == memberships.values.reduce(0) { $0 + $1.count },
            "\(what): both sides of Employee.projects hold the same pairs")
        let steps = try lists("milestones", of: projects, in: "Project")
        #expect(steps.values.reduce(0) { $0 + $1.count } == milestones.count)
        for (id, list) in steps { #expect(list.allSatisfy { milestones[$0]?.toOne["project"] == id }) }
    }

    @Test func theSampleIsTheSameCompanyWhateverSavesItIsCutInto() throws {
        let directory = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let unitBySave = try sqliteSample(in: directory, "PerUnit.sqlite", unitsPerSave: 1)
        let oneSave = try sqliteSample(in: directory, "Whole.sqlite", unitsPerSave: 100)
        defer { [unitBySave, oneSave].forEach { $0.close() } }
        try expectCompany(unitBySave.store, units: 20, "a save per unit")
        try expectCompany(oneSave.store, units: 20, "one save")
        let memory = GraphStore(model: SampleModel.make())
        try SampleGenerator(objectCount: 2_000).populate(memory)
        try expectCompany(memory, units: 20, "in memory")
        // Keys are handed out per save, so only one cut gives the same keys in every store type.
        try StoreFixtures.expectSameGraph(oneSave.store, memory, metadata: false)
    }

    @Test func anAtomicStoreGetsTheWholeSampleInOneSave() throws {
        let store = GraphStore(model: SampleModel.make())
        var generator = SampleGenerator(objectCount: 2_000)
        generator.unitsPerSave = 1
        let before = store.requestCount
        try generator.populate(store)
        // One batch: five key reservations (one per entity) and one save; a save per unit would be 120.
        #expect(store.requestCount - before == 6)
        #expect(try store.count(of: try entity(store.model, "Milestone")) == 200)
    }
}
