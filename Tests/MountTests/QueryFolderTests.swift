import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Query folders through the kernel: `.query/ENTITY/PREDICATE/` with ls, cat, find, readlink,
/// and saved queries with setfattr/getfattr (docs/SEMANTICS.md, Query folders).
@Suite(.serialized) struct QueryFolderTests {
    /// The keys `predicate` selects, evaluated in memory on every object (not by the SQL the mount
    /// runs), as the folder's names.
    func reference(_ engine: PersistentStoreCoordinator, _ predicate: String, of entity: String) throws -> [String] {
        let ids = try engine.newContext().objects(
            matching: try PredicateParser.parse(predicate), of: engine.model.entityID(named: entity)!,
            strategy: .inMemory)
        return ids.map(\.key.description).sorted()
    }

    @Test func lsCatAndFindAQueryAndItsResultsFollowAnEdit() throws {
        let mount = try MountedStore(objects: 1_000)
        defer { try? mount.unmount() }
        let predicate = "lastName BEGINSWITH[c] 'b' AND isRemote == NO"
        let folder = "\(mount.path)/.query/Employee/\(predicate)"
        let listed = try run("ls", [folder]).lines.sorted()
        let engine = try mount.engine()
        let wanted = try reference(engine, predicate, of: "Employee")
        #expect(!listed.isEmpty && listed == wanted)
        engine.close()
        #expect(try run("cat", ["\(folder)/.count"]).output == "\(listed.count)\n")
        let json = try run("cat", ["\(folder)/.jsonl"]).lines
        #expect(json.count == listed.count && json.allSatisfy { $0.contains("\"isRemote\":\"false\"") })
        #expect(try run("head", ["-1", "\(folder)/.csv"]).output.hasPrefix("@entity,@uri,"))
        let first = try #require(listed.first)
        #expect(try run("readlink", ["\(folder)/\(first)"]).output.hasPrefix("../../../"))
        #expect(try run("cat", ["\(folder)/\(first)/isRemote"]).output == "false\n", "links lead to the objects")
        // find sees the links, not the computed files; find of the mount does not enter .query.
        #expect(try run("find", [folder, "-type", "l"]).lines.count == listed.count)
        #expect(!(try run("find", [mount.path]).output.contains(".query")))
        #expect(!(try run("ls", ["-a", mount.path]).lines.contains(".query")))

        // An edit shows at once (no commit is awaited), in the links and the count.
        #expect(try sh("echo true > '\(mount.path)/Employee/\(first)/isRemote'").status == 0)
        #expect(!(try run("ls", [folder]).lines.contains(first)), "the edited object left the results")
        #expect(try run("cat", ["\(folder)/.count"]).output == "\(listed.count - 1)\n")
        #expect(try run("stat", ["\(folder)/\(first)"]).status != 0)
    }

    @Test func savedQueriesLongerThanNAMEMAXErrorsAndRefusals() throws {
        let mount = try MountedStore(objects: 500)
        defer { try? mount.unmount() }
        let m = mount.path
        let nobody = (1...40).map { "'nobody\($0)'" }.joined(separator: ", ")
        let long = "isRemote == YES AND NOT (lastName IN {\(nobody)})"
        #expect(try run("ls", ["\(m)/.query/Employee/\(long)"]).error.contains("File name too long"))
        #expect(try run("setfattr", ["-n", "user.query.remote", "-v", long, "\(m)/Employee"]).status == 0)
        #expect(try run("ls", ["\(m)/.query/Employee"]).lines == ["remote"])
        let remote = try run("ls", ["\(m)/.query/Employee/remote"]).lines.sorted()
        let engine = try mount.engine()
        let wanted = try reference(engine, "isRemote == YES", of: "Employee")
        #expect(!remote.isEmpty && remote == wanted)
        engine.close()
        let dump = try run("getfattr", ["-d", "\(m)/Employee"]).output
        #expect(dump.contains("user.query.remote="))
        // Invalid predicates: ENOENT, the reason in the log and in user.storefs.error.
        let typo = try run("ls", ["\(m)/.query/Employee/lastNmae == 'x'"])
        #expect(typo.status != 0 && typo.error.contains("No such file or directory"))
        let reason = try run("getfattr", ["--only-values", "-n", "user.storefs.error", "\(m)/.query/Employee"]).output
        #expect(reason.contains("lastNmae"), "\(reason)")
        #expect(mount.logText.contains("lastNmae"))
        let refused = try run("setfattr", ["-n", "user.query.bad", "-v", "((lastName", "\(m)/Employee"])
        #expect(refused.status != 0 && refused.error.contains("Invalid argument"))
        // Invalid UTF-8 in a name is ENOENT, and the server goes on.
        #expect(try sh("ls \"\(m)/.query/Employee/lastName == '\"$(printf '\\377')\"'\"").status != 0)
        #expect(try run("cat", ["\(m)/.query/Employee/remote/.count"]).output == "\(remote.count)\n")
        // Read-only: no change inside .query.
        #expect(try run("mkdir", ["\(m)/.query/Employee/new"]).error.contains("Operation not permitted"))
        #expect(try sh("echo 1 > '\(m)/.query/Employee/remote/.count'").status != 0)
        #expect(try run("rm", ["\(m)/.query/Employee/remote/\(try #require(remote.first))"]).status != 0)
        // Kept in the store: the next mount has it, and removing it works.
        try mount.unmount()
        try mount.mount()
        #expect(try run("ls", ["\(m)/.query/Employee"]).lines == ["remote"])
        #expect(try run("setfattr", ["-x", "user.query.remote", "\(m)/Employee"]).status == 0)
        #expect(try run("ls", ["\(m)/.query/Employee"]).lines == [])
        #expect(try run("ls", ["\(m)/.query/Employee/remote"]).status != 0)
    }

