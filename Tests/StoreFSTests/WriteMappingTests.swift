import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Editing through the mapping with the calls the tools make; every answer is kept: a call that
/// returns 0 changed the store (checked after unmounting, through a fresh engine and with sqlite3
/// on the file), and a change that cannot be kept fails at a call the tool checks (write, close,
/// fsync, symlink, rmdir) with the store unchanged. Kernel-free (``KernelMount``); the tools
/// themselves (vim, sed -i, cp, rsync, truncate(1), printf's writes) stay in MountTests'
/// WritePathTests and KeptAnswersTests.
@Suite struct WriteMappingTests {
    /// `ln -sfn TARGET PATH` as coreutils makes it: symlink(2), and where the name exists, a link
    /// under a temporary name in the same folder renamed over it.
    func replaceLink(_ k: EmbeddedKernel, _ target: String, _ path: String) throws(EmbeddedKernel.KernelError) {
        do {
            try k.symlink(target, path)
        } catch  where error.errno == EEXIST {
            let temporary = (path.split(separator: "/").dropLast() + ["CuZ8rT2q"]).joined(separator: "/")
            try k.symlink(target, temporary)
            try k.rename(temporary, path)
        }
    }

    @Test func typedValuesParseAndInvalidOnesAreRefused() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        let e = "Employee/p10"
        try k.write("\(e)/level", Data("7\n".utf8))
        try k.write("\(e)/birthDate", Data("2024-05-01T12:30:00.25+02:00\n".utf8))
        try k.write("\(e)/isRemote", Data("yes\n".utf8))
        try k.write("\(e)/salary", Data("1234.5\n".utf8))
        #expect(try mount.text("\(e)/birthDate") == "2024-05-01T10:30:00.25Z\n")
        #expect(try mount.text("\(e)/isRemote") == "true\n")
        // Refused values fail the write or the close and change nothing.
        for (attribute, text) in [
            ("level", "abc"), ("level", "40000"), ("birthDate", "2024-13-45"), ("salary", "12,5"),
            ("isRemote", "maybe"), ("personID", "not-a-uuid")
        ] {
            let before = try mount.text("\(e)/\(attribute)")
            #expect(errnoOf { try k.write("\(e)/\(attribute)", Data("\(text)\n".utf8)) } == EINVAL, "\(attribute)")
            #expect(try mount.text("\(e)/\(attribute)") == before, "\(attribute) kept its value")
        }
        #expect(mount.logText.contains("is outside -32768...32767"), "the log says why")
        #expect(mount.unmount().isEmpty)
        #expect(try mount.stored("Employee", 10, "level") == .integer(7))
        #expect(try mount.stored("Employee", 10, "isRemote") == .boolean(true))
        #expect(try mount.stored("Employee", 10, "salary") == .decimal(Decimal(string: "1234.5")!))
        #expect(try mount.sqlite("select ZLEVEL, ZISREMOTE from ZPERSON where Z_PK=10") == "7|1")
    }

    @Test func unlinkSetsNilAndIsRefusedForMandatoryAttributes() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        let e = "Employee/p10"
        try k.unlink("\(e)/badgeNumber")
        #expect(!k.exists("\(e)/badgeNumber"))
        #expect(errnoOf { try k.unlink("\(e)/lastName") } == EPERM, "a mandatory value cannot be removed")
        #expect(errnoOf { _ = try k.read("\(e)/lastName") } == nil, "and its file is still there")
        #expect(mount.logText.contains("lastName is not optional and cannot be removed"))
        #expect(mount.unmount().isEmpty)
        #expect(try mount.stored("Employee", 10, "badgeNumber") == nil)
        #expect(try mount.stored("Employee", 10, "lastName") != nil)
    }

    @Test func objectsAndRelationshipsFollowDeleteRulesAndInverses() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        // mkdir: a free key is kept, another name gets the next key.
        try k.mkdir("Department/p900")
        #expect(try k.list("Department/p900") == [], "a new folder looks empty until its first commit")
        try k.fsync("Department/p900")
        #expect(try k.list("Department/p900").sorted() == ["employees", "name", "projects"], "then shows its defaults")
        #expect(try mount.text("Department/p900/name") == "New Department\n")
        #expect(errnoOf { try k.mkdir("Department/p1") } == EEXIST)
        let projects = try k.list("Project").compactMap { PrimaryKey(reference: $0)?.rawValue }
        try k.mkdir("Project/extra")
        let next = "p\(try #require(projects.max()) + 1)"
        #expect(try k.list("Project").contains(next), "a name that is not a key gets the next key")
        #expect(!k.exists("Project/extra"), "and shows under its real name")
        // A link sets a to-one; the inverse follows.
        try replaceLink(k, "../../Department/p900", "Employee/p10/department")
        #expect(try k.readlink("Employee/p10/department") == "../../Department/p900")
        #expect(try k.list("Department/p900/employees") == ["p10"])
        // In a to-many folder, a link adds and unlink removes; the inverse follows.
        try k.symlink("../../../Employee/p11", "Department/p900/employees/p11")
        #expect(try k.readlink("Employee/p11/department") == "../../Department/p900")
        try k.unlink("Department/p900/employees/p10")
        #expect(!k.exists("Employee/p10/department"), "p10 has no department now")
        try k.unlink("Employee/p11/department")
        #expect(try k.list("Department/p900/employees") == [], "p11 left the department's employees")
        // A link to something that is not a Department is refused.
        #expect(errnoOf { try replaceLink(k, "../../Project/p1", "Employee/p12/department") } == EINVAL)
        // Ordered: user.order sets the order.
        let reports = try k.list("Manager/p2/directReports")
        #expect(reports.count > 2)
        let reversed = Array(reports.reversed())
        try k.setxattr("Manager/p2/directReports", "user.order", Data(reversed.joined(separator: " ").utf8))
        #expect(try k.list("Manager/p2/directReports") == reversed)
        // Deny: a department with employees is not deleted, and nothing inside it is lost.
        let employees = try k.list("Department/p1/employees")
        #expect(errnoOf { try k.removeRecursively("Department/p1") } == EPERM)
        #expect(try k.list("Department/p1/employees") == employees)
        #expect(mount.logText.contains("Deny"))
        // Cascade: deleting a project deletes its milestones; Nullify: its members stay.
        let milestones = try k.list("Project/p1/milestones")
        let members = try k.list("Project/p1/members")
        #expect(!milestones.isEmpty && !members.isEmpty)
        try k.removeRecursively("Project/p1")
        for milestone in milestones { #expect(!k.exists("Milestone/\(milestone)")) }
        for member in members {
            #expect(k.exists("Employee/\(member)"))
            #expect(!(try k.list("Employee/\(member)/projects").contains("p1")))
        }
        // rm -r of an object with nothing blocking deletes it.
        try k.removeRecursively("Department/p900")
        #expect(!k.exists("Department/p900"))
        #expect(mount.unmount().isEmpty)

        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let model = engine.model
        // Keys are per inheritance tree: Employee/p10 may be a Manager.
        func id(_ e: String, _ k: Int64) -> ObjectID {
            (try? context.objectID(forKey: PrimaryKey(k), in: model.entityID(named: e)!)) ?? nil
                ?? ObjectID(entity: model.entityID(named: e)!, key: PrimaryKey(k))
        }
        #expect(try !context.exists(id("Department", 900)))
        let nextKey = try #require(PrimaryKey(reference: next))
        #expect(try context.exists(id("Project", nextKey.rawValue)))
        #expect(try context.exists(id("Department", 1)))
        #expect(
            try context.destinations(of: "employees", for: id("Department", 1)).map(\.key.description).sorted()
                == employees.sorted())
        #expect(try !context.exists(id("Project", 1)))
        for milestone in milestones {
            #expect(
                try !context.exists(
                    ObjectID(entity: model.entityID(named: "Milestone")!, key: PrimaryKey(reference: milestone)!)))
        }
        #expect(try context.destination(of: "department", for: id("Employee", 10)) == nil)
        #expect(try context.destinations(of: "directReports", for: id("Manager", 2)).map(\.key.description) == reversed)
        #expect(try mount.sqlite("select count(*) from ZPROJECT where Z_PK=1") == "0")
    }

    /// A link under a name other than `pN` in a to-many folder is the member it names (shown under
    /// its key and saved), and a link replaced over an existing member works; a target outside the
    /// mount, or one that is no object folder, is EINVAL at symlink(2).
    @Test func linksInToManyFoldersBecomeMembersOrAreRefused() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        let projects = "Employee/p20/projects"
        let before = try k.list(projects)
        let target = try #require(try k.list("Project").first { !before.contains($0) })
        try k.symlink("../../../Project/\(target)", "\(projects)/foo")
        #expect(try k.list(projects).sorted() == (before + [target]).sorted(), "listed under its key")
        #expect(k.exists("\(projects)/\(target)"))
        // ln -sfn replaces a link through a temporary name and a rename.
        try replaceLink(k, "../../../Project/\(target)", "\(projects)/\(target)")
        for (name, link) in [
            ("passwd", "/etc/passwd"), ("up", "../../../../../etc"), ("attr", "../../../Project/p1/name")
        ] {
            #expect(errnoOf { try k.symlink(link, "\(projects)/\(name)") } == EINVAL, "\(link)")
            #expect(errnoOf { _ = try k.read("\(projects)/\(name)") } != nil, "nothing is readable under \(name)")
        }
        #expect(try k.list(projects).sorted() == (before + [target]).sorted())
        #expect(mount.unmount().isEmpty)
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let employees = try #require(engine.model.entityID(named: "Employee"))
        let id = try #require(try context.objectID(forKey: PrimaryKey(20), in: employees))
        #expect(
            try context.destinations(of: "projects", for: id).map(\.key.description).sorted()
                == (before + [target]).sorted())
    }

    /// In an object folder a link under another name sets the one to-one relationship that can
    /// hold its target; a target outside the mount, or that no relationship holds, is EINVAL.
    @Test func linksUnderOtherNamesInObjectFoldersSetTheirRelationshipOrAreRefused() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        let employee = "Employee/p20"
        try k.symlink("../../Department/p2", "\(employee)/dept")
        #expect(try k.readlink("\(employee)/department") == "../../Department/p2")
        #expect(!(try k.list(employee).contains("dept")), "shown under the relationship's name")
        for (name, link) in [("passwd", "/etc/passwd"), ("milestone", "../../Milestone/p1")] {
            #expect(errnoOf { try k.symlink(link, "\(employee)/\(name)") } == EINVAL, "\(link)")
            #expect(errnoOf { _ = try k.read("\(employee)/\(name)") } != nil)
        }
        #expect(mount.unmount().isEmpty)
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let employees = try #require(engine.model.entityID(named: "Employee"))
        let id = try #require(try context.objectID(forKey: PrimaryKey(20), in: employees))
        #expect(try context.destination(of: "department", for: id)?.key == PrimaryKey(2))
    }

    /// A write strips exactly one `\n`: a `\r` before it is part of the value.
    @Test func aWriteStripsExactlyOneNewline() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        try k.write("Employee/p20/firstName", Data("X\r\n".utf8))
        #expect(try k.read("Employee/p20/firstName") == Data("X\r\n".utf8))
        try k.write("Employee/p20/lastName", Data("Y\n\n".utf8))
        #expect(mount.unmount().isEmpty)
        #expect(try mount.stored("Employee", 20, "firstName") == .string("X\r"))
        #expect(try mount.stored("Employee", 20, "lastName") == .string("Y\n"))
    }

    /// A deleted object leaves every to-many folder at once, inverse ones with No Action too, so
    /// `rm -r` of a whole entity's objects and then of everything works.
    @Test func deletedObjectsLeaveInverseFoldersAtOnce() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        let withMilestones = try #require(
            try k.list("Project").first { try !k.list("Project/\($0)/milestones").isEmpty })
        /// `rm -r[f] A/* B/*`: the shell expands every pattern first, then one rm removes each path;
        /// with `force`, a path already gone is no error.
        func rm(_ folders: [String], force: Bool) throws {
            let paths = try folders.flatMap { folder in try k.list(folder).map { "\(folder)/\($0)" } }
            try k.asOneProcess {
                for path in paths {
                    do {
                        try k.removeRecursively(path)
                    } catch  where force && (error as? EmbeddedKernel.KernelError)?.errno == ENOENT {
                        continue
                    }
                }
            }
        }
        try rm(["Milestone"], force: false)
        #expect(try k.list("Project/\(withMilestones)/milestones") == [], "Milestone.project has No Action")
        try rm(["Manager", "Employee", "Project", "Department"], force: true)
        #expect(mount.unmount().isEmpty)
        let engine = try mount.engine()
        defer { engine.close() }
        for entity in ["Milestone", "Project", "Employee", "Manager", "Department"] {
            let id = try #require(engine.model.entityID(named: entity))
            #expect(try engine.newContext().count(of: id) == 0, "\(entity)")
        }
    }

    /// A value too big for a write is refused whole: nothing of it is saved, and fsync and close
    /// of that file fail too.
    @Test func aValueRefusedAsTooBigIsNotSavedTruncated() throws {
        let mount = try KernelMount(objects: 300) { $0.maximumValueSize = 1 << 20 }  // -o max_value_size=1
        let k = mount.kernel
        let file = "Employee/p20/lastName"
        let before = try mount.text(file)
        let opened = try k.openFile(file, writing: true, reading: false, truncating: true)
        let chunk = Data(repeating: UInt8(ascii: "x"), count: 65536)
        var written = 0
        let write = errnoOf {
            for _ in 0..<32 {
                try k.write(opened, chunk, at: UInt64(written))
                written += chunk.count
            }
        }
        #expect(write == EFBIG, "write")
        #expect(errnoOf { try k.fsync(opened) } == EFBIG, "fsync")
        #expect(errnoOf { try k.closeFile(opened) } == EFBIG, "close")
        #expect(try mount.text(file) == before)
        #expect(mount.unmount().isEmpty)
        #expect(try mount.stored("Employee", 20, "lastName").map { ValueText.text(of: $0) + "\n" } == before)
    }

    /// A value at the in-row limit (64 MiB), written as cp and cat write it (128 KiB at a time),
    /// lands whole. Each write goes into the handle's buffer in place; when each write copied the
    /// buffer (8 GiB copied for this value) it took minutes in a debug build.
    @Test func aValueAtTheLimitWrittenPieceByPieceLandsWhole() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        let file = "Employee/p20/firstName"
        let size = 64 << 20
        let piece = 128 << 10
        let opened = try k.openFile(file, writing: true, reading: false, truncating: true)
        var chunk = Data(repeating: UInt8(ascii: "x"), count: piece)
        for offset in stride(from: 0, to: size, by: piece) {
            if offset + piece == size { chunk[chunk.count - 1] = UInt8(ascii: "\n") }
            try k.write(opened, chunk, at: UInt64(offset))
        }
        try k.closeFile(opened)
        #expect(mount.unmount().isEmpty)
        // Every byte an x, the newline stripped (counted by sqlite3: a debug build's loop over 64 MiB
        // would take longer than the writes).
        #expect(
            try mount.sqlite(
                "select length(ZFIRSTNAME), length(replace(ZFIRSTNAME, 'x', '')) from ZPERSON where Z_PK = 20")
                == "\(size - 1)|0")
    }

    /// Writes past the end leave zeros between, writes inside replace what they cover: in an
    /// attribute's buffer and in an editor's scratch file alike (both written in place).
    @Test func writesAtOffsetsFillGapsWithZerosAndReplaceInside() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        for path in ["Employee/p20/firstName", "Employee/p20/.firstName.swp"] {
            let file = try k.openFile(path, writing: true, truncating: true, creating: true)
            try k.write(file, Data("abc".utf8), at: 0)
            try k.write(file, Data("Z".utf8), at: 6)
            try k.write(file, Data("XY".utf8), at: 1)
            try k.write(file, Data("!\n".utf8), at: 7)
            #expect(try k.read(file, at: 0, size: 100) == Data("aXY\0\0\0Z!\n".utf8), "\(path)")
            try k.closeFile(file)
        }
        #expect(try mount.text("Employee/p20/firstName") == "aXY\0\0\0Z!\n")
        #expect(mount.unmount().isEmpty)
        #expect(try mount.stored("Employee", 20, "firstName") == .string("aXY\0\0\0Z!"))
    }

    /// fsync says when a value cannot be saved (its object is invalid) and takes the value back;
    /// once the object is valid the same fsync saves.
    @Test func fsyncReportsAValueThatCannotBeSavedAndTakesItBack() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        try k.mkdir("Employee/p7000")
        /// open(O_WRONLY|O_CREAT|O_TRUNC), write, fsync (its errno), close.
        func fsyncedWrite(_ path: String, _ text: String) throws -> Int32? {
            let file = try k.openFile(path, writing: true, reading: false, truncating: true, creating: true)
            try k.write(file, Data(text.utf8), at: 0)
            let result = errnoOf { try k.fsync(file) }
            _ = errnoOf { try k.closeFile(file) }
            return result
        }
        // lastName is still "" (below its minimum): the object cannot be saved, so firstName's value
        // is not saved either: fsync says so and the value is taken back.
        #expect(try fsyncedWrite("Employee/p7000/firstName", "Ada\n") == EINVAL)
        #expect(try mount.text("Employee/p7000/firstName") == "\n", "taken back")
        #expect(
            String(decoding: try k.getxattr("Employee/p7000", "user.storefs.error"), as: UTF8.self).contains("lastName")
        )
        // With lastName set, the same fsync saves.
        try k.write("Employee/p7000/lastName", Data("Lovelace\n".utf8))
        #expect(try fsyncedWrite("Employee/p7000/firstName", "Ada\n") == nil)
        #expect(try mount.sqlite("select ZFIRSTNAME, ZLASTNAME from ZPERSON where Z_PK = 7000") == "Ada|Lovelace")
        #expect(mount.finish().isEmpty)
    }

    @Test func aDeleteRefusedByDenyLeavesEveryRowAsItWas() throws {
        let mount = try KernelMount(objects: 300)
        let k = mount.kernel
        let dump =
            "select * from ZDEPARTMENT where Z_PK = 2; select Z_PK, Z_OPT, ZDEPARTMENT from ZPERSON where ZDEPARTMENT = 2 order by Z_PK; select Z_PK, Z_OPT, ZDEPARTMENT from ZPROJECT where ZDEPARTMENT = 2 order by Z_PK"
        let before = try mount.sqlite(dump)
        #expect(errnoOf { try k.removeRecursively("Department/p2") } == EPERM)
        #expect(try k.list("Department/p2").contains("employees"))
        #expect(mount.unmount().isEmpty)
        #expect(try mount.sqlite(dump) == before, "rows, keys and Z_OPT as they were")
    }
}
