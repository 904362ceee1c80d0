import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Edits of real stores that Core Data itself makes, through the mapping (``KernelMount`` on
/// copies of corpus stores): deleting an object whose entity has a derived attribute the store's
/// triggers keep, and changing an object whose non-optional to-many relationship is empty
/// (minimum count 0).
@Suite struct RealStoreEditMappingTests {
    /// `rm -r` unlinks every file of the folder before its rmdir, the derived `pagesCount` too:
    /// removing the files of an object being deleted is not an edit of them. Removing that file
    /// alone is refused at once (EPERM), and the value stays.
    @Test func rmRDeletesAnObjectWithADerivedAttribute() throws {
        let mount = try KernelMount(corpus: "alemar11_CoreDataPlus_SampleModel2_V1.sqlite")
        let k = mount.kernel
        let folders = try k.list("Book").filter { try k.stat("Book/\($0)").kind != .symbolicLink }
        let (kept, deleted) = (try #require(folders.first), try #require(folders.dropFirst().first))
        #expect(errnoOf { _ = try k.read("Book/\(deleted)/pagesCount") } == nil, "the derived value is a file")
        #expect(errnoOf { try k.unlink("Book/\(kept)/pagesCount") } == EPERM)
        #expect(errnoOf { _ = try k.read("Book/\(kept)/pagesCount") } == nil)
        #expect(errnoOf { try k.removeRecursively("Book/\(deleted)") } == nil, "\(mount.logText.suffix(1500))")
        #expect(!k.exists("Book/\(deleted)"))
        #expect(mount.unmount().isEmpty)
        #expect(mount.fileSystem.unsavedChanges == nil, "everything was saved: \(mount.logText.suffix(1500))")
        #expect(
            try mount.sqlite("select count(*) from ZBOOK where Z_PK = \(deleted.dropFirst())") == "0", "the row is gone"
        )
    }

    /// A SwiftData cart saved with no items although `items` is not optional (minimum count 0)
    /// takes edits and saves, as Core Data lets it.
    @Test func anObjectWithAnEmptyMandatoryToManySaves() throws {
        let mount = try KernelMount(corpus: "Karim-ezzedine_CartKit_CartKitSwiftData_v1.sqlite")
        let k = mount.kernel
        #expect(try k.list("CartModel/p1/items") == [], "the cart has no items")
        #expect(
            errnoOf { try k.write("CartModel/p1/status", Data("checkedOut\n".utf8), .init(fsync: true)) } == nil,
            "fsync of the edit: \(mount.logText.suffix(1500))")
        #expect(mount.unmount().isEmpty)
        #expect(mount.fileSystem.unsavedChanges == nil)
        #expect(try mount.sqlite("select ZSTATUS from ZCARTMODEL where Z_PK = 1") == "checkedOut")
    }
}
