import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Computed folders and files: fetched properties (``FetchedFolder``), the model's fetch request
/// templates (``TemplatesFolder``, ``TemplateFolder``, ``TemplateMemberLink``), renderings of
/// archived values (``RenderingFile``), and scratch entries (``ScratchEntry``).
@Suite struct ComputedKindsTests {
    @Test func aFetchedFolderListsWhatItsPredicateSelectsAndFollowsEdits() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let colleagues = try k.list("Employee/p20/colleagues")
        let department = try k.readlink("Employee/p20/department").split(separator: "/").last.map(String.init) ?? ""
        let same = try k.list("Department/\(department)/employees").filter { $0 != "p20" }
        #expect(Set(colleagues) == Set(same))
        let moved = try #require(same.first)
        try k.unlink("Employee/\(moved)/department")
        #expect(!(try k.list("Employee/p20/colleagues").contains(moved)), "an edit changes the answer at once")
        #expect(errnoOf { try k.symlink("../../../Employee/p21", "Employee/p20/colleagues/newLink") } == EPERM)
        #expect(errnoOf { try k.write("Employee/p20/colleagues/file", Data()) } == EPERM)
        #expect(
            String(decoding: try k.getxattr("Employee/p20/colleagues", "user.fetched.entity"), as: UTF8.self)
                == "Employee")
        #expect(try k.stat("Employee/p20/colleagues").permissions == 0o555)
        #expect(mount.finish().isEmpty)
    }

    @Test func templatesAreFoldersOfLinks() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        #expect(try k.list(".fetchRequests") == ["remoteEmployees"])
        let remote = try k.list(".fetchRequests/remoteEmployees")
        for name in remote {
            #expect(try k.readlink(".fetchRequests/remoteEmployees/\(name)").hasPrefix("../../"))
            #expect(try mount.text(".fetchRequests/remoteEmployees/\(name)/isRemote") == "true\n")
        }
        let employee = try #require(try mount.keys("Employee").first { !remote.contains("p\($0)") })
        try k.write("Employee/p\(employee)/isRemote", Data("true\n".utf8))
        #expect(try k.list(".fetchRequests/remoteEmployees").contains("p\(employee)"))
        #expect(errnoOf { try k.unlink(".fetchRequests/remoteEmployees/p\(employee)") } == EPERM)
        #expect(mount.finish().isEmpty)
    }

    @Test func anArchivedValueRendersAsJSONBesideItsFile() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let plist = try PropertyListSerialization.data(
            fromPropertyList: ["theme": "dark", "size": 3], format: .binary, options: 0)
        try k.write("Employee/p20/preferences", plist)
        let json = try mount.text("Employee/p20/preferences.json")
        #expect(json.contains("\"theme\"") && json.contains("\"dark\""))
        #expect(try k.stat("Employee/p20/preferences.json").size == UInt64(json.utf8.count), "sizes are exact")
        #expect(!(try k.list("Employee/p20").contains("preferences.json")), "reachable, not listed")
        #expect(errnoOf { try k.write("Employee/p20/preferences.json", Data("{}".utf8)) } == EPERM)
        #expect(errnoOf { try k.unlink("Employee/p20/preferences.json") } == EPERM)
        try k.write("Employee/p20/photo", Data([1, 2, 3]))
        #expect(
            errnoOf { _ = try k.stat("Employee/p20/photo.json") } == ENOENT, "bytes that are no archive render nothing")
        #expect(mount.finish().isEmpty)
    }

    @Test func scratchEntriesLiveInMemoryOnly() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        try k.write("Department/p1/.name.swp", Data("swap".utf8))
        try k.write("Department/p1/.name.swp", Data("swap 2".utf8), .init(truncate: false))
        #expect(try mount.text("Department/p1/.name.swp") == "swap 2")
        try k.truncate("Department/p1/.name.swp", to: 4)
        #expect(try mount.text("Department/p1/.name.swp") == "swap")
        try k.rename("Department/p1/.name.swp", "Department/p1/.name.swo")
        #expect(try k.list("Department/p1").contains(".name.swo"))
        try k.unlink("Department/p1/.name.swo")
        #expect(!(try k.list("Department/p1").contains(".name.swo")))
        #expect(mount.finish().isEmpty)
    }
}
