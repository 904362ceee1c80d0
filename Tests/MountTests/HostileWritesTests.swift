import Foundation
import Testing

/// Every kind of bad write, with the error the writer gets, and the store afterwards: each is
/// refused where it is made, and no row of the store changes (the whole file's dump is the same).
@Suite(.serialized) struct HostileWritesTests {
    struct Case: CustomStringConvertible {
        var name: String
        var command: String
        var error: String
        var description: String { name }
    }

    func sqlite(_ store: URL, _ query: String) throws -> String {
        try run("sqlite3", ["-cmd", ".timeout 5000", store.path, query]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    @Test func everyBadWriteIsRefusedWhereItIsMadeAndNoRowChanges() throws {
        let mount = try MountedStore(objects: 300, mount: false)
        // A manager with no manager of its own (the sample gives every employee one): its
        // `manager` link is free for the link cases.
        let managerEntity = try sqlite(mount.store, "select Z_ENT from Z_PRIMARYKEY where Z_NAME = 'Manager'")
        let employee = try sqlite(
            mount.store,
            "select Z_PK from ZPERSON where Z_ENT = \(managerEntity) and ZMANAGER is null and ZDEPARTMENT is not null limit 1"
        )
        let boss = try sqlite(
            mount.store,
            "select ZMANAGER from ZPERSON where ZMANAGER is not null and ZMANAGER != \(employee) group by ZMANAGER having count(*) > 1 limit 1"
        )
        let department = try sqlite(
            mount.store, "select ZDEPARTMENT from ZPERSON where ZDEPARTMENT is not null limit 1")
        try #require(!employee.isEmpty && !boss.isEmpty && !department.isEmpty)
        let before = try run("sqlite3", [mount.store.path, ".dump"]).output
        try mount.mount()
        defer { try? mount.unmount() }
        let m = mount.path
        let e = "\(m)/Manager/p\(employee)"
        let long = String(repeating: "n", count: 256)
        let invalid = "Invalid argument"
        let cases: [Case] = [
            Case(name: "text into an Integer 16", command: "echo abc > \(e)/level", error: invalid),
            Case(name: "beyond Integer 16", command: "echo 40000 > \(e)/level", error: invalid),
            Case(name: "above the attribute's maximum", command: "echo 11 > \(e)/level", error: invalid),
            Case(name: "beyond Integer 32", command: "echo 3000000000 > \(e)/employeeID", error: invalid),
            Case(name: "beyond Integer 64", command: "echo 9223372036854775808 > \(e)/badgeNumber", error: invalid),
            Case(name: "a Double to infinity", command: "echo 1e400 > \(e)/hoursPerWeek", error: invalid),
            Case(name: "a Float to infinity", command: "echo 1e39 > \(e)/rating", error: invalid),
            Case(name: "a Float to zero", command: "echo 1e-50 > \(e)/rating", error: invalid),
            Case(name: "NaN into SQLite", command: "echo nan > \(e)/hoursPerWeek", error: invalid),
            Case(name: "a decimal comma", command: "echo 12,5 > \(e)/salary", error: invalid),
            Case(name: "not a boolean", command: "echo maybe > \(e)/isRemote", error: invalid),
            Case(name: "month 13", command: "echo 2024-13-01 > \(e)/birthDate", error: invalid),
            Case(name: "February 30", command: "echo 2024-02-30 > \(e)/birthDate", error: invalid),
            Case(name: "hour 24", command: "echo 2024-01-01T24:00:00Z > \(e)/birthDate", error: invalid),
            Case(name: "not a UUID", command: "echo not-a-uuid > \(e)/personID", error: invalid),
            Case(name: "text that is not UTF-8", command: "printf 'a\\377\\n' > \(e)/firstName", error: invalid),
            Case(name: "a Windows line ending in a number", command: "printf '7\\r\\n' > \(e)/level", error: invalid),
            Case(name: "spaces around a number", command: "echo ' 7 ' > \(e)/level", error: invalid),
            Case(name: "below the minimum length", command: "echo > \(e)/lastName", error: invalid),
            Case(
                name: "past the maximum length", command: "echo \(String(repeating: "x", count: 101)) > \(e)/lastName",
                error: invalid),
            Case(
                name: "a control character in a URI", command: "printf 'http://a\\001b\\n' > \(e)/homepage",
                error: invalid),
            Case(name: "truncate to a terabyte", command: "truncate -s 1T \(e)/firstName", error: "File too large"),
            Case(
                name: "write at a terabyte",
                command: "dd if=/dev/zero of=\(e)/photo bs=1 count=1 seek=1099511627776 conv=notrunc status=none",
                error: "File too large"),
            Case(name: "mkdir p0", command: "mkdir \(m)/Employee/p0", error: invalid),
            Case(name: "mkdir of a key with leading zeros", command: "mkdir \(m)/Employee/p007", error: invalid),
            Case(name: "mkdir of a key beyond 2^32", command: "mkdir \(m)/Employee/p4294967296", error: invalid),
            Case(
                name: "mkdir of a name past NAME_MAX", command: "mkdir \(m)/Employee/\(long)",
                error: "File name too long"),
            Case(name: "a file name past NAME_MAX", command: ": > \(e)/\(long)", error: "File name too long"),
            Case(name: "a name that is not UTF-8", command: "mkdir \(m)/Employee/$(printf 'x\\377')", error: invalid),
            Case(name: "mkdir inside an object folder", command: "mkdir \(e)/folder", error: "Operation not permitted"),
            Case(
                name: "a file in an entity directory", command: ": > \(m)/Employee/notes.txt",
                error: "Operation not permitted"),
            Case(name: "a link out of the mount", command: "ln -s /etc/passwd \(e)/manager", error: invalid),
            Case(name: "a link above the root", command: "ln -s ../../../../etc \(e)/manager", error: invalid),
            Case(
                name: "a link to another entity's object", command: "ln -s ../../Project/p1 \(e)/manager",
                error: invalid),
            Case(
                name: "a link to an object that does not exist", command: "ln -s ../../Manager/p999999 \(e)/manager",
                error: "No such file or directory"),
            Case(
                name: "ln onto a set relationship", command: "ln -s ../../Department/p\(department) \(e)/department",
                error: "Operation not permitted"),
            Case(name: "rm of a mandatory value", command: "rm \(e)/lastName", error: "Operation not permitted"),
            Case(
                name: "mv of one attribute onto another", command: "mv \(e)/firstName \(e)/lastName",
                error: "Operation not permitted"),
            // rename(2) across folders is EXDEV; mv then copies and cannot remove the mandatory value.
            Case(
                name: "mv across object folders", command: "mv \(e)/firstName \(m)/Manager/p\(boss)/nick",
                error: "cannot remove"),
            Case(
                name: "rename(2) across object folders",
                command:
                    "python3 -c 'import os,sys; os.rename(sys.argv[1], sys.argv[2])' \(e)/firstName \(m)/Manager/p\(boss)/nick2",
                error: "Invalid cross-device link"),
            Case(
                name: "a delete a Deny rule refuses", command: "rm -r \(m)/Department/p\(department)",
                error: "Operation not permitted"),
            Case(
                name: "setting the store's UUID", command: "setfattr -n user.NSStoreUUID -v 0 \(m)",
                error: "Operation not permitted"),
            Case(
                name: "setting the statistics", command: "setfattr -n user.storefs.stats -v 0 \(m)",
                error: "Operation not permitted"),
            Case(
                name: "a security label", command: "setfattr -n security.evil -v 1 \(e)",
                error: "Operation not supported"),
            Case(
                name: "an xattr on an object folder", command: "setfattr -n user.note -v 1 \(e)",
                error: "Operation not permitted"),
            Case(
                name: "an order that leaves members out",
                command: "setfattr -n user.order -v p1 \(m)/Manager/p\(boss)/directReports", error: invalid)
        ]
        for hostile in cases {
            // bash reports a write's errno as it is (dash says "I/O error" for every one).
            let result = try run("bash", ["-c", hostile.command])
            #expect(result.status != 0, "\(hostile): was accepted")
            #expect(result.error.contains(hostile.error), "\(hostile): \(result.error)")
        }
        #expect(try run("ls", [m]).lines.contains("Employee"), "the server answers after all of them")
        try mount.unmount()
        let after = try run("sqlite3", [mount.store.path, ".dump"]).output
        #expect(after == before, "every row of the store is as it was")
    }
}
