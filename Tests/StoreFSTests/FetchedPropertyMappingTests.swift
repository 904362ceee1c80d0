import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Fetched properties and fetch request templates as read-only folders of links, through the
/// mapping (``KernelMount``), checked against the engine's own evaluation.
@Suite struct FetchedPropertyMappingTests {
    /// The keys the engine finds for `predicate`, evaluated in memory (not by the SQL path the
    /// mapping takes), as the folder's names.
    func expected(
        _ engine: PersistentStoreCoordinator, _ predicate: String, of entity: String, source: ObjectID? = nil,
        property: FetchedPropertyDescription? = nil
    ) throws -> [String] {
        let context = engine.newContext()
        let ids = try context.objects(
            matching: try PredicateParser.parse(predicate), of: try #require(engine.model.entityID(named: entity)),
            source: source, fetchedProperty: property, strategy: .inMemory)
        return ids.map(\.key.description).sorted()
    }

    /// Every path below `path`, as `find PATH` lists it: folders are entered, links are not
    /// followed.
    func find(_ k: EmbeddedKernel, _ path: String) throws -> [String] {
        var found: [String] = []
        for name in try k.list(path) {
            let child = path.isEmpty ? name : "\(path)/\(name)"
            found.append(child)
            if try k.stat(child).kind == .directory { found += try find(k, child) }
        }
        return found
    }

