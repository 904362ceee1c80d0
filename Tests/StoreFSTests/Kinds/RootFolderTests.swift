import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// The mount root (``RootFolder``): entity directories, store metadata as xattrs.
@Suite struct RootFolderTests {
    @Test func listsTheEntitiesSortedAndHidesTheComputedFolders() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        #expect(try k.list("") == ["Department", "Employee", "Manager", "Milestone", "Person", "Project"])
        #expect(try k.stat(".fetchRequests").kind == .directory, "reachable by name")
        #expect(errnoOf { _ = try k.stat("Nothing") } == ENOENT)
        #expect(try k.stat("").permissions == 0o755)
        #expect(mount.finish().isEmpty)
    }

    @Test func metadataIsReadAndWrittenAsExtendedAttributes() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let names = try k.listxattr("")
        #expect(
            names.contains("user.NSStoreType") && names.contains("user.NSStoreUUID")
                && names.contains("user.storefs.stats"))
        #expect(!names.contains("user.StoreFSModel"), "the kept model is readable by name only")
        #expect(String(decoding: try k.getxattr("", "user.NSStoreType"), as: UTF8.self) == "SQLite")
        #expect(String(decoding: try k.getxattr("", "user.storefs.stats"), as: UTF8.self).contains("storeRequests"))
        try k.setxattr("", "user.Owner", Data("Ada".utf8))
        #expect(errnoOf { try k.setxattr("", "user.Owner", Data("B".utf8), flags: .create) } == EEXIST)
        #expect(errnoOf { try k.setxattr("", "user.Missing", Data("B".utf8), flags: .replace) } == ENODATA)
        #expect(errnoOf { try k.setxattr("", "user.NSStoreUUID", Data("x".utf8)) } == EPERM)
        #expect(errnoOf { try k.setxattr("", "security.selinux", Data("x".utf8)) } == EOPNOTSUPP)
        #expect(errnoOf { _ = try k.getxattr("", "user.nothing") } == ENODATA)
        try k.fsync("")
        #expect(try mount.remount().isEmpty)
        #expect(String(decoding: try mount.kernel.getxattr("", "user.Owner"), as: UTF8.self) == "Ada")
        try mount.kernel.removexattr("", "user.Owner")
        #expect(errnoOf { try mount.kernel.removexattr("", "user.NSStoreType") } == EPERM)
        #expect(errnoOf { try mount.kernel.removexattr("", "user.Owner") } == ENODATA)
        #expect(mount.finish().isEmpty)
    }

    @Test func changesOtherThanEntitiesAreRefusedAndReadOnlyMountsRefuseAll() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        #expect(errnoOf { try k.mkdir("Invented") } == EPERM)
        #expect(errnoOf { try k.mkdir("Department") } == EEXIST)
        #expect(errnoOf { try k.write("notes.txt", Data("x".utf8)) } == EPERM)
        #expect(errnoOf { try k.symlink("Department", "link") } == EPERM)
        #expect(errnoOf { try k.unlink("Department") } == EISDIR)
        #expect(errnoOf { try k.rmdir("Department") } == EPERM)
        #expect(mount.finish().isEmpty)
        let readOnly = try KernelMount(readOnly: true)
        #expect(errnoOf { try readOnly.kernel.setxattr("", "user.Owner", Data("Ada".utf8)) } == EROFS)
        #expect(errnoOf { try readOnly.kernel.mkdir("Department/p900") } == EROFS)
        #expect(try readOnly.kernel.stat("").permissions == 0o555)
        #expect(readOnly.finish().isEmpty)
    }
}
