import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Query folders (``QueryFolder``, ``QueryResultFile``): `.query/ENTITY/PREDICATE/` and saved
/// queries, on the embedded kernel.
@Suite struct QueryKindsTests {
    static let remote = ".query/Employee/isRemote == YES"

    /// The keys `predicate` selects among `entity`'s objects and its subentities', evaluated in
    /// memory on every object (not by the SQL path the folder takes), as the folder's names.
    func reference(_ mount: KernelMount, _ predicate: String, of entity: String) throws -> [String] {
        let context = mount.coordinator.newContext()
        let id = try #require(mount.coordinator.model.entityID(named: entity))
        return try context.objects(matching: try PredicateParser.parse(predicate), of: id, strategy: .inMemory)
            .map(\.key.description).sorted()
    }

    @Test func aQueryFolderListsLinksToTheMatchesWithTheirCountAndRecords() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let listed = try k.list(Self.remote).sorted()
        let wanted = try reference(mount, "isRemote == YES", of: "Employee")
        #expect(!wanted.isEmpty && listed == wanted)
        let managers = try mount.keys("Manager").map { "p\($0)" }
        #expect(listed.contains { managers.contains($0) }, "subentities' objects are included")
        for name in listed {
            let target = try k.readlink("\(Self.remote)/\(name)")
            #expect(target == "../../../Employee/\(name)" || target == "../../../Manager/\(name)")
            #expect(try mount.text("\(Self.remote)/\(name)/isRemote") == "true\n", "the link leads to the object")
        }
        #expect(try mount.text("\(Self.remote)/.count") == "\(listed.count)\n")
        let json = try mount.text("\(Self.remote)/.jsonl").split(separator: "\n")
        #expect(json.count == listed.count)
        // `.json` is one JSON document: an array of the same records.
        let document = try JSONSerialization.jsonObject(with: try k.read("\(Self.remote)/.json")) as? [[String: Any]]
        #expect(document?.count == listed.count)
        #expect(json.allSatisfy { $0.hasPrefix("{\"@entity\":\"") && $0.contains("\"isRemote\":\"true\"") })
        let csv = try mount.text("\(Self.remote)/.csv")
        #expect(csv.hasPrefix("@entity,@uri,"))
        #expect(try k.stat("\(Self.remote)/.jsonl").size == UInt64(json.map { $0.utf8.count + 1 }.reduce(0, +)))
        // Hidden as .fetchRequests is: reachable, not listed.
        #expect(!(try k.list("").contains(".query")))
        #expect(try k.list(".query") == mount.coordinator.model.entities.map(\.name).sorted())
        #expect(!(try k.list(Self.remote).contains(".count")), "the result files are not listed")
        #expect(try k.stat(Self.remote).permissions == 0o555)
        let predicate = try k.getxattr(Self.remote, "user.query.predicate")
        #expect(String(decoding: predicate, as: UTF8.self) == "isRemote == YES")
        #expect(mount.finish().isEmpty)
    }

    @Test func resultsFollowAnUnsavedEdit() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let before = try k.list(Self.remote)
        let count = try mount.text("\(Self.remote)/.count")
        let employee = try #require(try mount.keys("Employee").first { !before.contains("p\($0)") })
        try k.write("Employee/p\(employee)/isRemote", Data("true\n".utf8))
        #expect(try k.list(Self.remote).contains("p\(employee)"), "an edit shows at once, before any commit")
        #expect(try mount.text("\(Self.remote)/.count") == "\(Int(count.dropLast())! + 1)\n")
        #expect(try mount.text("\(Self.remote)/.json").contains("/Employee/p\(employee)\""))
        try k.write("Employee/p\(employee)/isRemote", Data("false\n".utf8))
        #expect(!(try k.list(Self.remote).contains("p\(employee)")))
        #expect(errnoOf { _ = try k.readlink("\(Self.remote)/p\(employee)") } == ENOENT)
        #expect(mount.finish().isEmpty)
    }

    @Test func aQueryIsAnsweredInSQLWithoutFaultingObjects() throws {
        let mount = try KernelMount(objects: 2_000)
        let k = mount.kernel
        let context = mount.fileSystem.context
        let requests = mount.coordinator.store.requestCount
        let faults = context.faultsFired
        let path = ".query/Employee/lastName BEGINSWITH[c] 'a' OR salary > 100000"
        let listed = try k.list(path)
        #expect(try mount.text("\(path)/.count") == "\(listed.count)\n")
        #expect(context.faultsFired == faults, "no object was faulted to answer")
        #expect(mount.coordinator.store.requestCount - requests <= 3, "one query answers the listing and the count")
        let wanted = try reference(mount, "lastName BEGINSWITH[c] 'a' OR salary > 100000", of: "Employee")
        #expect(listed.sorted() == wanted)
        #expect(mount.finish().isEmpty)
    }

    @Test func savedQueriesAreExtendedAttributesOfTheEntityKeptInTheStore() throws {
        let mount = try KernelMount()
        var k = mount.kernel
        // Longer than NAME_MAX: it could not be a path component.
        let nobody = (1...40).map { "'nobody\($0)'" }.joined(separator: ", ")
        let long = "isRemote == YES AND NOT (lastName IN {\(nobody)})"
        #expect(long.utf8.count > 255)
        try k.setxattr("Employee", "user.query.remote", Data(long.utf8))
        #expect(try k.list(".query/Employee") == ["remote"])
        let remote = try reference(mount, "isRemote == YES", of: "Employee")
        #expect(try k.list(".query/Employee/remote").sorted() == remote)
        #expect(try k.getxattr("Employee", "user.query.remote") == Data(long.utf8))
        #expect(try k.listxattr("Employee").contains("user.query.remote"))
        #expect(!(try k.listxattr("").contains("user.StoreFSQueries")), "kept in the metadata, shown on the entity")
        let again = Data("TRUEPREDICATE".utf8)
        #expect(errnoOf { try k.setxattr("Employee", "user.query.remote", again, flags: .create) } == EEXIST)
        // Saved in the store: a new mount has it.
        try k.fsync("Employee/p20/lastName")
        _ = try mount.remount()
        k = mount.kernel
        #expect(try k.list(".query/Employee") == ["remote"])
        try k.setxattr("Employee", "user.query.remote", Data("isRemote == NO".utf8))
        let office = try reference(mount, "isRemote == NO", of: "Employee")
        #expect(try k.list(".query/Employee/remote").sorted() == office)
        try k.removexattr("Employee", "user.query.remote")
        #expect(try k.list(".query/Employee") == [])
        #expect(errnoOf { _ = try k.stat(".query/Employee/remote") } == ENOENT)
        #expect(errnoOf { try k.removexattr("Employee", "user.query.remote") } == ENODATA)
        #expect(mount.finish().isEmpty)
    }

    @Test func anInvalidPredicateIsENOENTWithItsReasonInStorefsError() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        #expect(errnoOf { _ = try k.stat(".query/Employee/nmae == 'x'") } == ENOENT)
        let reason = String(decoding: try k.getxattr(".query/Employee", "user.storefs.error"), as: UTF8.self)
        #expect(reason.contains("nmae"), "\(reason)")
        #expect(errnoOf { _ = try k.stat(".query/Employee/lastName ==") } == ENOENT)
        let parse = String(decoding: try k.getxattr(".query/Employee", "user.storefs.error"), as: UTF8.self)
        #expect(parse.contains("position"), "\(parse)")
        #expect(errnoOf { _ = try k.stat(".query/NoSuchEntity") } == ENOENT)
        #expect(errnoOf { _ = try k.list(".query/Employee/$FETCH_SOURCE == nil") } == ENOENT)
        // Hostile predicates: huge numbers, nesting past the parser's limit, invalid UTF-8.
        let huge = ".query/Employee/employeeID == 99999999999999999999999999999999999999"
        #expect(try mount.text("\(huge)/.count") == "0\n", "a number past Int64 compares as a double")
        #expect(try mount.text(".query/Employee/salary > 1e400/.count") == "0\n")
        #expect(try mount.text(".query/Employee/employeeID < -9223372036854775808/.count") == "0\n")
        let deep = String(repeating: "(", count: 100_000) + "TRUEPREDICATE" + String(repeating: ")", count: 100_000)
        #expect(errnoOf { try k.setxattr("Employee", "user.query.deep", Data(deep.utf8)) } == EINVAL)
        #expect(errnoOf { try k.setxattr("Employee", "user.query.bytes", Data([0x6c, 0xff, 0xfe])) } == EINVAL)
        #expect(errnoOf { try k.setxattr("Employee", "user.query.", Data("TRUEPREDICATE".utf8)) } == EINVAL)
        #expect(errnoOf { try k.setxattr("Employee", "user.query.a/b", Data("TRUEPREDICATE".utf8)) } == EINVAL)
        #expect(errnoOf { try k.setxattr("Employee", "user.query.x", Data("nmae == 1".utf8)) } == EINVAL)
        let refused = String(decoding: try k.getxattr(".query/Employee", "user.storefs.error"), as: UTF8.self)
        #expect(refused.contains("nmae"))
        #expect(try k.list(".query/Employee") == [], "nothing refused was saved")
        #expect(errnoOf { try k.setxattr("", "user.StoreFSQueries", Data("x".utf8)) } == EPERM)
        #expect(errnoOf { try k.setxattr("Employee", "user.entity.count", Data("1".utf8)) } == EPERM)
        #expect(mount.finish().isEmpty)
    }

    @Test func everythingInQueryIsReadOnly() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let member = try #require(try k.list(Self.remote).first)
        #expect(errnoOf { try k.mkdir(".query/Employee/new") } == EPERM)
        #expect(errnoOf { try k.mkdir(".query/Thing") } == EPERM)
        #expect(errnoOf { try k.mkdir("\(Self.remote)/new") } == EPERM)
        #expect(errnoOf { try k.write("\(Self.remote)/file", Data()) } == EPERM)
        #expect(errnoOf { try k.write("\(Self.remote)/.count", Data("7\n".utf8)) } == EPERM)
        #expect(errnoOf { try k.symlink("../../../Employee/p20", "\(Self.remote)/p20") } == EPERM)
        #expect(errnoOf { try k.unlink("\(Self.remote)/\(member)") } == EPERM)
        #expect(errnoOf { try k.unlink("\(Self.remote)/.json") } == EPERM)
        #expect(errnoOf { try k.rmdir(Self.remote) } == EPERM)
        #expect(errnoOf { try k.setxattr(".query/Employee", "user.query.x", Data("TRUEPREDICATE".utf8)) } == EPERM)
        #expect(try k.list(Self.remote).contains(member), "nothing changed")
        #expect(mount.finish().isEmpty)

        let readOnly = try KernelMount(readOnly: true)
        let r = readOnly.kernel
        #expect(!(try r.list(Self.remote).isEmpty), "queries answer on read-only mounts")
        #expect(errnoOf { try r.setxattr("Employee", "user.query.remote", Data("TRUEPREDICATE".utf8)) } == EROFS)
        #expect(errnoOf { try r.mkdir(".query/Employee/new") } == EROFS)
        #expect(readOnly.finish().isEmpty)
    }

    @Test func inodeNumbersOfQueryNodesRoundTrip() {
        let nodes: [Node] = [
            .query(QueryFolder.rootPart), .query(QueryFolder.entityPart, entity: EntityID(3)),
            .query(QueryFolder.queryPart, entity: EntityID(1023), index: UInt32.max - 1),
            .queryFile(QueryResultFile.csvPart, entity: EntityID(2), index: 77)
        ]
        for node in nodes { #expect(Node(node.inode) == node) }
        let count = Node.queryFile(QueryResultFile.countPart, entity: EntityID(2), index: 7)
        #expect(Node(count.inode)?.kind == .queryFile)
        #expect(Node(Node.query(QueryFolder.queryPart, entity: EntityID(2), index: 7).inode)?.kind == .query)
    }

    @Test func theTableOfQueriesForgetsTheOldestAndNeverReusesANumber() throws {
        let table = QueryTable()
        let entity = EntityID(2)
        let first = try #require(table.index(of: .init(entity: entity, name: "level > 0")))
        #expect(table.index(of: .init(entity: entity, name: "level > 0")) == first, "a query keeps its number")
        for n in 1...QueryTable.capacity { _ = table.index(of: .init(entity: entity, name: "level > \(n)")) }
        #expect(table.query(first) == nil, "the oldest is forgotten past the capacity")
        let again = try #require(table.index(of: .init(entity: entity, name: "level > 0")))
        #expect(again > first && table.query(again)?.name == "level > 0")
        #expect(table.query(first + 1)?.name == nil && table.query(first + 2)?.name == "level > 2")
    }
}
