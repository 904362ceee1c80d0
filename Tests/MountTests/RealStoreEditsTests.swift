import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Edits of real stores that Core Data itself makes: deleting an object whose entity has a
/// derived attribute the store's triggers keep, and changing an object whose non-optional
/// to-many relationship is empty (minimum count 0).
@Suite(.serialized) struct RealStoreEditsTests {
    /// `rm -r` unlinks every file of the folder before its rmdir, the derived `pagesCount` too:
    /// removing the files of an object being deleted is not an edit of them. Removing that file
    /// alone is refused at once (EPERM), and the value stays.
    @Test func rmRDeletesAnObjectWithADerivedAttribute() throws {
        let mount = try MountedStore(copying: Corpus.url("sqlite/alemar11_CoreDataPlus_SampleModel2_V1.sqlite"))
        defer { try? mount.unmount() }
        let books = try run("ls", ["\(mount.path)/Book"]).lines
        let folders = books.filter { (try? run("test", ["-L", "\(mount.path)/Book/\($0)"]).status) != 0 }
        let (kept, deleted) = (try #require(folders.first), try #require(folders.dropFirst().first))
        #expect(try run("cat", ["\(mount.path)/Book/\(deleted)/pagesCount"]).status == 0, "the derived value is a file")
        let alone = try run("rm", ["\(mount.path)/Book/\(kept)/pagesCount"])
        #expect(alone.status != 0 && alone.error.contains("Operation not permitted"), "\(alone.error)")
        #expect(try run("cat", ["\(mount.path)/Book/\(kept)/pagesCount"]).status == 0)
        let removed = try run("rm", ["-r", "\(mount.path)/Book/\(deleted)"])
        #expect(removed.status == 0, "\(removed.error)\n\(mount.logText.suffix(1500))")
        #expect(try run("stat", ["\(mount.path)/Book/\(deleted)"]).status != 0)
        let unmounted = try mount.unmountReportingStatus()
        #expect(unmounted.status == 0, "\(unmounted.error)\n\(mount.logText.suffix(1500))")
        let rows = try run(
            "sqlite3", [mount.store.path, "select count(*) from ZBOOK where Z_PK = \(deleted.dropFirst())"])
        #expect(rows.output == "0\n", "the row is gone: \(rows.error)")
    }

    /// A SwiftData cart saved with no items although `items` is not optional (minimum count 0)
    /// takes edits and saves, as Core Data lets it.
    @Test func anObjectWithAnEmptyMandatoryToManySaves() throws {
        let mount = try MountedStore(copying: Corpus.url("sqlite/Karim-ezzedine_CartKit_CartKitSwiftData_v1.sqlite"))
        defer { try? mount.unmount() }
        let cart = "\(mount.path)/CartModel/p1"
        #expect(try run("ls", ["\(cart)/items"]).lines == [], "the cart has no items")
        let write = try run(
            "python3",
            [
                "-c",
                "import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_TRUNC); os.write(fd, b'checkedOut\\n'); os.fsync(fd); os.close(fd)",
                "\(cart)/status"
            ])
        #expect(write.status == 0, "fsync of the edit: \(write.error)\n\(mount.logText.suffix(1500))")
        let unmounted = try mount.unmountReportingStatus()
        #expect(unmounted.status == 0, "\(unmounted.error)")
        #expect(
            try run("sqlite3", [mount.store.path, "select ZSTATUS from ZCARTMODEL where Z_PK = 1"]).output
                == "checkedOut\n")
    }
}
