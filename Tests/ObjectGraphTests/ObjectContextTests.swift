import Foundation
import ObjectGraph
import Testing

@Suite struct ObjectContextTests {
    @Test func fetchingTheSameRecordTwiceGivesTheSameObject() throws {
        let coordinator = makeSampleCoordinator()
        let company = try insertSmallCompany(coordinator.newContext())
        let context = coordinator.newContext()
        let first = context.object(with: company.employees[0])
        let fetched = try context.fetch(context.model.id("Employee"))
        let again = try #require(fetched.first { $0.objectID == company.employees[0] })
        #expect(first === again)
        #expect(context.object(with: company.employees[1]) !== first)
    }

    @Test func faultsFireOnFirstAccess() throws {
        let coordinator = makeSampleCoordinator()
        let company = try insertSmallCompany(coordinator.newContext())
        coordinator.dropCaches()
        let context = coordinator.newContext()
        let object = context.object(with: company.employees[0])
        #expect(object.isFault)
        let before = coordinator.store.requestCount
        #expect(try object.value(of: "firstName") == .string("E0"))
        #expect(coordinator.store.requestCount == before + 1)
        #expect(!object.isFault)
        #expect(try object.value(of: "firstName") == .string("E0"))
        #expect(coordinator.store.requestCount == before + 1, "a fired fault is served from memory")
    }

    @Test func batchFaultingCostsOneRequestPerBatch() throws {
        let coordinator = makeSampleCoordinator(configuration: EngineConfiguration(batchSize: 100))
        let writer = coordinator.newContext()
        try SampleGenerator(objectCount: 1_000).populate(writer)
        coordinator.dropCaches()
        let context = coordinator.newContext()
        let ids = try context.objectIDs(of: context.model.id("Employee"))
        #expect(ids.count == 800)
        let before = coordinator.store.requestCount
        try context.prefetch(ids)
        for id in ids { _ = try context.value(of: "lastName", for: id) }
        let requests = coordinator.store.requestCount - before
        #expect(requests <= (ids.count + 99) / 100 + 1, "\(requests) store requests for \(ids.count) faults")
        #expect(context.faultsFired == ids.count)
    }

    /// Walking objects in key order and reading a to-many of each (what `find` and `cp -R` do after
    /// listing a directory): the to-many faults fire in batches too, both for objects whose rows
    /// were read ahead by a single fault and for objects of a listing longer than the batches the
    /// context remembers.
    @Test func toManyFaultsFireInBatchesWhenObjectsAreWalkedInKeyOrder() throws {
        let coordinator = makeSampleCoordinator(configuration: EngineConfiguration(batchSize: 10))
        try SampleGenerator(objectCount: 1_000).populate(coordinator.newContext())
        coordinator.dropCaches()
        let context = coordinator.newContext()
        let ids = try context.objectIDs(of: context.model.id("Employee"))
        #expect(ids.count == 800)
        // Rows read ahead by single faults (no listing first).
        var before = coordinator.store.requestCount
        for id in ids { _ = try context.destinations(of: "projects", for: id) }
        var requests = coordinator.store.requestCount - before
        #expect(
            requests <= 2 * (ids.count / 10) + 4, "\(requests) store requests for rows and projects of \(ids.count)")

