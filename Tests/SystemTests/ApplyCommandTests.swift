import Foundation
import TestSupport
import Testing

/// `storefs apply` replays a patch only where a mount would have done what it says: a patch is a
/// file anyone can edit.
@Suite struct ApplyCommandTests {
    static func write(_ patch: String, to path: String, uuid: String) throws {
        let text = """
            {"storefs": "patch", "version": 1, "store": "Library.sqlite", "storeUUID": "\(uuid)", "read": [],
             "written": "", "toMany": [], "unsaved": [], \(patch)}
            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test func aPatchDoingWhatAMountRefusesIsRefusedWhole() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let binary = try storefsBinary()
        let info = try run(binary, ["info", "--json", scratch.store])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(info.output.utf8)) as? [String: Any])
        let uuid = try #require(json["uuid"] as? String)
        let sqlite3 = try tool("sqlite3", package: "sqlite3")
        func highestKey() throws -> String {
            try run(sqlite3, [scratch.store, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Person'"]).output
        }
        let keyBefore = try highestKey()
        let refused = [
            // The next open would lose the model storefs keeps in the store.
            #""objects": [], "metadata": {"StoreFSModel": {"string": "<model/>"}}"#,
            #""objects": [], "metadata": {"NSStoreModelVersionHashes": null}"#,
            // Z_MAX would become Int64.max: no object could ever be made again.
            """
            "metadata": {}, "objects": [{"object": "Employee/p9223372036854775807", "change": "inserted", "toOne": {},
              "attributes": {"firstName": {"to": {"text": "Big"}}, "lastName": {"to": {"text": "Key"}}}}]
            """,
            """
            "metadata": {}, "objects": [{"object": "Employee/p6", "change": "updated", "version": 1, "toOne": {},
              "attributes": {"level": {"to": {"text": "99"}, "from": {"text": "3"}}}}]
            """,
            // An object of an abstract entity, and one without its mandatory lastName.
            #""metadata": {}, "objects": [{"object": "Person/p5000", "change": "inserted", "toOne": {}, "attributes": {}}]"#,
            """
            "metadata": {}, "objects": [{"object": "Employee/p5000", "change": "inserted", "toOne": {},
              "attributes": {"firstName": {"to": {"text": "Ada"}}}}]
            """,
            #""objects": [], "metadata": {"NSStoreUUID": {"string": "0"}}"#
        ]
        for (index, patch) in refused.enumerated() {
            let path = scratch.path + "/refused-\(index).json"
            try Self.write(patch, to: path, uuid: uuid)
            let applied = try run(binary, ["apply", path, scratch.store])
            #expect(applied.status == 1, "patch \(index) was applied: \(applied.output)")
            #expect(applied.errorOutput.contains("nothing of"), "patch \(index): \(applied.errorOutput)")
        }
        let after = try run(binary, ["info", scratch.store])
        #expect(after.output.contains("kept by storefs"), "the store keeps its model: \(after.output)")
        #expect(try highestKey() == keyBefore, "Z_MAX is as it was")
        // What a mount does is applied.
        let row = try run(sqlite3, [scratch.store, "SELECT Z_OPT, ZLEVEL FROM ZPERSON WHERE Z_PK = 6"]).output
            .trimmingCharacters(in: .newlines).split(separator: "|")
        let path = scratch.path + "/fine.json"
        try Self.write(
            """
            "metadata": {"reviewer": {"string": "Ada"}}, "objects": [{"object": "Employee/p6", "change": "updated",
              "version": \(row[0]), "toOne": {}, "attributes": {"level": {"to": {"text": "9"}, "from": {"text": "\(row[1])"}}}}]
            """, to: path, uuid: uuid)
        let applied = try run(binary, ["apply", path, scratch.store])
        #expect(applied.succeeded, "\(applied.errorOutput)")
        #expect(try run(sqlite3, [scratch.store, "SELECT ZLEVEL FROM ZPERSON WHERE Z_PK = 6"]).output == "9\n")
    }
}
