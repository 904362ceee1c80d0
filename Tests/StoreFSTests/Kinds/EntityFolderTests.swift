import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// An entity's directory (``EntityFolder``): object folders by key, subentities' objects as links,
/// mkdir inserts and rmdir deletes.
@Suite struct EntityFolderTests {
    @Test func listsObjectFoldersByKeyAndSubentityObjectsAsLinks() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let employees = try mount.keys("Employee")
        let managers = try mount.keys("Manager")
        let listed = try k.list("Employee")
        #expect(listed.sorted() == (employees + managers).map { "p\($0)" }.sorted())
        let manager = try #require(managers.first)
        #expect(try k.stat("Employee/p\(manager)").kind == .symbolicLink)
        #expect(try k.readlink("Employee/p\(manager)") == "../Manager/p\(manager)")
        #expect(try k.list("Person").count == listed.count, "the abstract root lists every person")
        #expect(String(decoding: try k.getxattr("Person", "user.entity.abstract"), as: UTF8.self) == "true")
        #expect(String(decoding: try k.getxattr("Manager", "user.entity.parent"), as: UTF8.self) == "Employee")
        // count: what ls lists (the entity's objects and its subentities'); ownCount: its own.
        func attribute(_ entity: String, _ name: String) throws -> String {
            String(decoding: try k.getxattr(entity, "user.entity.\(name)"), as: UTF8.self)
        }
        #expect(try attribute("Employee", "count") == "\(listed.count)")
        #expect(try attribute("Employee", "ownCount") == "\(employees.count)")
        #expect(try attribute("Person", "count") == "\(listed.count)" && attribute("Person", "ownCount") == "0")
        #expect(try attribute("Manager", "count") == "\(managers.count)")
        #expect(errnoOf { _ = try k.stat("Employee/p0") } == ENOENT)
        #expect(errnoOf { _ = try k.stat("Employee/p4294967296") } == ENOENT)
        #expect(mount.finish().isEmpty)
    }

    @Test func mkdirInsertsAndRmdirDeletes() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        try k.mkdir("Department/p900")
        #expect(try k.stat("Department/p900").kind == .directory)
        #expect(errnoOf { try k.mkdir("Department/p900") } == EEXIST)
        #expect(errnoOf { try k.mkdir("Department/p007") } == EINVAL)
        #expect(errnoOf { try k.mkdir("Department/p0") } == EINVAL)
        let before = Set(try k.list("Department"))
        try k.mkdir("Department/another")
        #expect(errnoOf { _ = try k.stat("Department/another") } == ENOENT, "shown under its key")
        let made = try #require(Set(try k.list("Department")).subtracting(before).first)
        #expect(errnoOf { try k.mkdir("Person/p950") } == EINVAL, "an abstract entity has no objects of its own")
        #expect(errnoOf { try k.write("Department/file", Data("x".utf8)) } == EPERM)
        try k.fsync("Department/p900")
        try k.rmdir("Department/\(made)")
        #expect(errnoOf { _ = try k.stat("Department/\(made)") } == ENOENT)
        #expect(try mount.remount().isEmpty)
        #expect(try mount.keys("Department").contains(900))
        #expect(!(try mount.keys("Department").map { "p\($0)" }.contains(made)))
        #expect(errnoOf { try mount.kernel.unlink("Department/p900") } == EISDIR)
        #expect(mount.finish().isEmpty)
    }

    @Test func aDeleteTheRulesRefuseIsEPERMAndChangesNothing() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let employees = try k.list("Department/p1/employees")
        #expect(!employees.isEmpty)
        #expect(errnoOf { try k.removeRecursively("Department/p1") } == EPERM, "Deny: it has employees")
        #expect(try k.list("Department/p1/employees") == employees, "what rm -r removed on its way shows again")
        #expect(try k.stat("Department/p1/name").kind == .regularFile)
        #expect(mount.finish().isEmpty)
    }
}