        // A listing of 80 batches, more than the 64 the context remembers.
        coordinator.dropCaches()
        let walker = coordinator.newContext()
        try walker.prefetch(ids)
        before = coordinator.store.requestCount
        for id in ids { _ = try walker.destinations(of: "projects", for: id) }
        requests = coordinator.store.requestCount - before
        #expect(requests <= ids.count / 10 + 2, "\(requests) store requests for the projects of \(ids.count)")
    }

    @Test func anEntityWithSubentitiesListsEveryObjectByKeyWithUnsavedChanges() throws {
        let coordinator = makeSampleCoordinator()
        try SampleGenerator(objectCount: 1_000).populate(coordinator.newContext())
        let context = coordinator.newContext()
        let model = context.model
        let family = model.entityAndSubentities(of: model.id("Person"))
        let saved = try family.flatMap { try context.objectIDs(of: $0) }
        // Employees and managers share one table's keys: the store lists each entity apart.
        #expect(Set(saved.map(\.entity)).count >= 2, "Person's objects are of several entities")
        let gone = [saved[3], saved[500]]
        for id in gone { try context.delete(id) }
        let manager = try context.insertObject(of: model.id("Manager"))
        let employee = try context.insertObject(of: model.id("Employee"))

        let listed = try context.objectIDs(of: model.id("Person"), includingSubentities: true)

        let expected = (saved.filter { !gone.contains($0) } + [manager, employee]).sorted { $0.key < $1.key }
        #expect(listed == expected)
        #expect(listed.count == saved.count)
    }

    @Test func theRowCacheLimitTurnsOldObjectsBackIntoFaults() throws {
        let coordinator = makeSampleCoordinator(
            configuration: EngineConfiguration(batchSize: 100, rowCacheLimit: 64 << 10))
        try SampleGenerator(objectCount: 2_000).populate(coordinator.newContext())
        coordinator.dropCaches()
        let context = coordinator.newContext()
        let ids = try context.objectIDs(of: context.model.id("Employee"))
        try context.prefetch(ids)
        let stats = coordinator.rowCache.statistics
        #expect(stats.bytes <= 64 << 10)
        #expect(stats.snapshots < ids.count)
        #expect(context.object(with: ids[0]).isFault, "the first objects read were evicted")
        #expect(try context.value(of: "employeeID", for: ids[0]) != nil, "and fire again when read")
    }

    @Test func secondConflictingSaveFailsAndTheFirstValueSurvives() throws {
        let coordinator = makeSampleCoordinator()
        let company = try insertSmallCompany(coordinator.newContext())
        let a = coordinator.newContext()
        let b = coordinator.newContext()
        let id = company.employees[0]
        _ = try a.value(of: "firstName", for: id)
        _ = try b.value(of: "firstName", for: id)
        try a.setValue(.string("Alice"), of: "firstName", for: id)
        try b.setValue(.string("Bob"), of: "firstName", for: id)
        try a.save()
        let error = #expect(throws: ObjectGraphError.self) { try b.save() }
        #expect(error?.code == .conflict)
        coordinator.dropCaches()
        #expect(try coordinator.newContext().value(of: "firstName", for: id) == .string("Alice"))
    }

    @Test func inversesStayConsistent() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        let company = try insertSmallCompany(context)
        let model = context.model
        #expect(Set(try context.destinations(of: "employees", for: company.department)) == Set(company.employees))
        #expect(try context.destinations(of: "directReports", for: company.manager) == company.employees)

        // Moving an employee to another department removes it from the first.
        let other = try context.insertObject(of: model.id("Department"))
        try context.setDestination(other, of: "department", for: company.employees[0])
        #expect(try context.destinations(of: "employees", for: other) == [company.employees[0]])
        #expect(!(try context.destinations(of: "employees", for: company.department)).contains(company.employees[0]))

        // One-to-one: making a second manager head of the department takes it from the first.
        try context.setDestination(company.manager, of: "head", for: company.department)
        #expect(try context.destination(of: "headOf", for: company.manager) == company.department)
        let second = try context.insertObject(of: model.id("Manager"))
        try context.setValue(.string("Liskov"), of: "lastName", for: second)
        try context.setDestination(second, of: "head", for: company.department)
        #expect(try context.destination(of: "headOf", for: company.manager) == nil)
        #expect(try context.destination(of: "headOf", for: second) == company.department)

        // Many-to-many: both sides.
        let project = try context.insertObject(of: model.id("Project"))
        try context.setDestinations([company.employees[1], company.employees[2]], of: "members", for: project)
        #expect(try context.destinations(of: "projects", for: company.employees[1]) == [project])
        try context.removeDestination(project, from: "projects", of: company.employees[1])
        #expect(try context.destinations(of: "members", for: project) == [company.employees[2]])

        // Ordered: the order set is the order read, after a save and with a cold cache.
        let reversed = Array(company.employees.reversed())
        try context.setDestinations(reversed, of: "directReports", for: company.manager)
        try context.save()
        coordinator.dropCaches()
        let fresh = coordinator.newContext()
        #expect(try fresh.destinations(of: "directReports", for: company.manager) == reversed)
        #expect(try fresh.destination(of: "manager", for: reversed[0]) == company.manager)
    }

    @Test func denyRefusesWithAClearErrorAndChangesNothing() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        let company = try insertSmallCompany(context)
        let error = #expect(throws: ObjectGraphError.self) { try context.delete(company.department) }
        #expect(error?.code == .deleteDenied)
        #expect(error?.message.contains("employees") == true)
        #expect(!context.hasChanges)
        #expect(try context.exists(company.department))
    }

    @Test func cascadeDeletesDestinationsAndNullifyClearsInverses() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        let model = context.model
        let department = try context.insertObject(of: model.id("Department"))
        let project = try context.insertObject(of: model.id("Project"))
        let milestone = try context.insertObject(of: model.id("Milestone"))
        try context.setDestination(department, of: "department", for: project)
        try context.setDestination(project, of: "project", for: milestone)
        let member = try context.insertObject(of: model.id("Employee"))
        try context.setValue(.string("Kay"), of: "lastName", for: member)
        try context.setDestinations([member], of: "members", for: project)
        try context.save()

        try context.delete(department)  // Cascade → project → Cascade → milestone
        try context.save()
        #expect(try !context.exists(department))
        #expect(try !context.exists(project))
        #expect(try !context.exists(milestone))
        #expect(try context.exists(member), "Nullify keeps the member")
        #expect(try context.destinations(of: "projects", for: member).isEmpty, "and clears its inverse")
    }

    @Test func noActionLeavesTheInverseAsItWas() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        let model = context.model
        let project = try context.insertObject(of: model.id("Project"))
        let milestone = try context.insertObject(of: model.id("Milestone"))
        try context.setDestination(project, of: "project", for: milestone)
        try context.save()
        try context.delete(milestone)
        try context.save()
        #expect(try context.destinations(of: "milestones", for: project) == [milestone])
    }

    /// An object deleted through a No Action relationship is still in its inverse's list until the
    /// save; deleting the inverse's owner then (Cascade over that list) deletes it, and is not
    /// refused as a missing object.
    @Test func aCascadeOverAnObjectDeletedAlreadyDeletesTheRest() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        let model = context.model
        let project = try context.insertObject(of: model.id("Project"))
        let milestone = try context.insertObject(of: model.id("Milestone"))
        try context.setDestination(project, of: "project", for: milestone)
        try context.save()
        try context.delete(milestone)
        #expect(try context.destinations(of: "milestones", for: project).isEmpty, "a deleted object is listed nowhere")
        let deleted = try context.delete(project)
        #expect(deleted.map(\.objectID) == [project])
        try context.save()
        #expect(try !context.exists(project) && !context.exists(milestone))
    }

    @Test func validationRefusesBadValues() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        let company = try insertSmallCompany(context)
        let id = company.employees[0]
        let cases: [(AttributeValue?, String)] = [
            (.integer(40_000), "level"),  // Integer 16, and max 10
            (.integer(Int64(Int32.max) + 1), "employeeID"),  // Integer 32 range
            (.string("x"), "salary"),  // wrong type
            (nil, "lastName"),  // not optional
            (.string(String(repeating: "x", count: 101)), "lastName"),  // max length 100
            (.double(200), "hoursPerWeek")  // max 168
        ]
        for (value, name) in cases {
            let error = #expect(throws: ObjectGraphError.self, "\(name) = \(String(describing: value))") {
                try context.setValue(value, of: name, for: id)
            }
            #expect(error?.code == .validation)
            #expect(error?.message.contains(name) == true)
        }
        #expect(try context.value(of: "lastName", for: id) == .string("Doe"))
        #expect(!context.hasChanges)
    }

    @Test func saveValidatesMandatoryValuesOfInsertedObjects() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        let e = try context.insertObject(of: context.model.id("Employee"))
        #expect(try context.value(of: "isRemote", for: e) == .boolean(false), "defaults apply on insert")
        // lastName defaults to "" but must have at least one character: the save says so.
        let error = #expect(throws: ObjectGraphError.self) { try context.save() }
        #expect(error?.code == .validation)
        #expect(error?.message.contains("lastName") == true)
        try context.setValue(.string("Liskov"), of: "lastName", for: e)
        try context.save()
        #expect(!context.hasChanges)
        let abstract = #expect(throws: ObjectGraphError.self) {
            try context.insertObject(of: context.model.id("Person"))
        }
        #expect(abstract?.code == .validation)
    }

    @Test func insertKeepsARequestedFreeKeyAndRefusesATakenOne() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        let model = context.model
        let a = try context.insertObject(of: model.id("Project"), key: PrimaryKey(42))
        #expect(a.key == PrimaryKey(42))
        let taken = #expect(throws: ObjectGraphError.self) {
            try context.insertObject(of: model.id("Project"), key: PrimaryKey(42))
        }
        #expect(taken?.code == .exists)
        // Keys are unique per root entity: one pending in another entity of the hierarchy is taken too.
        let employee = try context.insertObject(of: model.id("Employee"), key: PrimaryKey(900_001))
        let sibling = #expect(throws: ObjectGraphError.self) {
            try context.insertObject(of: model.id("Manager"), key: employee.key)
        }
        #expect(sibling?.code == .exists)
        _ = context.discardChanges(of: [employee])
        try context.save()
        let next = try context.insertObject(of: model.id("Project"))
        #expect(next.key == PrimaryKey(43), "keys continue after the highest handed out")
    }

    @Test func metadataKeysSaveAndManagedKeysAreRefused() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        try context.setMetadata(.string("hello"), for: "com.example.note")
        try context.save()
        #expect(try coordinator.store.metadata()["com.example.note"] == .string("hello"))
        let error = #expect(throws: ObjectGraphError.self) { try context.setMetadata(.string("x"), for: "NSStoreUUID") }
        #expect(error?.code == .readOnly)
    }

    @Test func theSampleHasTheDocumentedShape() throws {
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        try SampleGenerator(objectCount: 1_000).populate(context)
        let model = context.model
        let counts = Dictionary(uniqueKeysWithValues: model.entities.map { ($0.name, try! context.count(of: $0.id)) })
        #expect(
            counts == ["Person": 0, "Employee": 800, "Manager": 50, "Department": 10, "Project": 40, "Milestone": 100])
        #expect(counts.values.reduce(0, +) == 1_000)
    }
}

@Suite struct ObjectIDTests {
    @Test func uriFormPrintsAndParses() throws {
        let uri = ObjectURI(
            storeUUID: "E8B22CEA-8316-45E7-BC08-3FBA516F962C", entityName: "ItemSub", key: PrimaryKey(1))
        #expect(uri.description == "x-coredata://E8B22CEA-8316-45E7-BC08-3FBA516F962C/ItemSub/p1")
        #expect(ObjectURI(uri.description) == uri)
        for bad in [
            "x-coredata://U/E/1", "x-coredata://U/E/p", "x-coredata://U/p1", "http://U/E/p1", "x-coredata://U/E/p-3",
            "x-coredata://U/E/p+3"
        ] {
            #expect(ObjectURI(bad) == nil, "\(bad)")
        }
    }

    @Test func entityNumbersFollowCoreDataOrder() throws {
        let model = SampleModel.make()
        #expect(model.entities.map(\.name) == ["Department", "Milestone", "Person", "Employee", "Manager", "Project"])
        #expect(model.entity(named: "Manager")?.rootID == model.entityID(named: "Person"))
    }
}