    @Test func fetchedPropertiesListWhatTheirPredicatesSelectAndFollowEdits() throws {
        let mount = try KernelMount(objects: 500)
        let k = mount.kernel
        let engine = try mount.engine()
        defer { engine.close() }
        let model = engine.model
        let context = engine.newContext()
        let employee = try #require(model.entity(named: "Employee"))
        let colleagues = try #require(employee.fetchedProperty(named: "colleagues"))
        for id in try context.objectIDs(of: employee.id).prefix(3) {
            let listed = try k.list("Employee/\(id.key)/colleagues").sorted()
            let wanted = try expected(
                engine, colleagues.predicateString, of: "Employee", source: id, property: colleagues)
            #expect(!wanted.isEmpty)
            #expect(listed == wanted, "colleagues of \(id.key)")
            let first = try #require(listed.first)
            #expect(try k.readlink("Employee/\(id.key)/colleagues/\(first)").hasPrefix("../../../"))
        }
        let department = try #require(model.entity(named: "Department"))
        let highEarners = try #require(department.fetchedProperty(named: "highEarners"))
        let d1 = ObjectID(entity: department.id, key: PrimaryKey(1))
        let before = try k.list("Department/p1/highEarners").sorted()
        #expect(
            before
                == (try expected(engine, highEarners.predicateString, of: "Employee", source: d1, property: highEarners))
        )
        // An edit that changes the result shows in the folder.
        let member = try #require(try k.list("Department/p1/employees").first { !before.contains($0) })
        try k.write("Employee/\(member)/salary", Data("999999\n".utf8))
        #expect(try k.list("Department/p1/highEarners").sorted() == (before + [member]).sorted(), "the new high earner")
        // touch re-evaluates, and the folder is read-only.
        try k.touch("Department/p1/highEarners")
        #expect(errnoOf { try k.symlink("../../../Employee/p30", "Department/p1/highEarners/p30") } != nil)
        #expect(
            String(decoding: try k.getxattr("Department/p1/highEarners", "user.fetched.predicate"), as: UTF8.self)
                == highEarners.predicateString)
        #expect(mount.finish().isEmpty)
    }

    /// A folder evaluated before an edit shows the edit's effect at once, not only after the
    /// commit (none comes here: the commit delay is an hour). A copy depends on this: `cp -a` sets
    /// an object's links after its fetched folder may have been evaluated.
    @Test func aFetchedFolderFollowsAnEditBeforeItIsCommitted() throws {
        let mount = try KernelMount(objects: 500)
        let k = mount.kernel
        let employee = "Employee/p5"
        let old = try k.readlink("\(employee)/department")
        let before = try k.list("\(employee)/colleagues")
        #expect(!before.isEmpty)
        let other = try #require(try k.list("Department").first { "../../Department/\($0)" != old })
        // ln -sfn: a link under a temporary name renamed over the set one.
        try k.symlink("../../Department/\(other)", "\(employee)/CuZ8rT2q")
        try k.rename("\(employee)/CuZ8rT2q", "\(employee)/department")
        let members = try k.list("Department/\(other)/employees")
        #expect(members.contains("p5"), "the inverse shows the move")
        #expect(
            try k.list("\(employee)/colleagues").sorted() == members.filter { $0 != "p5" }.sorted(),
            "the colleagues are the new department's")
        let stats = try JSONSerialization.jsonObject(with: try k.getxattr("", "user.storefs.stats")) as? [String: Any]
        #expect(stats?["commits"] as? Int == 0, "nothing was committed meanwhile")
        #expect(mount.finish().isEmpty)
    }

    @Test func fetchedFoldersAreReachableByNameAndListedOnlyWhenAsked() throws {
        let hidden = try KernelMount(objects: 200, readOnly: true)
        let k = hidden.kernel
        let folder = "Employee/p1"
        #expect(!(try k.list(folder).contains("colleagues")), "not listed by default")
        #expect(!(try find(k, "").contains { $0.hasSuffix("/colleagues") }), "find walks only what is stored")
        #expect(try k.stat("\(folder)/colleagues").kind == .directory, "reachable by name")
        #expect(
            String(decoding: try k.getxattr(folder, "user.object.fetchedProperties", follow: true), as: UTF8.self)
                == "colleagues")
        let colleagues = try k.list("\(folder)/colleagues").sorted()

        let listed = try KernelMount(objects: 200, readOnly: true) { $0.listsFetchedProperties = true }
        #expect(try listed.kernel.list(folder).contains("colleagues"), "-o list_fetched lists them")
        #expect(try listed.kernel.list("\(folder)/colleagues").sorted() == colleagues)
        #expect(listed.finish().isEmpty)
        #expect(hidden.finish().isEmpty)
    }

    @Test func fetchRequestTemplatesAreFoldersUnderFetchRequests() throws {
        let mount = try KernelMount(objects: 500)
        let k = mount.kernel
        let engine = try mount.engine()
        defer { engine.close() }
        #expect(try k.list(".fetchRequests") == ["remoteEmployees"])
        let listed = try k.list(".fetchRequests/remoteEmployees").sorted()
        let wanted = try expected(engine, "isRemote == YES", of: "Employee")
        #expect(!wanted.isEmpty)
        #expect(listed == wanted)
        let link = try k.readlink(".fetchRequests/remoteEmployees/\(listed[0])")
        #expect(link.hasPrefix("../../Employee/") || link.hasPrefix("../../Manager/"))
        #expect(mount.finish().isEmpty)
    }

    @Test func aMalformedPredicateIsReportedAndTheRestMounts() throws {
        // The sample model with one fetched property whose predicate does not parse, given as a
        // model file (what `--model` reads).
        var entities = SampleModel.make().entities
        let index = try #require(entities.firstIndex { $0.name == "Department" })
        entities[index].fetchedProperties.append(
            FetchedPropertyDescription(name: "broken", destinationEntityName: "Employee", predicateString: "salary >"))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("model-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let contents = folder.appendingPathComponent("contents")
        try Data(XcodeModelWriter.contents(of: try ManagedObjectModel(entities: entities)).utf8).write(to: contents)
        let mount = try KernelMount(objects: 100, model: try XcodeModelLoader.load(from: contents))
        let k = mount.kernel
        #expect(
            String(decoding: try k.getxattr("Department/p1", "user.object.fetchedProperties"), as: UTF8.self)
                == "highEarners", "the broken property's folder is absent")
        #expect(errnoOf { _ = try k.list("Department/p1/highEarners") } == nil)
        #expect(errnoOf { _ = try k.list("Department/p1/broken") } == ENOENT)
        #expect(mount.logText.contains("Department.broken is left out"))
        #expect(mount.logText.contains("position"))
        #expect(mount.finish().isEmpty)
    }
}