    /// A real Notes store (Apple's, from the corpus): the notes whose title contains a word,
    /// checked against SQLite itself.
    @Test func notesWhoseTitleContainsAWord() throws {
        let store = Corpus.url("sqlite/RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite")
        let mount = try MountedStore(copying: store, options: ["ro"])
        defer { try? mount.unmount() }
        let folder = "\(mount.path)/.query/ICNote/title CONTAINS[cd] 'NOTE' AND title CONTAINS[cd] 'FOLDER'"
        let listed = try run("ls", [folder]).lines
        let wanted = try run(
            "sqlite3",
            [
                "-batch", "-readonly", mount.store.path,
                "SELECT 'p' || Z_PK FROM ZICCLOUDSYNCINGOBJECT WHERE Z_ENT = (SELECT Z_ENT FROM Z_PRIMARYKEY "
                    + "WHERE Z_NAME = 'ICNote') AND ZTITLE1 LIKE '%note%' AND ZTITLE1 LIKE '%folder%'"
            ]
        ).lines
        #expect(!wanted.isEmpty && listed.sorted() == wanted.sorted())
        let json = try run("cat", ["\(folder)/.json"]).output
        #expect(json.contains("This note is in a folder"))
        #expect(try run("cat", ["\(folder)/.count"]).output == "\(wanted.count)\n")
        let readOnly = try run("setfattr", ["-n", "user.query.x", "-v", "TRUEPREDICATE", "\(mount.path)/ICNote"])
        #expect(readOnly.status != 0 && readOnly.error.contains("Read-only file system"))
    }

    /// An XML store (things-rb's, from the corpus) is evaluated in memory: the folder lists the
    /// objects whose title `cat` shows containing the word.
    @Test func anXMLStoreIsQueriedInMemory() throws {
        let mount = try MountedStore(copying: Corpus.url("xml/haraldmartin_things-rb_Database.xml"))
        defer { try? mount.unmount() }
        let m = mount.path
        var wanted: [String] = []
        for name in try run("ls", ["\(m)/TODO"]).lines {
            let title = try run("cat", ["\(m)/TODO/\(name)/title"])
            if title.status == 0 && title.output.lowercased().contains("e") { wanted.append(name) }
        }
        let listed = try run("ls", ["\(m)/.query/TODO/title CONTAINS[c] 'e'"]).lines
        #expect(!wanted.isEmpty && listed.sorted() == wanted.sorted())
        #expect(try run("cat", ["\(m)/.query/TODO/title CONTAINS[c] 'e'/.count"]).output == "\(wanted.count)\n")
    }

    /// A PostgreSQL store (a server the test starts) evaluates in memory: the folder lists the
    /// employees whose `isRemote` file says true, follows an edit, and a saved query is kept in
    /// the store for the next mount.
    @Test func aPostgreSQLStoreIsQueriedAndKeepsSavedQueries() throws {
        let server = try PostgresServer.shared()
        let url = try PostgresMountTests.sampleStore(objects: 300, server: server, name: "queries")
        var mount = try PostgresMountTests.URLMount(url)
        defer { _ = try? mount.unmount() }
        let m = mount.path
        let remote = try run("sh", ["-c", "grep -lx true '\(m)'/Employee/*/isRemote"]).lines
            .map { $0.split(separator: "/").dropLast().last.map(String.init) ?? "" }.sorted()
        let folder = "\(m)/.query/Employee/isRemote == YES"
        let listed = try run("ls", [folder]).lines.sorted()
        #expect(!remote.isEmpty && listed == remote)
        #expect(try run("cat", ["\(folder)/.count"]).output == "\(remote.count)\n")
        let office = try #require(try run("ls", ["\(m)/Employee"]).lines.first { !remote.contains($0) })
        #expect(try sh("echo true > '\(m)/Employee/\(office)/isRemote'").status == 0)
        #expect(try run("ls", [folder]).lines.contains(office), "an edit shows at once")
        #expect(try run("setfattr", ["-n", "user.query.remote", "-v", "isRemote == YES", "\(m)/Employee"]).status == 0)
        #expect(try mount.unmount().status == 0)
        mount = try PostgresMountTests.URLMount(url)
        #expect(try run("ls", ["\(mount.path)/.query/Employee"]).lines == ["remote"])
        #expect(try run("cat", ["\(mount.path)/.query/Employee/remote/.count"]).output == "\(remote.count + 1)\n")
    }
}
