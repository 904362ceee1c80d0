import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// An object's folder (``ObjectFolder``): its properties as files, links and folders; scratch
/// files; how editors save; `rm -r`.
@Suite struct ObjectFolderTests {
    @Test func listsSetPropertiesOnlyAndDescribesTheObject() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let names = try k.list("Department/p1")
        #expect(names.contains("name") && names.contains("employees") && names.contains("projects"))
        #expect(!names.contains("highEarners"), "fetched properties are reachable, not listed")
        #expect(try k.stat("Department/p1/highEarners").kind == .directory)
        let uri = String(decoding: try k.getxattr("Department/p1", "user.object.uri"), as: UTF8.self)
        #expect(uri.hasPrefix("x-coredata://") && uri.hasSuffix("/Department/p1"))
        #expect(
            String(decoding: try k.getxattr("Department/p1", "user.object.fetchedProperties"), as: UTF8.self)
                == "highEarners")
        // A nil attribute has no file; a missing name is ENOENT, not a crash, whatever it is.
        try k.unlink("Department/p1/code")
        #expect(errnoOf { _ = try k.stat("Department/p1/code") } == ENOENT)
        #expect(errnoOf { _ = try k.stat("Department/p1/" + String(repeating: "x", count: 300)) } == ENOENT)
        #expect(mount.finish().isEmpty)
    }

    @Test func editorsSaveThroughScratchFilesAndRenames() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let folder = "Department/p2"
        // vim: the original renamed to a backup (a scratch copy), a new file written, the backup removed.
        let old = try mount.text("\(folder)/name")
        try k.rename("\(folder)/name", "\(folder)/name~")
        #expect(try mount.text("\(folder)/name~") == old, "the backup holds the old text")
        #expect(try mount.text("\(folder)/name") == old, "the value stays until the new file is written")
        try k.write("\(folder)/name", Data("Saved by vim\n".utf8))
        try k.unlink("\(folder)/name~")
        // sed -i: a temporary file renamed over the value.
        try k.write("\(folder)/sedXYZ", Data("Saved by sed\n".utf8))
        #expect(try k.list(folder).contains("sedXYZ"))
        try k.rename("\(folder)/sedXYZ", "\(folder)/code")
        #expect(try mount.text("\(folder)/code") == "Saved by sed\n")
        #expect(!(try k.list(folder).contains("sedXYZ")))
        // A scratch file renamed onto a relationship, or a value renamed onto another, is refused.
        try k.write("\(folder)/other", Data("x\n".utf8))
        #expect(errnoOf { try k.rename("\(folder)/other", "\(folder)/employees") } == EPERM)
        #expect(errnoOf { try k.rename("\(folder)/name", "\(folder)/code") } == EPERM)
        #expect(errnoOf { try k.rename("\(folder)/other", "Department/p3/other") } == EXDEV)
        #expect(errnoOf { try k.mkdir("\(folder)/sub") } == EPERM)
        #expect(errnoOf { try k.mkdir("\(folder)/employees") } == EEXIST)
        try k.fsync(folder)
        #expect(try mount.remount().isEmpty)
        #expect(try mount.text("\(folder)/name") == "Saved by vim\n")
        #expect(try mount.text("\(folder)/code") == "Saved by sed\n")
        #expect(!(try mount.kernel.list(folder).contains("other")), "scratch files are not saved")
        #expect(mount.finish().isEmpty)
    }

    @Test func rmRDeletesTheObjectAsItWas() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let project = try #require(try mount.keys("Project").first)
        let milestones = try k.list("Project/p\(project)/milestones")
        #expect(!milestones.isEmpty)
        try k.removeRecursively("Project/p\(project)")
        #expect(errnoOf { _ = try k.stat("Project/p\(project)") } == ENOENT)
        for milestone in milestones {
            #expect(errnoOf { _ = try k.stat("Milestone/\(milestone)") } == ENOENT, "Cascade")
        }
        // A mandatory value alone cannot be removed; by the process emptying the folder it is hidden.
        #expect(errnoOf { try k.unlink("Department/p2/name") } == EPERM)
        #expect(try mount.remount().isEmpty)
        #expect(!(try mount.keys("Project").contains(project)))
        #expect(mount.finish().isEmpty)
    }
}
