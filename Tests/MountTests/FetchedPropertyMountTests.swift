import Foundation
import ObjectGraph
import SQLiteStore
import Testing

/// Fetched properties and fetch request templates as read-only folders of links.
@Suite(.serialized) struct FetchedPropertyMountTests {
    /// The keys the engine finds for `predicate`, evaluated in memory (not by the SQL path the
    /// mount takes), as the folder's names.
    func expected(
        _ engine: PersistentStoreCoordinator, _ predicate: String, of entity: String, source: ObjectID? = nil,
        property: FetchedPropertyDescription? = nil
    ) throws -> [String] {
        let context = engine.newContext()
        let ids = try context.objects(
            matching: try PredicateParser.parse(predicate), of: engine.model.entityID(named: entity)!,
            source: source, fetchedProperty: property, strategy: .inMemory)
        return ids.map(\.key.description).sorted()
    }

    @Test func fetchedPropertiesListWhatTheirPredicatesSelectAndFollowEdits() throws {
        let mount = try MountedStore(objects: 500)
        defer { try? mount.unmount() }
        let engine = try mount.engine()
        let model = engine.model
        let context = engine.newContext()
        let employee = model.entity(named: "Employee")!
        let colleagues = employee.fetchedProperty(named: "colleagues")!
        for id in try context.objectIDs(of: employee.id).prefix(3) {
            let listed = try run("ls", ["\(mount.path)/Employee/\(id.key)/colleagues"]).lines.sorted()
            let wanted = try expected(
                engine, colleagues.predicateString, of: "Employee", source: id, property: colleagues)
            #expect(!wanted.isEmpty)
            #expect(listed == wanted, "colleagues of \(id.key)")
            let first = try #require(listed.first)
            #expect(
                try run("readlink", ["\(mount.path)/Employee/\(id.key)/colleagues/\(first)"]).output.hasPrefix(
                    "../../../"))
        }
        let department = model.entity(named: "Department")!
        let highEarners = department.fetchedProperty(named: "highEarners")!
        let d1 = ObjectID(entity: department.id, key: PrimaryKey(1))
        let before = try run("ls", ["\(mount.path)/Department/p1/highEarners"]).lines.sorted()
        #expect(
            before
                == (try expected(engine, highEarners.predicateString, of: "Employee", source: d1, property: highEarners))
        )
        // An edit through the mount that changes the result shows in the folder.
        let member = try #require(
            try run("ls", ["\(mount.path)/Department/p1/employees"]).lines.first { !before.contains($0) })
        #expect(try sh("echo 999999 > \(mount.path)/Employee/\(member)/salary").status == 0)
        Thread.sleep(forTimeInterval: 0.8)
        let after = try run("ls", ["\(mount.path)/Department/p1/highEarners"]).lines.sorted()
        #expect(after == (before + [member]).sorted(), "the new high earner is listed")
        // touch re-evaluates, and the folder is read-only.
        #expect(try run("touch", ["\(mount.path)/Department/p1/highEarners"]).status == 0)
        let refused = try run("ln", ["-s", "../../../Employee/p30", "\(mount.path)/Department/p1/highEarners/p30"])
        #expect(refused.status != 0)
        let predicate = try run(
            "getfattr", ["--only-values", "-n", "user.fetched.predicate", "\(mount.path)/Department/p1/highEarners"])
        #expect(predicate.output == highEarners.predicateString)
    }

    /// A folder evaluated before an edit shows the edit's effect at once, not only after the
    /// commit (none comes here: commit_delay is an hour). A copy depends on this: `cp -a` sets an
    /// object's links after its fetched folder may have been evaluated.
    @Test func aFetchedFolderFollowsAnEditBeforeItIsCommitted() throws {
        let mount = try MountedStore(objects: 500, options: ["commit_delay=3600"])
        defer { try? mount.unmount() }
        let employee = "\(mount.path)/Employee/p5"
        let old = try run("readlink", ["\(employee)/department"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let before = try run("ls", ["\(employee)/colleagues"]).lines
        #expect(!before.isEmpty)
        let other = try #require(
            try run("ls", ["\(mount.path)/Department"]).lines.first { "../../Department/\($0)" != old })
        #expect(try run("ln", ["-sfn", "../../Department/\(other)", "\(employee)/department"]).status == 0)
        let members = try run("ls", ["\(mount.path)/Department/\(other)/employees"]).lines
        #expect(members.contains("p5"), "the inverse shows the move")
        let after = try run("ls", ["\(employee)/colleagues"]).lines.sorted()
        #expect(after == members.filter { $0 != "p5" }.sorted(), "the colleagues are the new department's")
        #expect(try mount.stats()["commits"] as? Int == 0, "nothing was committed meanwhile")
    }

    @Test func fetchedFoldersAreReachableByNameAndListedOnlyWhenAsked() throws {
        let hidden = try MountedStore(objects: 200, options: ["ro"])
        defer { try? hidden.unmount() }
        let folder = "\(hidden.path)/Employee/p1"
        #expect(try run("ls", [folder]).status == 0)
        #expect(!(try run("ls", [folder]).lines.contains("colleagues")), "not listed by default")
        #expect(!(try run("find", [hidden.path]).output.contains("/colleagues")), "find walks only what is stored")
        #expect(try run("stat", ["-c", "%F", "\(folder)/colleagues"]).output == "directory\n", "reachable by name")
        #expect(
            try run("getfattr", ["--only-values", "-n", "user.object.fetchedProperties", folder]).output == "colleagues"
        )

        let listed = try MountedStore(objects: 200, options: ["ro", "list_fetched"])
        defer { try? listed.unmount() }
        let listedFolder = "\(listed.path)/Employee/p1"
        #expect(try run("ls", [listedFolder]).lines.contains("colleagues"), "-o list_fetched lists them")
        #expect(try run("ls", ["\(listedFolder)/colleagues"]).lines == (try run("ls", ["\(folder)/colleagues"]).lines))
    }

    @Test func fetchRequestTemplatesAreFoldersUnderFetchRequests() throws {
        let mount = try MountedStore(objects: 500)
        defer { try? mount.unmount() }
        let engine = try mount.engine()
        #expect(try run("ls", ["\(mount.path)/.fetchRequests"]).lines == ["remoteEmployees"])
        let listed = try run("ls", ["\(mount.path)/.fetchRequests/remoteEmployees"]).lines.sorted()
        let wanted = try expected(engine, "isRemote == YES", of: "Employee")
        #expect(!wanted.isEmpty)
        #expect(listed == wanted)
        let link = try run("readlink", ["\(mount.path)/.fetchRequests/remoteEmployees/\(listed[0])"]).output
        #expect(link.hasPrefix("../../Employee/") || link.hasPrefix("../../Manager/"))
    }

    @Test func aMalformedPredicateIsReportedAndTheRestMounts() throws {
        let mount = try MountedStore(objects: 100, mount: false)
        // The sample model with one fetched property whose predicate does not parse.
        var entities = SampleModel.make().entities
        let index = entities.firstIndex { $0.name == "Department" }!
        entities[index].fetchedProperties.append(
            FetchedPropertyDescription(name: "broken", destinationEntityName: "Employee", predicateString: "salary >"))
        let model = try ManagedObjectModel(entities: entities)
        let contents = mount.directory.appendingPathComponent("contents")
        try Data(XcodeModelWriter.contents(of: model).utf8).write(to: contents)
        try mount.mount(model: contents.path)
        defer { try? mount.unmount() }
        let fetched = try run(
            "getfattr", ["--only-values", "-n", "user.object.fetchedProperties", "\(mount.path)/Department/p1"])
        #expect(fetched.output == "highEarners", "the broken property's folder is absent")
        #expect(try run("ls", ["\(mount.path)/Department/p1/highEarners"]).status == 0)
        #expect(try run("ls", ["\(mount.path)/Department/p1/broken"]).error.contains("No such file or directory"))
        #expect(mount.logText.contains("Department.broken is left out"))
        #expect(mount.logText.contains("position"))
    }
}
