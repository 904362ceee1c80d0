import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Edits of objects whose other values break the model (as real apps leave them: Photos leaves
/// non-optional attributes nil), and writes refused at fsync: the edit is checked for what it
/// sets, and a write taken back leaves nothing pending, nothing for a recovery file and no
/// -wal/-shm beside the store.
@Suite struct UntouchedValuesTests {
    /// Employee p20's firstName is mandatory and nil, as another program left it.
    static let namelessEmployee = "UPDATE ZPERSON SET ZFIRSTNAME = NULL WHERE Z_PK = 20"

    @Test func anEditIsSavedThoughAValueItDidNotTouchBreaksTheModel() throws {
        let mount = try KernelMount(sql: Self.namelessEmployee)
        let k = mount.kernel
        #expect(!k.exists("Employee/p20/firstName"), "nil: no file")
        try k.write("Employee/p20/lastName", Data("Hopper\n".utf8))
        try k.fsync("Employee/p20/lastName")
        #expect(try mount.text("Employee/p20/lastName") == "Hopper\n")
        #expect(
            (try? k.getxattr("Employee/p20", "user.storefs.error")) == nil, "no error shown for a change that was saved"
        )
        // What the edit sets is still checked.
        #expect(errnoOf { try k.write("Employee/p20/level", Data("99\n".utf8)) } == EINVAL)
        #expect(try mount.remount().isEmpty)
        #expect(try mount.text("Employee/p20/lastName") == "Hopper\n", "saved")
        #expect(!mount.kernel.exists("Employee/p20/firstName"), "left as it was")
        #expect(mount.finish().isEmpty)
    }

    /// A value the store refuses at the commit (here a trigger another program added) fails the
    /// fsync and is taken back; it was the object's only change, so nothing stays pending: the
    /// unmount saves everything (no recovery file) and the store's folder holds the store alone.
    @Test func aValueRefusedAtFsyncAndTakenBackLeavesNothingPending() throws {
        let trigger = """
            CREATE TRIGGER refuse_name BEFORE UPDATE OF ZFIRSTNAME ON ZPERSON WHEN NEW.ZFIRSTNAME = 'Refused'
            BEGIN SELECT RAISE(ABORT, 'this name is refused'); END;
            """
        let mount = try KernelMount(sql: trigger)
        let k = mount.kernel
        let before = try mount.text("Employee/p21/firstName")
        let file = try k.openFile("Employee/p21/firstName", writing: true)
        try k.write(file, Data("Refused\n".utf8), at: 0)
        try k.closeFile(file)
        #expect(errnoOf { try k.fsync("Employee/p21/firstName") } != nil, "fsync says it was not saved")
        #expect(try mount.text("Employee/p21/firstName") == before, "taken back")
        #expect(mount.fileSystem.mapping.context.pendingChanges().isEmpty)
        #expect((try? k.getxattr("Employee/p21", "user.storefs.error")) == nil)
        #expect(k.finish().isEmpty)
        #expect(mount.fileSystem.unsavedChanges == nil, "the unmount saved everything: exit status 0")
        mount.coordinator.close()
        let files = try FileManager.default.contentsOfDirectory(atPath: mount.folder.path).sorted()
        #expect(files == ["Company.sqlite"], "no recovery file, no -wal or -shm: \(files)")
        try? FileManager.default.removeItem(at: mount.folder)
    }

    /// A mount that saved nothing leaves the store's folder as it found it: the read connections'
    /// -wal and -shm go when it closes.
    @Test func aMountThatSavedNothingLeavesNoWALFilesBeside() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        #expect(try k.list("Employee").count > 100)
        #expect(try mount.text("Employee/p21/lastName").count > 1)
        #expect(k.finish().isEmpty)
        mount.coordinator.close()
        let files = try FileManager.default.contentsOfDirectory(atPath: mount.folder.path).sorted()
        #expect(files == ["Company.sqlite"], "\(files)")
        try? FileManager.default.removeItem(at: mount.folder)
    }
}
