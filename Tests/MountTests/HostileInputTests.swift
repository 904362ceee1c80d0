import Foundation
import ObjectGraph
import SQLiteStore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What hostile and careless users type never ends the server: numbers in names and sizes
/// beyond every limit, long names, links anywhere. Every case runs through a real mount, and
/// every test ends by checking the server still answers.
@Suite(.serialized) struct HostileInputTests {
    func sqlite(_ store: URL, _ query: String) throws -> String {
        try run("sqlite3", ["-cmd", ".timeout 5000", store.path, query]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// The server still answers: the root lists its entities.
    func expectAlive(_ mount: MountedStore, _ note: String = "") throws {
        let listing = try run("ls", [mount.path])
        #expect(
            listing.status == 0 && listing.lines.contains("Employee"),
            "the server answers after \(note): \(listing.error)")
    }

    @Test(arguments: [[String](), ["ro"]])
    func lookingUpKeysBeyondWhatCanBeShownIsENOENT(options: [String]) throws {
        let mount = try MountedStore(objects: 300, options: options)
        defer { try? mount.unmount() }
        for name in [
            "p9223372036854775807", "p9223372036854775808", "p99999999999999999999999", "p4294967296", "p0", "p-1",
            "p007"
        ] {
            let result = try run("stat", ["\(mount.path)/Department/\(name)"])
            #expect(
                result.status != 0 && result.error.contains("No such file or directory"), "\(name): \(result.error)")
        }
        try expectAlive(mount, "looking up huge keys")
    }

