import Foundation
import Testing

/// An edit's commit keeps the row it saved (issue 40): where the save found the row in the store
/// exactly as the mount had read it, the row after the save is the saved values with Z_OPT one
/// higher, and the mount shows it without reading it again (vim's chmod after its write read it
/// back through SQLite: a quarter of vim's server time). Another process's commit still shows,
/// after the save as before it.
@Suite struct SavedRowTests {
    func sqlite(_ mount: MountedStore, _ query: String) throws -> String {
        try run("sqlite3", ["-cmd", ".timeout 5000", mount.store.path, query]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// Writes `text` into `path` as an editor does (truncate, write, fsync, close); "ok" or the errno.
    func writeDurably(_ path: String, _ text: String) throws -> String {
        let py = """
            import os, sys
            fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC); os.write(fd, sys.argv[2].encode())
            try:
                os.fsync(fd); print("ok")
            except OSError as e:
                print("error", e.errno)
            os.close(fd)
            """
        return try run("python3", ["-c", py, path, text]).output
    }

    func faultsFired(_ mount: MountedStore) throws -> Int { try mount.stats()["faultsFired"] as? Int ?? -1 }

    @Test func aCommittedEditShowsWithoutReadingItsRowAgainAndOutsideCommitsStillShow() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let folder = "\(mount.path)/Department/p3"
        #expect(try run("cat", ["\(folder)/name"]).status == 0)
        let version = try #require(Int(try sqlite(mount, "select Z_OPT from ZDEPARTMENT where Z_PK = 3")))
        // Counted from here: the row is cached; the close after the fsync asks for it again too.
        let before = try faultsFired(mount)

        #expect(try writeDurably("\(folder)/name", "Edited\n") == "ok\n", "the fsync commits")
        #expect(
            try sqlite(mount, "select Z_OPT, ZNAME from ZDEPARTMENT where Z_PK = 3") == "\(version + 1)|Edited",
            "the commit wrote the row and moved its version")
        // What vim does after its write (chmod), then what a user looks at: the folder, the value
        // written and another value of the same object.
        #expect(try run("chmod", ["644", "\(folder)/name"]).status == 0)
        #expect(try run("stat", [folder]).status == 0)
        #expect(try run("cat", ["\(folder)/name"]).output == "Edited\n")
        let code = try sqlite(mount, "select ZCODE from ZDEPARTMENT where Z_PK = 3")
        #expect(try run("cat", ["\(folder)/code"]).output == code + "\n")
        #expect(try faultsFired(mount) == before, "no row was read again after the commit")

        // Another process commits after the save: by hand (Z_OPT left as it was), then as Core
        // Data does (Z_OPT moved). The mount shows both, as it shows any outside commit.
        #expect(try sqlite(mount, "update ZDEPARTMENT set ZCODE = 'OUTSIDE' where Z_PK = 3; select changes()") == "1")
        #expect(
            eventuallyTrue(timeout: 15) { (try? run("cat", ["\(folder)/code"]).output) == "OUTSIDE\n" },
            "an outside commit after the save shows")
        #expect(
            try sqlite(
                mount, "update ZDEPARTMENT set ZNAME = 'Theirs', Z_OPT = Z_OPT + 1 where Z_PK = 3; select changes()")
                == "1")
        #expect(
            eventuallyTrue(timeout: 15) { (try? run("cat", ["\(folder)/name"]).output) == "Theirs\n" },
            "an outside commit of the value this mount saved shows")

        // The mount's next edit builds on their row: saved, their column kept.
        #expect(try writeDurably("\(folder)/name", "Mine\n") == "ok\n", "no conflict: the mount read their row")
        try mount.unmount()
        #expect(
            try sqlite(mount, "select ZNAME, ZCODE, Z_OPT from ZDEPARTMENT where Z_PK = 3")
                == "Mine|OUTSIDE|\(version + 3)")
    }

    /// A row another process changed before the save (a column the mount does not edit, by hand,
    /// Z_OPT left as it was) is read again after the save, as before: the store's row is not the
    /// one the mount read, so the mount does not keep its own.
    @Test func aRowChangedOutsideBeforeTheSaveIsReadAgainAfterIt() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let folder = "\(mount.path)/Department/p2"
        #expect(try run("cat", ["\(folder)/name", "\(folder)/code"]).status == 0)
        // Written before the edit, and read no sooner than the commit: the poll's interval is a
        // second, so the mount may or may not have seen it by then; either way it must show.
        #expect(try sqlite(mount, "update ZDEPARTMENT set ZCODE = 'BEFORE' where Z_PK = 2; select changes()") == "1")
        #expect(try writeDurably("\(folder)/name", "Edited\n") == "ok\n")
        #expect(try run("cat", ["\(folder)/code"]).output == "BEFORE\n", "the other process's column shows at once")
        #expect(try run("cat", ["\(folder)/name"]).output == "Edited\n")
        try mount.unmount()
        #expect(try sqlite(mount, "select ZNAME, ZCODE from ZDEPARTMENT where Z_PK = 2") == "Edited|BEFORE")
    }

    /// A value the store keeps otherwise than typed (a decimal as SQLite's REAL, −0 as +0) is not
    /// kept as typed after its commit: the row is read again, so the file shows what the store
    /// holds and the next edit of the value builds on it (it failed as a conflict when the row
    /// was kept as typed).
    @Test func aValueTheStoreKeepsOtherwiseIsReadAgainAndEditedAgain() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let folder = "\(mount.path)/Employee/p1"
        #expect(try run("cat", ["\(folder)/salary", "\(folder)/hoursPerWeek"]).status == 0)
        #expect(try writeDurably("\(folder)/salary", "0.12345678901234567890\n") == "ok\n")
        #expect(try writeDurably("\(folder)/hoursPerWeek", "-0\n") == "ok\n")
        let stored = try sqlite(mount, "select ZSALARY from ZPERSON where Z_PK = 1")
        #expect(
            try run("cat", ["\(folder)/salary"]).output.hasPrefix(String(stored.prefix(12))),
            "the file shows what the store holds (\(stored))")
        #expect(try writeDurably("\(folder)/salary", "2\n") == "ok\n", "the next edit of the decimal saves")
        #expect(try writeDurably("\(folder)/hoursPerWeek", "2\n") == "ok\n", "the next edit of the double saves")
        try mount.unmount()
        let final = try sqlite(mount, "select ZSALARY, ZHOURSPERWEEK from ZPERSON where Z_PK = 1")
        #expect(final == "2|2.0", "\(final)")
    }

    /// A row of a table a trigger writes to is read again after the save: a trigger that does not
    /// report its changes through Core Data's hooks (one written by hand) changed more than the
    /// mount wrote, and the mount shows it.
    @Test func aRowATriggerChangesTooIsReadAgainAfterTheSave() throws {
        let mount = try MountedStore(objects: 300, mount: false)
        defer { try? mount.unmount() }
        #expect(
            try sqlite(
                mount,
                "CREATE TRIGGER stamp AFTER UPDATE OF ZNAME ON ZDEPARTMENT BEGIN UPDATE ZDEPARTMENT SET ZCODE = 'STAMPED' WHERE Z_PK = NEW.Z_PK; END; select 1"
            ) == "1")
        try mount.mount()
        let folder = "\(mount.path)/Department/p3"
        #expect(try run("cat", ["\(folder)/code"]).output != "STAMPED\n")
        #expect(try writeDurably("\(folder)/name", "Edited\n") == "ok\n")
        #expect(try run("cat", ["\(folder)/code"]).output == "STAMPED\n", "the trigger's change shows")
    }
}
