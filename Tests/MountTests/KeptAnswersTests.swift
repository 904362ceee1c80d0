import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Every answer a tool gets is kept: a call that returns 0 changed the store (checked after
/// unmounting, through a fresh engine), and a change that cannot be kept fails at a call the tool
/// checks (write, close, fsync, symlink) with the store unchanged.
@Suite(.serialized) struct KeptAnswersTests {
    func stored(_ mount: MountedStore, _ entity: String, _ key: Int64, _ attribute: String) throws -> AttributeValue? {
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let id = try #require(try context.objectID(forKey: PrimaryKey(key), in: engine.model.entityID(named: entity)!))
        return try context.value(of: attribute, for: id)
    }

    func storedMembers(_ mount: MountedStore, _ entity: String, _ key: Int64, _ relationship: String) throws -> [String]
    {
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let id = try #require(try context.objectID(forKey: PrimaryKey(key), in: engine.model.entityID(named: entity)!))
        return try context.destinations(of: relationship, for: id).map(\.key.description).sorted()
    }

    /// A link under a name other than `pN` in a to-many folder is the member it names (shown under
    /// its key and saved), and `ln -sf` over an existing member works; a target outside the mount,
    /// or one that is no object folder, is EINVAL at symlink(2).
    @Test func linksInToManyFoldersBecomeMembersOrAreRefused() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let projects = "\(mount.path)/Employee/p20/projects"
        let before = try run("ls", [projects]).lines
        let target = try #require(try run("ls", ["\(mount.path)/Project"]).lines.first { !before.contains($0) })
        let made = try run("ln", ["-s", "../../../Project/\(target)", "\(projects)/foo"])
        #expect(made.status == 0, "\(made.error)")
        #expect(try run("ls", [projects]).lines.sorted() == (before + [target]).sorted(), "listed under its key")
        #expect(try run("stat", ["\(projects)/\(target)"]).status == 0)
        // ln -sfn replaces a link through a temporary name and a rename.
        let replaced = try run("ln", ["-sfn", "../../../Project/\(target)", "\(projects)/\(target)"])
        #expect(replaced.status == 0, "ln -sfn over a member: \(replaced.error)")
        for (name, link) in [
            ("passwd", "/etc/passwd"), ("up", "../../../../../etc"), ("attr", "../../../Project/p1/name")
        ] {
            let refused = try run("ln", ["-s", link, "\(projects)/\(name)"])
            #expect(refused.status != 0 && refused.error.contains("Invalid argument"), "\(link): \(refused.error)")
            #expect(try run("cat", ["\(projects)/\(name)"]).status != 0, "nothing is readable under \(name)")
        }
        #expect(try run("ls", [projects]).lines.sorted() == (before + [target]).sorted())
        try mount.unmount()
        #expect(try storedMembers(mount, "Employee", 20, "projects") == (before + [target]).sorted())
    }

    /// In an object folder a link under another name sets the one to-one relationship that can
    /// hold its target; a target outside the mount, or that no relationship holds, is EINVAL.
    @Test func linksUnderOtherNamesInObjectFoldersSetTheirRelationshipOrAreRefused() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let employee = "\(mount.path)/Employee/p20"
        let made = try run("ln", ["-s", "../../Department/p2", "\(employee)/dept"])
        #expect(made.status == 0, "\(made.error)")
        #expect(try run("readlink", ["\(employee)/department"]).output == "../../Department/p2\n")
        #expect(!(try run("ls", [employee]).lines.contains("dept")), "shown under the relationship's name")
        for (name, link) in [("passwd", "/etc/passwd"), ("milestone", "../../Milestone/p1")] {
            let refused = try run("ln", ["-s", link, "\(employee)/\(name)"])
            #expect(refused.status != 0 && refused.error.contains("Invalid argument"), "\(link): \(refused.error)")
            #expect(try run("cat", ["\(employee)/\(name)"]).status != 0)
        }
        try mount.unmount()
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let id = try #require(
            try context.objectID(forKey: PrimaryKey(20), in: engine.model.entityID(named: "Employee")!))
        #expect(try context.destination(of: "department", for: id)?.key == PrimaryKey(2))
    }

    /// Text no continuation can make valid fails at write(2); a value still invalid at close fails
    /// close(2); either way the stored value is unchanged. Editors' truncate-then-write still works.
    @Test func invalidValuesFailAtWriteOrClose() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let e = "\(mount.path)/Employee/p20"
        let level = try run("cat", ["\(e)/level"]).output
        // printf is a shell builtin: its write(2) fails and it says so; the shell ignores close.
        let abc = try run("bash", ["-c", "printf abc > \(e)/level"])
        #expect(abc.status != 0 && abc.error.contains("Invalid argument"), "printf abc: \(abc.status) \(abc.error)")
        // truncate(1) checks close(2), where the empty value is refused.
        let truncated = try run("truncate", ["-s", "0", "\(e)/level"])
        #expect(
            truncated.status != 0 && truncated.error.contains("Invalid argument"), "truncate -s 0: \(truncated.error)")
        let notUTF8 = try run("bash", ["-c", "printf 'a\\377b' > \(e)/lastName"])
        #expect(
            notUTF8.status != 0 && notUTF8.error.contains("Invalid argument"),
            "bytes that are not UTF-8: \(notUTF8.error)")
        #expect(try run("cat", ["\(e)/level"]).output == level)
        // A number written in pieces, and a truncate followed by a write, are fine; appending to
        // the text a number reads as (with its newline) makes no number.
        let pieces =
            "import os; fd=os.open('\(e)/level', os.O_WRONLY|os.O_TRUNC); os.write(fd, b'1'); os.write(fd, b'0\\n'); os.close(fd)"
        #expect(try run("python3", ["-c", pieces]).status == 0)
        #expect(try run("cat", ["\(e)/level"]).output == "10\n")
        #expect(try run("bash", ["-c", "printf 3 >> \(e)/level"]).status != 0, "10\\n3 is no number")
        #expect(try run("cat", ["\(e)/level"]).output == "10\n")
        #expect(
            try run(
                "python3",
                [
                    "-c",
                    "import os; fd=os.open('\(e)/level', os.O_RDWR); os.ftruncate(fd, 0); os.write(fd, b'9\\n'); os.close(fd)"
                ]
            ).status == 0)
        #expect(try run("vim", ["-e", "-s", "-c", "%s/.*/8/", "-c", "wq", "\(e)/level"]).status == 0)
        try mount.unmount()
        #expect(try stored(mount, "Employee", 20, "level") == .integer(8))
    }

    /// A write strips exactly one `\n`: a `\r` before it is part of the value.
    @Test func aWriteStripsExactlyOneNewline() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let e = "\(mount.path)/Employee/p20"
        #expect(try sh("printf 'X\\r\\n' > \(e)/firstName").status == 0)
        #expect(
            try run("od", ["-An", "-c", "\(e)/firstName"]).output.split(separator: " ").joined(separator: " ")
                == "X \\r \\n\n")
        #expect(try sh("printf 'Y\\n\\n' > \(e)/lastName").status == 0)
        try mount.unmount()
        #expect(try stored(mount, "Employee", 20, "firstName") == .string("X\r"))
        #expect(try stored(mount, "Employee", 20, "lastName") == .string("Y\n"))
    }

    /// A deleted object leaves every to-many folder at once, inverse ones with No Action too, so
    /// `rm -r` of a whole entity's objects and then of everything works.
    @Test func deletedObjectsLeaveInverseFoldersAtOnce() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let m = mount.path
        var project: String?
        for name in try run("ls", ["\(m)/Project"]).lines
        where try !run("ls", ["\(m)/Project/\(name)/milestones"]).lines.isEmpty {
            project = name
            break
        }
        let withMilestones = try #require(project)
        #expect(try sh("rm -r \(m)/Milestone/*").status == 0)
        #expect(
            try run("ls", ["\(m)/Project/\(withMilestones)/milestones"]).lines == [], "Milestone.project has No Action")
        let everything = try sh("rm -rf \(m)/Manager/* \(m)/Employee/* \(m)/Project/* \(m)/Department/*")
        #expect(everything.status == 0, "\(everything.error)")
        try mount.unmount()
        let engine = try mount.engine()
        defer { engine.close() }
        for entity in ["Milestone", "Project", "Employee", "Manager", "Department"] {
            #expect(try engine.newContext().count(of: engine.model.entityID(named: entity)!) == 0, "\(entity)")
        }
    }

    /// A value too big for a write is refused whole: nothing of it is saved, and fsync and close
    /// of that file fail too.
    @Test func aValueRefusedAsTooBigIsNotSavedTruncated() throws {
        let mount = try MountedStore(objects: 300, options: ["max_value_size=1"])
        defer { try? mount.unmount() }
        let file = "\(mount.path)/Employee/p20/lastName"
        let before = try run("cat", [file]).output
        let script = """
            import errno, os, sys
            fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
            chunk = b"x" * 65536
            try:
                for _ in range(32):
                    os.write(fd, chunk)
                print("written")
            except OSError as e:
                print("write", errno.errorcode[e.errno])
            try:
                os.fsync(fd)
                print("fsync ok")
            except OSError as e:
                print("fsync", errno.errorcode[e.errno])
            try:
                os.close(fd)
                print("close ok")
            except OSError as e:
                print("close", errno.errorcode[e.errno])
            """
        let result = try run("python3", ["-c", script, file])
        #expect(result.lines == ["write EFBIG", "fsync EFBIG", "close EFBIG"], "\(result.output)\(result.error)")
        #expect(try run("cat", [file]).output == before)
        try mount.unmount()
        #expect(try stored(mount, "Employee", 20, "lastName").map { ValueTextForm.text(of: $0) + "\n" } == before)
    }
}

/// The text a value reads as (strings as they are), for comparing with `cat`.
enum ValueTextForm {
    static func text(of value: AttributeValue) -> String {
        if case .string(let s) = value { return s }
        return "\(value)"
    }
}
