import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// To-one links (``ToOneLink``), to-many folders (``ToManyFolder``) and their member links
/// (``MemberLink``), subentity links (``SubentityLink``): set, listed and cleared with inverses.
@Suite struct RelationshipKindsTests {
    @Test func aToOneLinkIsSetReplacedAndClearedWithItsInverse() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        #expect(try k.readlink("Employee/p20/department").hasPrefix("../../Department/p"))
        try k.unlink("Employee/p20/department")
        #expect(errnoOf { _ = try k.stat("Employee/p20/department") } == ENOENT)
        #expect(!(try k.list("Department/p2/employees").contains("p20")))
        try k.symlink("../../Department/p2", "Employee/p20/department")
        #expect(try k.list("Department/p2/employees").contains("p20"), "the inverse follows")
        #expect(errnoOf { try k.symlink("../../Department/p3", "Employee/p20/department") } == EEXIST)
        // ln -sfn: a temporary link renamed over the set one.
        try k.symlink("../../Department/p3", "Employee/p20/CuTemp01")
        #expect(
            try k.readlink("Employee/p20/department") == "../../Department/p3", "one to-one can hold it: set at once")
        try k.rename("Employee/p20/CuTemp01", "Employee/p20/department")
        #expect(!(try k.list("Department/p2/employees").contains("p20")))
        #expect(try k.list("Department/p3/employees").contains("p20"))
        #expect(
            errnoOf { try k.symlink("../../Project/p1", "Employee/p21/CuTemp02") } == EINVAL,
            "no to-one holds a Project")
        #expect(errnoOf { try k.symlink("/etc/passwd", "Employee/p21/CuTemp03") } == EINVAL)
        try? k.unlink("Employee/p21/manager")
        #expect(errnoOf { try k.symlink("../../Project/p1", "Employee/p21/manager") } == EINVAL, "the wrong entity")
        #expect(try mount.remount().isEmpty)
        #expect(try mount.kernel.readlink("Employee/p20/department") == "../../Department/p3")
        #expect(mount.finish().isEmpty)
    }

    @Test func aToManyFolderListsLinksAndTakesAndLosesMembers() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let projects = try k.list("Employee/p20/projects")
        let other = try #require(try k.list("Project").first { !projects.contains($0) })
        try k.symlink("../../../Project/\(other)", "Employee/p20/projects/anyName")
        #expect(Set(try k.list("Employee/p20/projects")) == Set(projects + [other]), "shown under its key")
        #expect(try k.readlink("Employee/p20/projects/\(other)") == "../../../Project/\(other)")
        #expect(try k.list("Project/\(other)/members").contains("p20"), "the inverse follows")
        #expect(errnoOf { try k.symlink("/etc/passwd", "Employee/p20/projects/passwd") } == EINVAL)
        #expect(errnoOf { try k.symlink("../../../Department/p1", "Employee/p20/projects/wrong") } == EINVAL)
        #expect(errnoOf { try k.symlink("../../../Project/p99999", "Employee/p20/projects/p99999") } == ENOENT)
        try k.unlink("Employee/p20/projects/\(other)")
        #expect(Set(try k.list("Employee/p20/projects")) == Set(projects))
        #expect(!(try k.list("Project/\(other)/members").contains("p20")))
        #expect(errnoOf { try k.rmdir("Employee/p20/projects") } == (projects.isEmpty ? nil : ENOTEMPTY))
        #expect(
            errnoOf { try k.rename("Employee/p20/projects/\(projects.first ?? "p1")", "Employee/p20/projects/p777") }
                == (projects.isEmpty ? ENOENT : EPERM))
        #expect(
            String(decoding: try k.getxattr("Employee/p20/projects", "user.relationship.inverse"), as: UTF8.self)
                == "members")
        #expect(mount.finish().isEmpty)
    }

    @Test func anOrderedFolderReordersWithUserOrder() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let manager = try #require(
            try mount.keys("Manager").first { (try? k.list("Manager/p\($0)/directReports").count) ?? 0 > 2 })
        let folder = "Manager/p\(manager)/directReports"
        let reports = try k.list(folder)
        let reversed = Array(reports.reversed())
        try k.setxattr(folder, "user.order", Data(reversed.joined(separator: " ").utf8))
        #expect(try k.list(folder) == reversed)
        #expect(
            errnoOf { try k.setxattr(folder, "user.order", Data(reversed.dropFirst().joined(separator: " ").utf8)) }
                == EINVAL)
        #expect(
            errnoOf { try k.setxattr("Employee/p20/projects", "user.order", Data("p1".utf8)) } == EPERM, "not ordered")
        #expect(try mount.remount().isEmpty)
        #expect(try mount.kernel.list(folder) == reversed)
        #expect(mount.finish().isEmpty)
    }

    @Test func subentityLinksLeadToTheObjectsFolder() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let employee = try #require(try mount.keys("Employee").first)
        #expect(try k.readlink("Person/p\(employee)") == "../Employee/p\(employee)")
        #expect(try k.stat("Person/p\(employee)/lastName", follow: true).kind == .regularFile)
        #expect(mount.finish().isEmpty)
    }
}
