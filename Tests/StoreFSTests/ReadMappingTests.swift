import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Reading the sample store through the mapping, checked against what the engine holds: the
/// names `ls` and `find` would list, the bytes `cat` and the sizes `stat` would give, link
/// targets, xattrs. Kernel-free (``KernelMount``); what needs the kernel (the page cache, tools'
/// request counts, concurrent readers) stays in MountTests' ReadPathTests.
@Suite struct ReadMappingTests {
    /// Read-only mounts list from a listing kept per directory, read-write ones per handle: the
    /// same names either way, over the many pages of an 850-entry directory.
    @Test(arguments: [false, true])
    func listingsShowEntitiesAndTheirObjects(readOnly: Bool) throws {
        let mount = try KernelMount(objects: 1_000, readOnly: readOnly)
        let k = mount.kernel
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        // `ls` shows no dot names.
        #expect(try k.list("").filter { !$0.hasPrefix(".") }.sorted() == engine.model.entities.map(\.name).sorted())
        for entity in engine.model.entities {
            let expected = try context.objectIDs(of: entity.id, includingSubentities: true).map(\.key.description)
                .sorted()
            #expect(try k.list(entity.name).sorted() == expected, "listing of \(entity.name)")
        }
        #expect(mount.finish().isEmpty)
    }

    @Test func filesAndSizesAreTheValuesTheStoreHolds() throws {
        let mount = try KernelMount(objects: 500)
        let k = mount.kernel
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let model = engine.model
        let employees = try context.objectIDs(of: try #require(model.entityID(named: "Employee")))
        for id in employees.prefix(12) {
            let folder = "Employee/\(id.key)"
            let snapshot = try #require(try context.snapshot(of: id))
            // `find FOLDER -maxdepth 1 -type f`: the regular files, links not followed.
            let files = try k.list(folder).filter { try k.stat("\(folder)/\($0)").kind == .regularFile }.sorted()
            #expect(files == snapshot.attributes.keys.sorted(), "the files are the non-nil attributes of \(id)")
            for attribute in model[id.entity].persistentAttributes {
                guard let value = snapshot.attributes[attribute.name] else { continue }
                let expected = ValueText.content(of: value, type: attribute.type)
                let path = "\(folder)/\(attribute.name)"
                #expect(try k.read(path) == expected, "\(path)")
                #expect(try k.stat(path).size == UInt64(expected.count), "stat size of \(path)")
                if ValueText.isText(attribute.type) {
                    #expect(try mount.text(path) == ValueText.text(of: value) + "\n")
                }
            }
        }
        #expect(mount.finish().isEmpty)
    }

    @Test func relationshipsAreLinksAndFoldersOfLinks() throws {
        let mount = try KernelMount(objects: 500)
        let k = mount.kernel
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let model = engine.model
        let employee = try context.objectIDs(of: try #require(model.entityID(named: "Employee")))[3]
        let department = try #require(try context.destination(of: "department", for: employee))
        #expect(try k.readlink("Employee/\(employee.key)/department") == "../../Department/\(department.key)")
        #expect(
            try mount.text("Employee/\(employee.key)/department/name")
                == ValueText.text(of: try #require(try context.value(of: "name", for: department))) + "\n")

        let members = try context.destinations(of: "employees", for: department)
        #expect(
            try k.list("Department/\(department.key)/employees").sorted() == members.map(\.key.description).sorted())
        #expect(
            try k.readlink("Department/\(department.key)/employees/\(members[0].key)")
                == "../../../\(model[members[0].entity].name)/\(members[0].key)")

        // An ordered relationship lists in its order (the directory's order, what `ls -U` keeps)
        // and says it in user.order.
        let manager = try context.objectIDs(of: try #require(model.entityID(named: "Manager")))[1]
        let reports = try context.destinations(of: "directReports", for: manager).map(\.key.description)
        #expect(reports.count > 1)
        #expect(try k.list("Manager/\(manager.key)/directReports") == reports)
        #expect(
            String(decoding: try k.getxattr("Manager/\(manager.key)/directReports", "user.order"), as: UTF8.self)
                == reports.joined(separator: " "))
        #expect(mount.finish().isEmpty)
    }

    @Test func subentityObjectsAppearOnceAsFoldersAndAsLinksInAncestors() throws {
        let mount = try KernelMount(objects: 500)
        let k = mount.kernel
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let model = engine.model
        let managers = try context.objectIDs(of: try #require(model.entityID(named: "Manager")))
        let employees = try context.objectIDs(of: try #require(model.entityID(named: "Employee")))
        let manager = managers[0]
        /// The entries of `folder` of `kind` (what `find FOLDER -maxdepth 1 -type d|l` lists).
        func entries(_ folder: String, _ kind: NodeKind) throws -> [String] {
            try k.list(folder).filter { try k.stat("\(folder)/\($0)").kind == kind }
        }
        let folders = try ["Person", "Employee", "Manager"].flatMap { entity in
            try entries(entity, .directory).filter { $0 == manager.key.description }.map { "\(entity)/\($0)" }
        }
        #expect(folders == ["Manager/\(manager.key)"], "one folder for the object")
        for ancestor in ["Employee", "Person"] {
            #expect(try k.readlink("\(ancestor)/\(manager.key)") == "../Manager/\(manager.key)")
        }
        #expect(try entries("Person", .symbolicLink).count == managers.count + employees.count)
        #expect(try entries("Employee", .symbolicLink).count == managers.count)
        #expect(mount.finish().isEmpty)
    }

    @Test func missingNamesAreENOENT() throws {
        let mount = try KernelMount(objects: 200)
        for path in [
            "NoSuchEntity", "Employee/p999999", "Employee/x1", "Employee/p6/noSuchAttribute",
            "Department/p1/employees/p999999"
        ] {
            #expect(errnoOf { _ = try mount.kernel.stat(path) } == ENOENT, "\(path)")
        }
        #expect(mount.finish().isEmpty)
    }
}
