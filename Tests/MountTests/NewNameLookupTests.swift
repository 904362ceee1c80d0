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
        let started = Date()
        let stat = try sh("for k in $(seq 900001 900100); do stat \(milestones)/p$k 2>/dev/null && echo found; done")
        #expect(stat.output.isEmpty, "no new name exists: \(stat.output.prefix(200))")
        // The only requests meanwhile are the change poll's, about one a second (each lookup
        // asked once before).
        let asked = try mount.storeRequests() - before
        let polls = Int(Date().timeIntervalSince(started)) + 2
        #expect(asked <= polls, "100 lookups of new names asked the store \(asked) times in \(polls - 2) s")
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
        func insert(_ key: Int) throws {
            let result = try run(
                "sqlite3",
                [
                    mount.store.path,
                    "PRAGMA busy_timeout = 5000; BEGIN; INSERT INTO ZMILESTONE (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZDONE) VALUES (\(key), \(entity), 1, 'Outside \(key)', 0); UPDATE Z_PRIMARYKEY SET Z_MAX = \(key) WHERE Z_ENT = \(entity); COMMIT;"
                ])
            #expect(result.status == 0, "sqlite3: \(result.error)")
        }
        try insert(900_200)
        #expect(
            eventuallyTrue(timeout: 10) {
                (try? run("cat", ["\(milestones)/p900200/title"]).output) == "Outside 900200\n"
            }, "the other process's object shows: \(mount.logText.suffix(800))")
        // A listing that shows a name makes it found at once, whether or not the poll saw the
        // commit yet.
        try insert(900_300)
        let listed = try run("ls", [milestones]).lines
        #expect(listed.contains("p900300") && listed.contains("p900200") && listed.contains("p900050"))
        #expect(try run("cat", ["\(milestones)/p900300/title"]).output == "Outside 900300\n")
    }
}
