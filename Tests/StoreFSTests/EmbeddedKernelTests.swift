import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import SQLiteStore
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// The mapping driven through the embedded kernel: what the kernel is told to forget, what it
/// counts, and thousands of hostile calls in seconds.
@Suite struct EmbeddedKernelTests {
    /// A sample store of `objects` objects in a temporary folder, mounted on an embedded kernel.
    final class SampleMount {
        let folder: URL
        let coordinator: PersistentStoreCoordinator
        let fileSystem: StoreFileSystem
        let kernel: EmbeddedKernel

        init(objects: Int = 300, readOnly: Bool = false) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("embedded-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let url = folder.appendingPathComponent("Company.sqlite")
            let seed = try PersistentStoreCoordinator.open(
                at: url, types: [SQLiteStoreType()], model: SampleModel.make(),
                options: StoreOptions(createIfMissing: true))
            try SampleGenerator(objectCount: objects).populate(seed.newContext())
            seed.close()
            coordinator = try PersistentStoreCoordinator.open(at: url, types: [SQLiteStoreType()])
            var configuration = StoreFSConfiguration()
            configuration.commitDelay = 3600
            configuration.readOnly = readOnly
            fileSystem = StoreFileSystem(coordinator: coordinator, configuration: configuration)
            kernel = EmbeddedKernel(fileSystem)
        }

        deinit {
            kernel.unmount()
            coordinator.close()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    @Test func everyEntryAListingGivesIsOneLookupAndForgettingGivesThemAllBack() throws {
        let mount = try SampleMount()
        let names = try mount.kernel.list("Department")
        #expect(!names.isEmpty)
        let inodes = try names.map { try mount.kernel.stat("Department/\($0)").inode }
        for inode in inodes {
            // One from the listing (READDIRPLUS), one from the stat's lookup.
            #expect(mount.kernel.lookups[inode] == 2, "\(inode)")
        }
        mount.kernel.forgetAll()
        #expect(mount.kernel.lookups.isEmpty)
    }

    /// What a read-only mount preloads for a folder's other files is what reading each gives.
    @Test func preloadedSiblingsHoldWhatReadingThemGives() throws {
        let mount = try SampleMount(readOnly: true)
        var checked = 0
        for entity in mount.coordinator.model.entities {
            for object in try mount.kernel.list(entity.name).prefix(15) {
                let folder = "\(entity.name)/\(object)"
                let files = try mount.kernel.list(folder).filter {
                    (try? mount.kernel.stat("\(folder)/\($0)").kind) == .regularFile
                }
                guard let first = files.first else { continue }
                _ = try mount.kernel.read("\(folder)/\(first)")
                let preloaded = mount.kernel.preloadedContents
                for name in files.dropFirst() {
                    let path = "\(folder)/\(name)"
                    #expect(preloaded[try mount.kernel.stat(path).inode] == (try mount.kernel.read(path)), "\(path)")
                    checked += 1
                }
            }
        }
        #expect(checked > 500)
    }

    @Test func aChangeInvalidatesWhatShowsIt() throws {
        let mount = try SampleMount()
        let kernel = mount.kernel
        let employee = try #require(
            try kernel.list("Employee").first { (try? kernel.stat("Employee/\($0)").kind) == .directory })
        let file = try kernel.stat("Employee/\(employee)/lastName").inode
        _ = kernel.takeInvalidations()
        // Written without its newline, the value reads back one byte longer than the kernel's
        // cached pages: they and the size are dropped. (Bytes stored exactly as written keep the
        // kernel's view: KernelViewAfterWriteTests.)
        try kernel.write("Employee/\(employee)/lastName", Data("Hopper".utf8))
        #expect(kernel.takeInvalidations().contains(.inode(file)), "the file's cached pages and size are dropped")
        #expect(try kernel.read("Employee/\(employee)/lastName") == Data("Hopper\n".utf8))
        // Relinking an employee's department: the link, and both departments' employees folders.
        let department = try kernel.readlink("Employee/\(employee)/department")
        let departments = try kernel.list("Department")
        let other = try #require(departments.first { "../../Department/\($0)" != department })
        let folder = try kernel.stat("Department/\(other)/employees").inode
        try kernel.unlink("Employee/\(employee)/department")
        try kernel.symlink("../../Department/\(other)", "Employee/\(employee)/department")
        let invalidations = kernel.takeInvalidations()
        #expect(invalidations.contains(.inode(folder)), "the new department's employees folder")
        let folderOfEmployee = try kernel.stat("Employee/\(employee)").inode
        #expect(invalidations.contains(.entry(parent: folderOfEmployee, name: "department")))
        #expect(try kernel.list("Department/\(other)/employees").contains(employee))
    }

    @Test func thousandsOfHostileCallsGiveErrorsAndNeverEndTheFileSystem() throws {
        let mount = try SampleMount()
        let kernel = mount.kernel
        var random = SplitMix64(seed: 7)
        let keys = [
            "p9223372036854775807", "p9223372036854775806", "p4294967295", "p4294967296", "p0", "p-3", "p1e3", "p007",
            "p18446744073709551616", String(repeating: "p", count: 255), "p\u{0}", "..", "."
        ]
        let sizes: [UInt64] = [0, 1, 64 << 20, (64 << 20) + 1, 1 << 40, UInt64(Int64.max), UInt64.max]
        var errors: [Int32: Int] = [:]
        for _ in 0..<3000 {
            let entity = ["Employee", "Department", "Project", "Milestone", "Nope"].randomElement(using: &random)!
            let name = keys.randomElement(using: &random)!
            let path = "\(entity)/\(name)"
            do throws(EmbeddedKernel.KernelError) {
                switch Int.random(in: 0..<7, using: &random) {
                case 0: _ = try kernel.stat(path)
                case 1: try kernel.mkdir(path)
                case 2:
                    try kernel.truncate(
                        "Employee/p20/\(["firstName", "photo", "level"].randomElement(using: &random)!)",
                        to: sizes.randomElement(using: &random)!)
                case 3: try kernel.symlink("../../\(entity)/\(name)", "Employee/p21/department")
                case 4: try kernel.write("\(path)/name", Data("x\n".utf8))
                case 5: try kernel.removeRecursively(path)
                default: _ = try kernel.getxattr(path, "user.object.uri")
                }
            } catch {
                errors[error.errno, default: 0] += 1
            }
        }
        // Every errno a user may meet here; never EIO (an internal failure) or a trap.
        let expected: Set<Int32> = [
            ENOENT, EINVAL, EFBIG, EEXIST, EPERM, ENAMETOOLONG, ENOTDIR, ENODATA, EISDIR, ENOSPC
        ]
        #expect(Set(errors.keys).isSubset(of: expected), "errors given: \(errors)")
        #expect(errors[EFBIG, default: 0] > 0 && errors[ENOENT, default: 0] > 0, "\(errors)")
        // Still answering.
        #expect(try kernel.list("").contains("Employee"))
        #expect(try kernel.stat("Department").kind == .directory)
    }
}
