import Foundation
import Testing

/// Names of objects that do not exist yet (what `cp -a` looks up before each mkdir): answered
/// from memory where the key is above every key the store handed out, and still found once
/// another process adds such an object.
@Suite(.serialized) struct NewNameLookupTests {
    @Test func newNamesAreAnsweredWithoutTheStoreAndAnotherProcessesObjectStillShows() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let milestones = "\(mount.path)/Milestone"
        // The first lookup of a new name learns the tree's highest key (one request at most).
        #expect(try run("stat", ["\(milestones)/p900000"]).status != 0)
        let before = try mount.storeRequests()
        let stat = try sh("for k in $(seq 900001 900100); do stat \(milestones)/p$k 2>/dev/null && echo found; done")
        #expect(stat.output.isEmpty, "no new name exists: \(stat.output.prefix(200))")
        #expect(try mount.storeRequests() - before == 0, "100 lookups of new names asked the store")
        // Names already taken are still found, including ones made here and not committed yet.
        #expect(try run("stat", ["\(milestones)/p1"]).status == 0)
        #expect(try run("mkdir", ["\(milestones)/p900050"]).status == 0)
        #expect(try run("stat", ["\(milestones)/p900050"]).status == 0)
        #expect(try sh("echo Made > \(milestones)/p900050/title && sync \(milestones)").status == 0)
        #expect(try run("cat", ["\(milestones)/p900050/title"]).output == "Made\n")

        // Another process (sqlite3 as a Core Data app would write) adds key 900200, above what the
        // mount knew: the mount's poll sees the commit and the name appears.
        let entity = try run(
            "sqlite3", [mount.store.path, "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Milestone'"]
        ).output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!entity.isEmpty)
        let insert = try run(
            "sqlite3",
            [
                mount.store.path,
                "PRAGMA busy_timeout = 5000; BEGIN; INSERT INTO ZMILESTONE (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZDONE) VALUES (900200, \(entity), 1, 'Outside', 0); UPDATE Z_PRIMARYKEY SET Z_MAX = 900200 WHERE Z_ENT = \(entity); COMMIT;"
            ])
        #expect(insert.status == 0, "sqlite3: \(insert.error)")
        #expect(
            eventuallyTrue(timeout: 10) { (try? run("cat", ["\(milestones)/p900200/title"]).output) == "Outside\n" },
            "the other process's object shows: \(mount.logText.suffix(800))")
        let listed = try run("ls", [milestones]).lines
        #expect(listed.contains("p900200") && listed.contains("p900050"))
    }
}
