import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// `storefs diff`, run as a user runs it: the built binary on stores changed by the engine (as an
/// app or a mount would change them) and by sqlite3, of every type, and on a real store.
@Suite struct DiffCommandTests {
    /// Opens `path` with the engine, lets `change` edit it, and saves.
    static func edit(_ path: String, _ change: (ObjectContext, ManagedObjectModel) throws -> Void) throws {
        let coordinator = try PersistentStoreCoordinator.open(
            at: URL(fileURLWithPath: path), types: [SQLiteStoreType()])
        defer { coordinator.close() }
        let context = coordinator.newContext()
        try change(context, coordinator.model)
        try context.save()
    }

    @Test func aStoreAndItsCopiesOfEveryTypeAreTheSame() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 300)
        let binary = try storefsBinary()
        let copy = scratch.path + "/Copy.sqlite"
        try FileManager.default.copyItem(atPath: scratch.store, toPath: copy)
        let xml = scratch.path + "/Library.xml"
        #expect(try run(binary, ["migrate", scratch.store, xml]).succeeded)
        for other in [copy, xml] {
            let diff = try run(binary, ["diff", scratch.store, other])
            #expect(diff.status == 0, "\(other): \(diff.output)\(diff.errorOutput)")
            #expect(diff.output.isEmpty && diff.errorOutput.isEmpty)
        }
    }

    @Test func everyChangeIsNamedWithItsProperties() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 200)
        let changed = scratch.path + "/Changed.sqlite"
        try FileManager.default.copyItem(atPath: scratch.store, toPath: changed)
        var oldLastName = ""
        var oldDepartment = ""
        var inserted = ""
        var project = ""
        try Self.edit(changed) { context, model in
            let employee = ObjectID(entity: model.entityID(named: "Employee")!, key: PrimaryKey(60))
            guard case .string(let last)? = try context.value(of: "lastName", for: employee),
                let department = try context.destination(of: "department", for: employee),
                department.key != PrimaryKey(2),
                try context.value(of: "rating", for: employee) != nil
            else { throw SystemTestError("the sample's Employee/p60 is not as this test expects") }
            oldLastName = last
            oldDepartment = "Department/\(department.key)"
            try context.setValue(.string("Hopper\n"), of: "lastName", for: employee)
            try context.setValue(nil, of: "rating", for: employee)
            try context.setDestination(
                ObjectID(entity: department.entity, key: PrimaryKey(2)), of: "department", for: employee)
            let milestone = try context.insertObject(of: model.entityID(named: "Milestone")!)
            try context.setValue(.string("Launch"), of: "title", for: milestone)
            inserted = "Milestone/\(milestone.key)"
            let deleted = ObjectID(entity: model.entityID(named: "Milestone")!, key: PrimaryKey(3))
            project = "Project/\(try #require(try context.destination(of: "project", for: deleted)).key)"
            try context.delete(deleted)
        }
        let diff = try run(try storefsBinary(), ["diff", scratch.store, changed])
        #expect(diff.status == 1, "diff(1)'s status for stores that differ: \(diff.errorOutput)")
        let lines = diff.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // Entities in the model's order (Department, Milestone, Person's Employee, Project), keys
        // in order within one; a string JSON-quoted, a nil as nil.
        let expected = [
            "~ \(oldDepartment)", "    employees: -Employee/p60",
            "~ Department/p2", "    employees: +Employee/p60",
            "- Milestone/p3",
            "+ \(inserted)",
            "~ Employee/p60", "    lastName: \"\(oldLastName)\" -> \"Hopper\\n\"", "RATING",
            "    department: \(oldDepartment) -> Department/p2",
            "~ \(project)", "    milestones: -Milestone/p3",
            ""
        ]
        #expect(lines.count == expected.count, "\(diff.output)")
        for (line, want) in zip(lines, expected) {
            if want == "RATING" {
                #expect(line.hasPrefix("    rating: ") && line.hasSuffix(" -> nil"), "\(line)")
            } else {
                #expect(line == want, "\(diff.output)")
            }
        }

        let json = try run(try storefsBinary(), ["diff", "--json", scratch.store, changed])
        #expect(json.status == 1)
        let changes = try ExportCommandTests.jsonLines(json.output)
        #expect(changes.count == 6)
        let employee = try #require(changes.first { $0["object"] as? String == "Employee/p60" })
        #expect(employee["change"] as? String == "updated")
        let properties = try #require(employee["properties"] as? [String: [String: Any]])
        #expect(properties["lastName"]?["old"] as? String == oldLastName)
        #expect(properties["lastName"]?["new"] as? String == "Hopper\n")
        #expect(properties["rating"]?["new"] is NSNull)
        #expect(properties["department"]?["old"] as? String == oldDepartment)
        #expect(changes.contains { $0["change"] as? String == "inserted" && $0["object"] as? String == inserted })
        #expect(changes.contains { $0["change"] as? String == "deleted" && $0["object"] as? String == "Milestone/p3" })
        let milestones = try #require(
            changes.first { $0["object"] as? String == project }?["properties"] as? [String: [String: Any]])
        #expect(milestones["milestones"]?["removed"] as? [String] == ["Milestone/p3"])
        let old = try #require(milestones["milestones"]?["old"] as? [String])
        #expect(
            milestones["milestones"]?["new"] as? [String] == old.filter { $0 != "Milestone/p3" },
            "an ordered one's lists")
    }

    @Test func anOrderedRelationshipsNewOrderIsAChangeAcrossStoreTypes() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 100)
        let binary = try storefsBinary()
        let xml = scratch.path + "/Library.xml"
        #expect(try run(binary, ["migrate", scratch.store, xml]).succeeded)
        var order: [ObjectID] = []
        try Self.edit(scratch.store) { context, model in
            let project = ObjectID(entity: model.entityID(named: "Project")!, key: PrimaryKey(1))
            order = try context.destinations(of: "milestones", for: project)
            try context.setDestinations(order.reversed(), of: "milestones", for: project)
        }
        try #require(order.count >= 2)
        let diff = try run(binary, ["diff", xml, scratch.store])
        #expect(diff.status == 1)
        let names = order.map { "Milestone/\($0.key)" }
        #expect(
            diff.output
                == "~ Project/p1\n    milestones: order \(names.joined(separator: " ")) -> \(names.reversed().joined(separator: " "))\n"
        )
    }

    @Test func aRealStoreChangedAsTheAppWouldIsDiffed() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let name = "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"
        let original = try ExportCommandTests.corpusCopy(name, into: scratch)
        let changed = scratch.path + "/Changed.sqlite"
        try FileManager.default.copyItem(atPath: original, toPath: changed)
        var renamed = ""
        try Self.edit(changed) { context, model in
            let folder = try #require(model.entityID(named: "ICFolder"))
            let first = try #require(try context.objectIDs(of: folder).first)
            try context.setValue(.string("Renamed by a test"), of: "title", for: first)
            renamed = "ICFolder/\(first.key)"
        }
        let diff = try run(try storefsBinary(), ["diff", original, changed])
        #expect(diff.status == 1, "\(diff.errorOutput)")
        let lines = diff.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "~ \(renamed)", "\(diff.output)")
        #expect(lines.dropFirst().first?.hasSuffix(" -> \"Renamed by a test\"") == true, "\(diff.output)")
        #expect(lines.dropFirst().first?.hasPrefix("    title: ") == true)
    }

    @Test func troubleIsStatusTwo() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 100)
        let missing = try run(try storefsBinary(), ["diff", scratch.store, scratch.path + "/Missing.sqlite"])
        #expect(missing.status == 2)
        #expect(missing.errorOutput.contains("Missing.sqlite does not exist"), "\(missing.errorOutput)")
        let recipes = try ExportCommandTests.corpusCopy("magicalpanda_MagicalRecord_Recipes.sqlite", into: scratch)
        let other = try run(try storefsBinary(), ["diff", scratch.store, recipes])
        #expect(other.status == 2)
        #expect(other.errorOutput.contains("no entity in common"), "\(other.errorOutput)")
    }
}