    @Test func aForeignKeyHoldingInt64MaxIsFollowedWithoutEndingTheServer() throws {
        let mount = try MountedStore(objects: 300, mount: false)
        #expect(
            try sqlite(
                mount.store, "update ZPERSON set ZDEPARTMENT = 9223372036854775807 where Z_PK = 40; select changes()")
                == "1")
        try mount.mount(options: ["ro"])
        defer { try? mount.unmount() }
        let link = try run("readlink", ["\(mount.path)/Employee/p40/department"])
        #expect(link.output == "../../Department/p9223372036854775807\n")
        let follow = try run("stat", ["-L", "\(mount.path)/Employee/p40/department"])
        #expect(follow.status != 0 && follow.error.contains("No such file or directory"), "\(follow.error)")
        try expectAlive(mount, "following a link to key Int64.max")
    }

    @Test func truncatingBeyondTheValueLimitIsEFBIGAndTheServerStaysSmall() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let before = try run("cat", ["\(mount.path)/Employee/p20/firstName"]).output
        // `photo` allows external storage: its values are written into files of their own, up to
        // 1 TiB (docs/SEMANTICS.md, "Values of any size").
        for (file, size) in [("firstName", "1T"), ("photo", "2T"), ("firstName", "9223372036854775807")] {
            let result = try run("truncate", ["-s", size, "\(mount.path)/Employee/p20/\(file)"])
            #expect(
                result.status != 0 && result.error.contains("File too large"), "\(file) to \(size): \(result.error)")
        }
        // Writing past the limit through a descriptor: dd seeks far and writes one byte.
        let dd = try run(
            "dd",
            [
                "if=/dev/zero", "of=\(mount.path)/Employee/p20/photo", "bs=1", "count=1", "seek=1099511627776",
                "conv=notrunc", "status=none"
            ])
        #expect(dd.status != 0 && dd.error.contains("File too large"), "\(dd.error)")
        #expect(try run("cat", ["\(mount.path)/Employee/p20/firstName"]).output == before, "the value is as it was")
        let pid = try #require(
            Int32(try run("pgrep", ["-f", "storefs mount \(mount.store.path) \(mount.path)"]).lines.last ?? ""))
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let rss =
            status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.flatMap {
                Int($0.split(separator: " ").dropFirst().first ?? "")
            } ?? 0
        #expect(rss > 0 && rss < 400_000, "the server's peak memory stayed small: \(rss) kB")
        try expectAlive(mount, "huge truncates")
    }

    @Test func mkdirOfAKeyThatCannotBeShownIsEINVALAndLeavesZMaxAsItWas() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let zmax = try sqlite(mount.store, "select Z_MAX from Z_PRIMARYKEY where Z_NAME = 'Person'")
        for name in ["p4294967296", "p9223372036854775807", "p99999999999999999999", "p0", "p007"] {
            let result = try run("mkdir", ["\(mount.path)/Employee/\(name)"])
            #expect(result.status != 0 && result.error.contains("Invalid argument"), "\(name): \(result.error)")
        }
        #expect(try sh("echo Hopper > \(mount.path)/Employee/p30/lastName").status == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "everything saved: \(status.error)")
        #expect(try sqlite(mount.store, "select Z_MAX from Z_PRIMARYKEY where Z_NAME = 'Person'") == zmax)
        #expect(try sqlite(mount.store, "select ZLASTNAME from ZPERSON where Z_PK = 30") == "Hopper")
    }

    @Test func namesLongerThanNameMaxAreENAMETOOLONG() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let long = String(repeating: "x", count: 256)
        let folder = "\(mount.path)/Employee/p20"
        let commands = [
            "mkdir \(mount.path)/Employee/\(long)",
            ": > \(folder)/\(long)",
            "ln -s ../../Department/p1 \(folder)/\(long)",
            "printf x > \(folder)/scratch.tmp && mv \(folder)/scratch.tmp \(folder)/\(long)",
            "ln -s \(String(repeating: "a/", count: 2100)) \(folder)/toolong.link"
        ]
        for command in commands {
            let result = try sh(command)
            #expect(
                result.status != 0 && result.error.contains("File name too long"),
                "\(command.prefix(60)): \(result.error)")
        }
        // 255 bytes is allowed (a scratch file).
        #expect(try sh(": > \(folder)/\(String(repeating: "y", count: 255))").status == 0)
        try expectAlive(mount, "long names")
    }

    @Test func symbolicLinksOntoSetRelationshipsOrOutOfTheMountAreRefused() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let employee = "\(mount.path)/Employee/p100"
        let current = try run("readlink", ["\(employee)/department"]).output.trimmingCharacters(in: .newlines)
        #expect(current.hasPrefix("../../Department/p"))
        let other = current.hasSuffix("/p3") ? "p2" : "p3"
        // ln without -n follows the set link into the department's folder: refused, nothing stray.
        let onto = try run("ln", ["-s", "../../Department/\(other)", "\(employee)/department"])
        #expect(onto.status != 0 && onto.error.contains("Operation not permitted"), "\(onto.error)")
        let departmentFolder = mount.path + "/" + current.replacingOccurrences(of: "../../", with: "")
        #expect(try !run("ls", [departmentFolder]).lines.contains(other), "no stray link in \(departmentFolder)")
        #expect(try run("readlink", ["\(employee)/department"]).output.trimmingCharacters(in: .newlines) == current)
        // ln -sfn replaces it.
        #expect(try run("ln", ["-sfn", "../../Department/\(other)", "\(employee)/department"]).status == 0)
        #expect(try run("readlink", ["\(employee)/department"]).output == "../../Department/\(other)\n")
        // Targets that are no object of the destination entity, or objects that do not exist.
        try run("rm", ["\(employee)/manager"])
        for (target, error) in [
            ("/etc/passwd", "Invalid argument"), ("../../Project/p1", "Invalid argument"),
            ("../../../../../etc", "Invalid argument"),
            ("../../Manager/p99999", "No such file or directory"),
            ("../../Manager/p4294967296", "No such file or directory")
        ] {
            let result = try run("ln", ["-s", target, "\(employee)/manager"])
            #expect(result.status != 0 && result.error.contains(error), "\(target): \(result.error)")
            #expect(try run("ls", [employee]).lines.contains("manager") == false, "\(target) left no link")
        }
        try expectAlive(mount, "bad links")
    }

    @Test func linksWaitingInAFolderACopyFillsMustNameAnObjectOfTheRightEntity() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        #expect(try run("mkdir", ["\(mount.path)/Employee/p5000"]).status == 0)
        let folder = "\(mount.path)/Employee/p5000"
        for (target, name) in [
            ("/etc/passwd", "manager"), ("../../Project/p9000", "manager"), ("../../Manager/p9000/x", "manager"),
            ("../Manager/p9000", "manager")
        ] {
            let result = try run("ln", ["-s", target, "\(folder)/\(name)"])
            #expect(result.status != 0 && result.error.contains("Invalid argument"), "\(target): \(result.error)")
        }
        // The form storefs shows, naming an object that a copy makes later: accepted, and applied.
        #expect(try run("ln", ["-s", "../../Manager/p9000", "\(folder)/manager"]).status == 0)
        #expect(try run("mkdir", ["\(mount.path)/Manager/p9000"]).status == 0)
        #expect(
            try sh("echo Lovelace > \(folder)/lastName && echo Hopper > \(mount.path)/Manager/p9000/lastName").status
                == 0)
        let status = try mount.unmountReportingStatus()
        #expect(status.status == 0, "\(status.error)")
        #expect(try sqlite(mount.store, "select ZMANAGER from ZPERSON where Z_PK = 5000") == "9000")
    }

    @Test func aStoreWhoseZMaxHoldsTextOpensAndNeverReusesAKey() throws {
        let mount = try MountedStore(objects: 300, mount: false)
        #expect(
            try sqlite(mount.store, "update Z_PRIMARYKEY set Z_MAX = 'lots' where Z_NAME = 'Person'; select changes()")
                == "1")
        let highest = try #require(Int64(try sqlite(mount.store, "select max(Z_PK) from ZPERSON")))
        let info = try run(try storefsBinary(), ["info", mount.store.path])
        #expect(info.status == 0, "storefs info: \(info.error)")
        try mount.mount()
        #expect(try run("mkdir", ["\(mount.path)/Employee/newcomer"]).status == 0)
        let made = try #require(
            try run("ls", ["\(mount.path)/Employee"]).lines.compactMap { PrimaryKey(reference: $0) }.max())
        #expect(made.rawValue == highest + 1, "the new key is above every key the table holds")
        #expect(try sh("echo Lovelace > \(mount.path)/Employee/\(made)/lastName").status == 0)
        try mount.unmount()
        #expect(try sqlite(mount.store, "select Z_MAX from Z_PRIMARYKEY where Z_NAME = 'Person'") == "\(highest + 1)")
    }
}
