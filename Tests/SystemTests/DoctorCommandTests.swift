import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `storefs doctor` on stores that rot as real ones do (docs/HEALTH.md): orphans of every kind
/// made by plain SQL and by a writer killed part-way, a history of a million changes, Maccy's
/// nullified owners; every count checked against SQL written here, independently of the SQL
/// storefs runs; `--fix` checked to leave the same live objects, a backup, and a store that
/// mounts.
@Suite struct DoctorCommandTests {
    // MARK: - Helpers

    /// Runs sqlite3 on `store` (bail on the first error); returns its output.
    @discardableResult
    static func sql(_ store: String, _ script: String) throws -> String {
        let result = try run(try tool("sqlite3", package: "sqlite3"), ["-bail", store, script])
        guard result.succeeded else { throw SystemTestError("sqlite3 \(store): \(result.errorOutput)\n\(script)") }
        return result.output
    }

    /// One number sqlite3 prints.
    static func count(_ store: String, _ query: String) throws -> Int {
        let text = try sql(store, query).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let value = Int(text) else { throw SystemTestError("not a number from \(query): \(text)") }
        return value
    }

    /// `storefs doctor ARGS --json`: the exit status and the JSON.
    static func doctor(_ arguments: [String]) throws -> (status: Int32, json: [String: Any], errors: String) {
        let result = try run(try storefsBinary(), ["doctor", "--json"] + arguments)
        let object = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any]
        guard let object else {
            throw SystemTestError(
                "doctor \(arguments) printed no JSON (\(result.status)): \(result.output)\n\(result.errorOutput)")
        }
        return (result.status, object, result.errorOutput)
    }

    static func number(_ json: [String: Any], _ path: String) -> Int? {
        var current: Any? = json
        for key in path.split(separator: ".") { current = (current as? [String: Any])?[String(key)] }
        return (current as? NSNumber)?.intValue
    }

    /// Every live object as `Z_ENT/Z_PK`, sorted: what a fix must keep.
    static func liveObjects(_ store: String, tables: [String]) throws -> [String] {
        try tables.flatMap { table in
            try sql(store, "SELECT Z_ENT || '/' || Z_PK FROM \(table)").split(separator: "\n").map(String.init)
        }.sorted()
    }

    // The sample store's references, written out by hand from its schema (Z_ENT 1 Department,
    // 2 Milestone, 3 Person, 4 Employee, 5 Manager, 6 Project; join table Z_4PROJECTS).
    static let sampleTables = ["ZDEPARTMENT", "ZMILESTONE", "ZPERSON", "ZPROJECT"]
    static let danglingToOneSQL = """
        SELECT (SELECT COUNT(*) FROM ZPERSON WHERE Z_ENT IN (4, 5) AND ZDEPARTMENT IS NOT NULL AND ZDEPARTMENT NOT IN (SELECT Z_PK FROM ZDEPARTMENT))
         + (SELECT COUNT(*) FROM ZPERSON WHERE Z_ENT IN (4, 5) AND ZMANAGER IS NOT NULL AND ZMANAGER NOT IN (SELECT Z_PK FROM ZPERSON WHERE Z_ENT = 5))
         + (SELECT COUNT(*) FROM ZPERSON WHERE Z_ENT = 5 AND ZHEADOF IS NOT NULL AND ZHEADOF NOT IN (SELECT Z_PK FROM ZDEPARTMENT))
         + (SELECT COUNT(*) FROM ZDEPARTMENT WHERE ZHEAD IS NOT NULL AND ZHEAD NOT IN (SELECT Z_PK FROM ZPERSON WHERE Z_ENT = 5))
         + (SELECT COUNT(*) FROM ZPROJECT WHERE ZDEPARTMENT IS NOT NULL AND ZDEPARTMENT NOT IN (SELECT Z_PK FROM ZDEPARTMENT))
         + (SELECT COUNT(*) FROM ZMILESTONE WHERE ZPROJECT IS NOT NULL AND ZPROJECT NOT IN (SELECT Z_PK FROM ZPROJECT))
        """
    static let danglingJoinRowsSQL = """
        SELECT COUNT(*) FROM Z_4PROJECTS WHERE Z_4MEMBERS NOT IN (SELECT Z_PK FROM ZPERSON WHERE Z_ENT IN (4, 5))
         OR Z_6PROJECTS NOT IN (SELECT Z_PK FROM ZPROJECT)
        """

    // MARK: - Orphans made by plain SQL

    @Test func orphansMadeByPlainSQLAreCountedAsSQLCountsThemAndFixed() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 300)
        let store = scratch.store
        // An employee in a project who manages no one, and one whose department will go (and whose
        // projects stay: its version then moves once, for the department alone).
        let member = try Self.count(
            store,
            "SELECT MIN(Z_4MEMBERS) FROM Z_4PROJECTS WHERE Z_4MEMBERS IN (SELECT Z_PK FROM ZPERSON WHERE Z_ENT = 4)")
        let orphaned = try Self.count(
            store,
            "SELECT MIN(Z_PK) FROM ZPERSON WHERE Z_ENT = 4 AND ZDEPARTMENT = 1 AND Z_PK NOT IN (SELECT Z_4MEMBERS FROM Z_4PROJECTS WHERE Z_6PROJECTS = 2)"
        )
        let versionBefore = try Self.count(store, "SELECT Z_OPT FROM ZPERSON WHERE Z_PK = \(orphaned)")
        let valid = try Self.count(
            store, "SELECT MIN(Z_PK) FROM ZPERSON WHERE Z_ENT = 4 AND Z_PK NOT IN (\(member), \(orphaned))")
        let odd = try Self.count(
            store, "SELECT MIN(Z_PK) FROM ZPERSON WHERE Z_ENT = 4 AND Z_PK NOT IN (\(member), \(orphaned), \(valid))")
        // What an app that deletes with plain SQL (or NSBatchDeleteRequest, which skips the delete
        // rules) leaves, and values another tool wrote.
        try Self.sql(
            store,
            """
            DELETE FROM ZDEPARTMENT WHERE Z_PK = 1;
            DELETE FROM ZPROJECT WHERE Z_PK = 2;
            DELETE FROM ZPERSON WHERE Z_PK = \(member);
            INSERT INTO Z_4PROJECTS VALUES (99998, 99997);
            INSERT INTO ZPERSON (Z_PK, Z_ENT, Z_OPT) VALUES (100000, 42, 1);
            UPDATE ZPERSON SET ZLASTNAME = NULL WHERE Z_PK = \(valid);
            UPDATE ZPERSON SET ZLEVEL = 70000 WHERE Z_PK = \(odd);
            UPDATE ZPROJECT SET ZDEPARTMENT = NULL WHERE Z_PK = 3;
            """)
        let toOne = try Self.count(store, Self.danglingToOneSQL)
        let toMany = try Self.count(store, Self.danglingJoinRowsSQL)
        let unknownRows = try Self.count(store, "SELECT COUNT(*) FROM ZPERSON WHERE Z_ENT NOT IN (3, 4, 5)")
        let unowned = try Self.count(store, "SELECT COUNT(*) FROM ZPROJECT WHERE ZDEPARTMENT IS NULL")
        #expect(toOne > 3 && toMany > 2 && unknownRows == 1 && unowned == 1, "the SQL made orphans of every kind")

        let (status, json, _) = try Self.doctor([store])
        #expect(status == 1, "findings exit 1")
        #expect(Self.number(json, "orphans.toOne") == toOne)
        #expect(Self.number(json, "orphans.toMany") == toMany)
        #expect(Self.number(json, "orphans.rows") == unknownRows)
        #expect(Self.number(json, "orphans.unowned") == unowned)
        #expect(Self.number(json, "orphans.externalData") == 0)
        #expect(Self.number(json, "violations.total") == 2, "a nil lastName and a level past Integer 16")
        let byEntity = (json["violations"] as? [String: Any])?["byEntity"] as? [String: [String: [String: Any]]]
        let problems = byEntity?.values.flatMap { $0 }
        #expect(problems?.contains { $0.key == "lastName" && ($0.value["nil"] as? Int) == 1 } == true)
        #expect(problems?.contains { $0.key == "level" && ($0.value["range"] as? Int) == 1 } == true)
        for (entity, table, zents) in [
            ("Employee", "ZPERSON", "4"), ("Manager", "ZPERSON", "5"), ("Department", "ZDEPARTMENT", "1"),
            ("Project", "ZPROJECT", "6"), ("Milestone", "ZMILESTONE", "2")
        ] {
            #expect(
                Self.number(json, "entities.\(entity).objects")
                    == (try Self.count(store, "SELECT COUNT(*) FROM \(table) WHERE Z_ENT IN (\(zents))")), "\(entity)")
        }
        #expect((json["integrity"] as? [String: Any])?["ok"] as? Bool == true)

        // The fix: a backup, dangling references gone by saves, the same live objects.
        let live = try Self.liveObjects(store, tables: Self.sampleTables)
        let joinRows = try Self.count(store, "SELECT COUNT(*) FROM Z_4PROJECTS")
        let fixed = try Self.doctor(["--fix", store])
        #expect(fixed.status == 1, "values that break the model, rows of an unknown entity and an unowned project stay")
        let repair = fixed.json["repair"] as? [String: Any]
        #expect(repair?["toOneNullified"] as? Int == toOne)
        #expect(((repair?["toManyRemoved"] as? Int) ?? 0) + ((repair?["joinRowsRemoved"] as? Int) ?? 0) == toMany)
        #expect(try Self.count(store, Self.danglingToOneSQL) == 0)
        #expect(try Self.count(store, Self.danglingJoinRowsSQL) == 0)
        #expect(Self.number(fixed.json, "orphans.toOne") == 0 && Self.number(fixed.json, "orphans.toMany") == 0)
        #expect(try Self.liveObjects(store, tables: Self.sampleTables) == live, "every live object is still there")
        #expect(
            try Self.count(store, "SELECT Z_OPT FROM ZPERSON WHERE Z_PK = \(orphaned) AND ZDEPARTMENT IS NULL")
                == versionBefore + 1,
            "a nullified to-one bumps its object's version, as Core Data's Nullify does")
        #expect(try Self.sql(store, "PRAGMA integrity_check") == "ok\n")
        let backup = try #require(repair?["backup"] as? String)
        #expect(backup == scratch.path + "/Library.pre-doctor.sqlite")
        #expect(
            try Self.count(backup, "SELECT COUNT(*) FROM Z_4PROJECTS") == joinRows, "the backup is the store as it was")
        #expect(try Self.count(backup, Self.danglingToOneSQL) == toOne)

        // The fixed store mounts, and shows what the SQL says.
        let mounted = try run(try storefsBinary(), ["mount", "-o", "ro", store, scratch.mountPoint])
        #expect(mounted.succeeded, "\(mounted.errorOutput)")
        defer { _ = try? run("/usr/bin/fusermount3", ["-u", scratch.mountPoint]) }
        let employees = try FileManager.default.contentsOfDirectory(atPath: scratch.mountPoint + "/Employee")
        #expect(employees.count == (try Self.count(store, "SELECT COUNT(*) FROM ZPERSON WHERE Z_ENT IN (4, 5)")))
        #expect(
            (try? FileManager.default.destinationOfSymbolicLink(
                atPath: scratch.mountPoint + "/Employee/p\(orphaned)/department")) == nil,
            "the nullified department is no link")
    }

    // MARK: - Orphans made by a writer killed part-way

    @Test func orphansOfAWriterKilledPartWayAreFoundAndFixed() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 300)
        let store = scratch.store
        // A photo large enough for external storage, written through a mount: its file is the
        // store's own.
        #expect(try run(try storefsBinary(), ["mount", store, scratch.mountPoint]).succeeded)
        #expect(
            try shell("head -c 200000 /dev/urandom > \(quoted(scratch.mountPoint + "/Employee/p10/photo"))").succeeded)
        #expect(try run(try storefsBinary(), ["unmount", scratch.mountPoint]).succeeded)
        let external = scratch.path + "/.Library_SUPPORT/_EXTERNAL_DATA"
        #expect(try FileManager.default.contentsOfDirectory(atPath: external).count == 1)
        // The writer: deletes departments one transaction at a time, as a batch delete does,
        // then starts writing a value to external storage (the file first, the row after, as
        // Core Data does) and is killed before it commits.
        let script = """
            import os, sqlite3, sys, time, uuid
            store, external = sys.argv[1], sys.argv[2]
            db = sqlite3.connect(store, isolation_level=None)
            for key in (1, 2):
                db.execute("DELETE FROM ZDEPARTMENT WHERE Z_PK = ?", (key,))
                print("deleted", key, flush=True)
            name = str(uuid.uuid4()).upper()
            with open(os.path.join(external, name), "wb") as f:
                f.write(os.urandom(150000))
            db.execute("BEGIN")
            db.execute("UPDATE ZPERSON SET ZPHOTO = ? WHERE Z_PK = 11", (b"\\x02" + name.encode(),))
            print("writing", name, flush=True)
            time.sleep(600)
            """
        let scriptFile = scratch.path + "/writer.py"
        try script.write(toFile: scriptFile, atomically: true, encoding: .utf8)
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        writer.arguments = [scriptFile, store, external]
        let output = Pipe()
        writer.standardOutput = output
        try writer.run()
        var printed = ""
        let sawWrite = eventually(timeout: 60) {
            printed += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            return printed.contains("writing")
        }
        kill(writer.processIdentifier, SIGKILL)
        writer.waitUntilExit()
        #expect(sawWrite, "the writer got as far as its uncommitted write: \(printed)")
        #expect(writer.terminationReason == .uncaughtSignal)
        // What the crash left, by SQL (sqlite3 rolls the unfinished transaction back).
        let toOne = try Self.count(store, Self.danglingToOneSQL)
        let referenced = Set(
            try Self.sql(
                store,
                "SELECT substr(ZPHOTO, 2, 36) FROM ZPERSON WHERE substr(ZPHOTO, 1, 1) = x'02' AND length(ZPHOTO) IN (37, 38)"
            ).split(separator: "\n").map(String.init))
        let files = try FileManager.default.contentsOfDirectory(atPath: external)
        let unreferenced = files.filter { !referenced.contains($0) }
        #expect(
            toOne > 0 && unreferenced.count == 1, "the departments' employees dangle; the uncommitted file is no one's")

        let (status, json, _) = try Self.doctor([store])
        #expect(status == 1)
        #expect(Self.number(json, "orphans.toOne") == toOne)
        #expect(Self.number(json, "orphans.externalData") == unreferenced.count)
        #expect(Self.number(json, "orphans.details.externalData.files") == files.count)

        let fixed = try Self.doctor(["--fix", "--no-backup", store])
        let repair = fixed.json["repair"] as? [String: Any]
        #expect(repair?["backup"] is NSNull, "--no-backup keeps none")
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/Library.pre-doctor.sqlite"))
        #expect(try Self.count(store, Self.danglingToOneSQL) == 0)
        #expect(repair?["externalDataQuarantined"] as? Int == 1)
        let quarantine = try #require(repair?["quarantine"] as? String)
        #expect(try FileManager.default.contentsOfDirectory(atPath: quarantine) == unreferenced)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: external)) == referenced)
        #expect(Self.number(fixed.json, "orphans.externalData") == 0)
        // The photo stays readable.
        #expect(try run(try storefsBinary(), ["mount", "-o", "ro", store, scratch.mountPoint]).succeeded)
        defer { _ = try? run("/usr/bin/fusermount3", ["-u", scratch.mountPoint]) }
        let photo = try FileManager.default.attributesOfItem(atPath: scratch.mountPoint + "/Employee/p10/photo")
        #expect(photo[.size] as? Int == 200_000)
    }

    // MARK: - Maccy's orphans: owners deleted without their cascade

    @Test func unownedObjectsOfAnOwnerDeletedWithoutItsCascadeAreFoundAndDeleted() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let fixture = packageRoot.appendingPathComponent("Tests/Fixtures/external-data")
        for name in ["Attachments.sqlite", ".Attachments_SUPPORT"] {
            try FileManager.default.copyItem(
                at: fixture.appendingPathComponent(name), to: scratch.url.appendingPathComponent(name))
        }
        let store = scratch.path + "/Attachments.sqlite"
        let model = fixture.appendingPathComponent("Attachments.xcdatamodel").path
        let external = scratch.path + "/.Attachments_SUPPORT/_EXTERNAL_DATA"
        // As Maccy's store: the owner's cascade never ran, its parts were nullified.
        try Self.sql(store, "UPDATE ZATTACHMENT SET ZFOLDER = NULL WHERE Z_PK IN (3, 4, 6)")
        let unowned = try Self.count(store, "SELECT COUNT(*) FROM ZATTACHMENT WHERE ZFOLDER IS NULL")
        let filesBefore = try FileManager.default.contentsOfDirectory(atPath: external).sorted()
        let (status, json, _) = try Self.doctor(["--model", model, store])
        #expect(status == 1)
        #expect(Self.number(json, "orphans.unowned") == unowned)
        #expect(Self.number(json, "orphans.details.externalData.missing") == 1, "p5 names a file that is not there")
        // Without the model, the owners are unknown: nothing is called unowned.
        #expect(Self.number(try Self.doctor([store]).json, "orphans.unowned") == 0)

        let fixed = try Self.doctor(["--fix", "--delete-unowned", "--model", model, store])
        #expect((fixed.json["repair"] as? [String: Any])?["unownedDeleted"] as? Int == unowned)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM ZATTACHMENT WHERE ZFOLDER IS NULL") == 0)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM ZATTACHMENT") == 8 - unowned)
        #expect(Self.number(fixed.json, "orphans.unowned") == 0)
        // The deleted attachments' files went with them; the backup keeps the store as it was.
        #expect(try FileManager.default.contentsOfDirectory(atPath: external).isEmpty)
        let backupFiles = try FileManager.default.contentsOfDirectory(
            atPath: scratch.path + "/.Attachments.pre-doctor_SUPPORT/_EXTERNAL_DATA")
        #expect(backupFiles.sorted() == filesBefore)
        #expect(
            try Self.count(scratch.path + "/Attachments.pre-doctor.sqlite", "SELECT COUNT(*) FROM ZATTACHMENT") == 8)
    }

    // MARK: - A history of a million changes

    @Test func aMillionChangesOfHistoryAreCountedAndPrunedAsDeleteHistoryDoes() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let store = scratch.path + "/Cart.sqlite"
        try FileManager.default.copyItem(
            at: Corpus.url("sqlite/Karim-ezzedine_CartKit_CartKitSwiftData_v1.sqlite"),
            to: URL(fileURLWithPath: store))
        // SwiftData's history, grown as Maccy's was: 100,000 more transactions of ten changes each
        // (one string, an importer's, only the older half names).
        try Self.sql(
            store,
            """
            INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (3, 16003, NULL, 'importer');
            WITH RECURSIVE t(n) AS (SELECT 2 UNION ALL SELECT n + 1 FROM t WHERE n < 100001)
            INSERT INTO ATRANSACTION (Z_PK, Z_ENT, ZAUTHORTS, ZBUNDLEIDTS, ZPROCESSIDTS, ZTIMESTAMP)
              SELECT n, 16002, CASE WHEN n < 50000 THEN 3 END, 1, 2, 791478105.826932 + n FROM t;
            WITH RECURSIVE c(n) AS (SELECT 2 UNION ALL SELECT n + 1 FROM c WHERE n < 1000001)
            INSERT INTO ACHANGE (Z_PK, Z_ENT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID)
              SELECT n, 16001, 1, 3, 1, 2 + (n - 2) / 10 FROM c;
            UPDATE Z_PRIMARYKEY SET Z_MAX = 100001 WHERE Z_NAME = 'TRANSACTION';
            UPDATE Z_PRIMARYKEY SET Z_MAX = 1000001 WHERE Z_NAME = 'CHANGE';
            UPDATE Z_PRIMARYKEY SET Z_MAX = 3 WHERE Z_NAME = 'TRANSACTIONSTRING';
            """)
        let transactions = try Self.count(store, "SELECT COUNT(*) FROM ATRANSACTION")
        let changes = try Self.count(store, "SELECT COUNT(*) FROM ACHANGE")
        #expect(transactions == 100_001 && changes == 1_000_001)

        let (status, json, _) = try Self.doctor(["--history-limit", "100000", store])
        #expect(Self.number(json, "history.transactions") == transactions)
        #expect(Self.number(json, "history.changes") == changes)
        #expect(Self.number(json, "history.strings") == 3)
        let history = json["history"] as? [String: Any]
        #expect(history?["firstTransaction"] as? String == "t1" && history?["lastTransaction"] as? String == "t100001")
        // The transactions' timestamps (seconds since 2001) as dates, to the second, as sqlite3 converts them.
        for (key, function) in [("oldest", "MIN"), ("newest", "MAX")] {
            let expected = try Self.sql(
                store,
                "SELECT strftime('%Y-%m-%dT%H:%M:%S', \(function)(ZTIMESTAMP) + 978307200, 'unixepoch') FROM ATRANSACTION"
            ).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(
                expected.count == 19 && (history?[key] as? String)?.hasPrefix(expected) == true, "\(key): \(expected)")
        }
        #expect(status == 1, "more changes than --history-limit is a finding")
        #expect(try Self.doctor([store]).status == 0, "a long history alone is no finding")

        // Before a transaction: the ones below it go, with their changes and the strings only they named.
        let below = try Self.count(store, "SELECT COUNT(*) FROM ATRANSACTION WHERE Z_PK < 50000")
        let theirChanges = try Self.count(store, "SELECT COUNT(*) FROM ACHANGE WHERE ZTRANSACTIONID < 50000")
        let pruned = try Self.doctor(["--prune-history-before", "t50000", store])
        let result = (pruned.json["repair"] as? [String: Any])?["historyPruned"] as? [String: Any]
        #expect(result?["transactions"] as? Int == below)
        #expect(result?["changes"] as? Int == theirChanges)
        #expect(result?["strings"] as? Int == 1)
        #expect(try Self.count(store, "SELECT MIN(Z_PK) FROM ATRANSACTION") == 50000, "t50000 itself stays")
        #expect(try Self.count(store, "SELECT COUNT(*) FROM ACHANGE") == changes - theirChanges)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM ATRANSACTIONSTRING WHERE ZNAME = 'importer'") == 0)
        #expect(Self.number(pruned.json, "history.changes") == changes - theirChanges)

        // Before a date past them all, then VACUUM: the newest transaction stays, the file shrinks.
        let pages = try Self.count(store, "PRAGMA page_count")
        let all = try Self.doctor(["--prune-history-before", "2100-01-01", "--vacuum", store])
        #expect(all.status == 0, "\(all.errors)")
        #expect(try Self.sql(store, "SELECT Z_PK FROM ATRANSACTION") == "100001\n")
        #expect(try Self.count(store, "SELECT COUNT(*) FROM ACHANGE") == 10)
        #expect(try Self.count(store, "PRAGMA page_count") * 10 < pages, "VACUUM gave the space back")
        #expect(try Self.count(store, "PRAGMA freelist_count") == 0)
        #expect((all.json["repair"] as? [String: Any])?["vacuumed"] as? Bool == true)
        #expect(try Self.sql(store, "PRAGMA integrity_check") == "ok\n")

        // The store still tracks history: a mount's commit appends a transaction.
        #expect(try run(try storefsBinary(), ["mount", store, scratch.mountPoint]).succeeded)
        #expect(try shell("echo closed > \(quoted(scratch.mountPoint + "/CartModel/p1/status"))").succeeded)
        #expect(try run(try storefsBinary(), ["unmount", scratch.mountPoint]).succeeded)
        #expect(try Self.count(store, "SELECT COUNT(*) FROM ATRANSACTION") == 2)
        #expect(try Self.sql(store, "SELECT ZSTATUS FROM ZCARTMODEL") == "closed\n")
    }

    // MARK: - A mounted store

    @Test func aRepairOfAStoreMountedReadWriteIsRefusedAndChangesNothing() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        try Self.sql(scratch.store, "DELETE FROM ZDEPARTMENT WHERE Z_PK = 1")
        #expect(try run(try storefsBinary(), ["mount", scratch.store, scratch.mountPoint]).succeeded)
        defer { _ = try? run(try storefsBinary(), ["unmount", scratch.mountPoint]) }
        let before = try Self.sql(scratch.store, ".dump")
        let refused = try run(try storefsBinary(), ["doctor", "--fix", scratch.store])
        #expect(refused.status == 2)
        #expect(refused.errorOutput.contains("is open for writing by another storefs"), "\(refused.errorOutput)")
        #expect(try Self.sql(scratch.store, ".dump") == before)
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/Library.pre-doctor.sqlite"))
        // Reading it is fine.
        #expect(try run(try storefsBinary(), ["doctor", scratch.store]).status == 1)
    }

    @Test func aStoreThatCannotBeReadExitsTwo() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try Data("not a store at all".utf8).write(to: URL(fileURLWithPath: scratch.path + "/Broken.sqlite"))
        let broken = try run(try storefsBinary(), ["doctor", scratch.path + "/Broken.sqlite"])
        #expect(broken.status == 2, "\(broken.output)\(broken.errorOutput)")
        #expect(try run(try storefsBinary(), ["doctor", scratch.path + "/Missing.sqlite"]).status == 2)
    }

    // MARK: - Every store type

    @Test func atomicStoresAreExaminedThroughTheirObjects() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        for suffix in ["xml", "binary"] {
            let store = scratch.path + "/Library.\(suffix)"
            #expect(try run(try storefsBinary(), ["migrate", scratch.store, store]).succeeded)
            let (status, json, errors) = try Self.doctor([store])
            #expect(status == 0, "\(suffix): \(errors) \(json["findings"] ?? "")")
            #expect(Self.number(json, "objects") == 100)
            // Per entity as `storefs info` counts them.
            let info = try run(try storefsBinary(), ["info", "--json", store])
            let counts = try #require(
                ((try? JSONSerialization.jsonObject(with: Data(info.output.utf8))) as? [String: Any])?["entities"]
                    as? [String: Int])
            for (entity, count) in counts {
                #expect(Self.number(json, "entities.\(entity).objects") == count, "\(suffix) \(entity)")
            }
        }
        let things = scratch.path + "/Things.xml"
        try FileManager.default.copyItem(
            at: Corpus.url("xml/haraldmartin_things-rb_Database.xml"), to: URL(fileURLWithPath: things))
        #expect(try Self.doctor([things]).status == 0)
    }
}

/// `storefs doctor` on the corpus's real stores (docs/HEALTH.md, "What doctor finds in the
/// corpus"): every count it gives checked against SQL this test runs itself on a copy.
@Suite struct DoctorCorpusTests {
    static let stores = Corpus.names(in: "sqlite") { $0.hasSuffix(".sqlite") || $0.hasSuffix(".store") }

    @Test(arguments: stores)
    func theCorpusStoresAreHealthyAndCountedAsSQLCountsThem(_ name: String) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = Corpus.url("sqlite/" + name)
        let store = scratch.path + "/" + name
        let checked = scratch.path + "/checked-" + name
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: store + suffix)
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: checked + suffix)
        }
        let walBytes = (try? FileManager.default.attributesOfItem(atPath: store + "-wal")[.size] as? Int) ?? 0
        let (status, json, errors) = try DoctorCommandTests.doctor([store])
        #expect(status == 0, "\(name): \(json["findings"] ?? "") \(errors)")
        #expect(json["healthy"] as? Bool == true)

        // Objects per entity: Z_PRIMARYKEY names each entity and its parent; a tree's rows are in
        // its root's table, Z<ROOT>.
        let rows = try DoctorCommandTests.sql(
            checked, "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT < 16000"
        )
        .split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
        var parent: [String: String] = [:]
        var names: [String: String] = [:]
        for row in rows where row.count == 3 {
            names[row[0]] = row[1]
            parent[row[0]] = row[2]
        }
        let tables = Set(
            try DoctorCommandTests.sql(checked, "SELECT upper(name) FROM sqlite_master WHERE type = 'table'").split(
                separator: "\n"
            ).map(String.init))
        let entities = json["entities"] as? [String: [String: Any]] ?? [:]
        var compared = 0
        for (zent, entity) in names {
            var root = zent
            var steps = 0
            while let up = parent[root], up != "0", steps < 100 {
                root = up
                steps += 1
            }
            guard let rootName = names[root], tables.contains("Z" + rootName.uppercased()),
                let reported = entities[entity]?["objects"] as? Int
            else { continue }
            let counted = try DoctorCommandTests.count(
                checked, "SELECT COUNT(*) FROM Z\(rootName.uppercased()) WHERE Z_ENT = \(zent)")
            #expect(reported == counted, "\(name): \(entity)")
            compared += 1
        }
        #expect(compared > 0, "\(name): entities were compared")
        // The history, the free pages, the -wal's frames, the integrity check.
        if tables.contains("ATRANSACTION") {
            #expect(
                DoctorCommandTests.number(json, "history.transactions")
                    == (try DoctorCommandTests.count(checked, "SELECT COUNT(*) FROM ATRANSACTION")))
            #expect(
                DoctorCommandTests.number(json, "history.changes")
                    == (try DoctorCommandTests.count(checked, "SELECT COUNT(*) FROM ACHANGE")))
        } else {
            #expect(json["history"] is NSNull, "\(name) keeps no history")
        }
        let pageSize = try DoctorCommandTests.count(checked, "PRAGMA page_size")
        #expect(
            DoctorCommandTests.number(json, "space.freelistPages")
                == (try DoctorCommandTests.count(checked, "PRAGMA freelist_count")))
        #expect(
            DoctorCommandTests.number(json, "space.walFrames")
                == (walBytes > 32 ? (walBytes - 32) / (pageSize + 24) : 0))
        #expect(try DoctorCommandTests.sql(checked, "PRAGMA integrity_check") == "ok\n")
        #expect((json["integrity"] as? [String: Any])?["ok"] as? Bool == true)
        #expect(DoctorCommandTests.number(json, "orphans.toOne") == 0)
        #expect(DoctorCommandTests.number(json, "orphans.toMany") == 0)
        #expect(DoctorCommandTests.number(json, "violations.total") == 0)
    }
}

/// `storefs doctor` on a PostgreSQL store, on a server the test starts: the same findings and
/// fixes as on SQLite, the fixes as saves that a mount of the store hears of, the backup a schema.
@Suite struct DoctorPostgresTests {
    @Test func aRottenPostgreSQLStoreIsCountedAsSQLCountsItAndFixedUnderAMount() throws {
        let server = try PostgresServer.shared()
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 300)
        let schema = PostgresServer.uniqueSchema("doctor")
        let url = server.url(schema: schema).absoluteString
        let migrated = try run(try storefsBinary(), ["migrate", scratch.store, url])
        #expect(migrated.succeeded, "\(migrated.errorOutput)")
        func count(_ query: String) throws -> Int {
            let text = try server.psql("SET search_path TO \(schema); \(query)").trimmingCharacters(
                in: .whitespacesAndNewlines)
            return Int(text.split(separator: "\n").last ?? "") ?? -1
        }
        // The join table of Employee.projects and its columns, as the server lists them.
        let join = try server.psql(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = '\(schema)' AND table_name LIKE 'Z\\_%' AND table_name LIKE '%PROJECTS'"
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        let columns = try server.psql(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = '\(schema)' AND table_name = '\(join)'"
        ).split(separator: "\n").map(String.init)
        let members = try #require(columns.first { $0.hasSuffix("MEMBERS") })
        let projects = try #require(columns.first { $0.hasSuffix("PROJECTS") })
        let danglingToOne = """
            SELECT (SELECT COUNT(*) FROM "ZPERSON" WHERE "ZDEPARTMENT" IS NOT NULL AND "ZDEPARTMENT" NOT IN (SELECT "Z_PK" FROM "ZDEPARTMENT"))
             + (SELECT COUNT(*) FROM "ZPERSON" WHERE "ZHEADOF" IS NOT NULL AND "ZHEADOF" NOT IN (SELECT "Z_PK" FROM "ZDEPARTMENT"))
             + (SELECT COUNT(*) FROM "ZPERSON" WHERE "ZMANAGER" IS NOT NULL AND "ZMANAGER" NOT IN (SELECT "Z_PK" FROM "ZPERSON"))
             + (SELECT COUNT(*) FROM "ZDEPARTMENT" WHERE "ZHEAD" IS NOT NULL AND "ZHEAD" NOT IN (SELECT "Z_PK" FROM "ZPERSON"))
             + (SELECT COUNT(*) FROM "ZPROJECT" WHERE "ZDEPARTMENT" IS NOT NULL AND "ZDEPARTMENT" NOT IN (SELECT "Z_PK" FROM "ZDEPARTMENT"))
             + (SELECT COUNT(*) FROM "ZMILESTONE" WHERE "ZPROJECT" IS NOT NULL AND "ZPROJECT" NOT IN (SELECT "Z_PK" FROM "ZPROJECT"))
            """
        let danglingJoinRows = """
            SELECT COUNT(*) FROM "\(join)" WHERE "\(members)" NOT IN (SELECT "Z_PK" FROM "ZPERSON")
             OR "\(projects)" NOT IN (SELECT "Z_PK" FROM "ZPROJECT")
            """
        try server.psql(
            """
            SET search_path TO \(schema);
            DELETE FROM "ZDEPARTMENT" WHERE "Z_PK" = 1;
            DELETE FROM "ZPROJECT" WHERE "Z_PK" = 2;
            INSERT INTO "\(join)" ("\(members)", "\(projects)") VALUES (99998, 99997);
            """)
        let toOne = try count(danglingToOne)
        let toMany = try count(danglingJoinRows)
        #expect(toOne > 0 && toMany > 1)
        let (status, json, errors) = try DoctorCommandTests.doctor([url])
        #expect(status == 1, "\(errors)")
        #expect(DoctorCommandTests.number(json, "orphans.toOne") == toOne)
        #expect(DoctorCommandTests.number(json, "orphans.toMany") == toMany)
        #expect(
            DoctorCommandTests.number(json, "entities.Employee.objects")
                == (try count(
                    "SELECT COUNT(*) FROM \"ZPERSON\" WHERE \"Z_ENT\" = (SELECT \"Z_ENT\" FROM \"Z_PRIMARYKEY\" WHERE \"Z_NAME\" = 'Employee')"
                )))
        #expect(
            DoctorCommandTests.number(json, "history.transactions")
                == (try count("SELECT COUNT(*) FROM \"ATRANSACTION\"")))
        #expect(DoctorCommandTests.number(json, "history.changes") == (try count("SELECT COUNT(*) FROM \"ACHANGE\"")))
        #expect((json["integrity"] as? [String: Any])?["checked"] as? Bool == false)

        // A mount of the store stays up through the fix (several writers are PostgreSQL's way)
        // and hears of the nullified links through the store's announcements.
        let employee = try count(
            "SELECT MIN(\"Z_PK\") FROM \"ZPERSON\" WHERE \"ZDEPARTMENT\" = 1 AND \"Z_ENT\" = (SELECT \"Z_ENT\" FROM \"Z_PRIMARYKEY\" WHERE \"Z_NAME\" = 'Employee')"
        )
        #expect(try run(try storefsBinary(), ["mount", url, scratch.mountPoint]).succeeded)
        defer { _ = try? run(try storefsBinary(), ["unmount", scratch.mountPoint]) }
        let link = scratch.mountPoint + "/Employee/p\(employee)/department"
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == "../../Department/p1")
        let persons = try count("SELECT COUNT(*) FROM \"ZPERSON\"")
        let fixed = try DoctorCommandTests.doctor(["--fix", url])
        let repair = fixed.json["repair"] as? [String: Any]
        #expect(repair?["toOneNullified"] as? Int == toOne, "\(fixed.errors)")
        #expect(((repair?["toManyRemoved"] as? Int) ?? 0) + ((repair?["joinRowsRemoved"] as? Int) ?? 0) == toMany)
        #expect(try count(danglingToOne) == 0 && count(danglingJoinRows) == 0)
        #expect(try count("SELECT COUNT(*) FROM \"ZPERSON\"") == persons)
        let backup = try #require(repair?["backup"] as? String)
        let backupSchema = try #require(backup.split(separator: " ").dropFirst().first.map(String.init))
        #expect(try server.psql("SELECT COUNT(*) FROM \(backupSchema).\"ZPERSON\"") == "\(persons)\n")
        #expect(
            eventually(timeout: 10) { (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == nil },
            "the mount drops the nullified link once the fix's announcement arrives")
        // History before the fix's first save goes; the fix's own transactions stay.
        let first = try count("SELECT MIN(\"Z_PK\") FROM \"ATRANSACTION\" WHERE \"Z_PK\" > 1")
        let pruned = try DoctorCommandTests.doctor(["--prune-history-before", "t\(first)", "--vacuum", url])
        #expect(try count("SELECT MIN(\"Z_PK\") FROM \"ATRANSACTION\"") == first, "\(pruned.errors)")
        #expect(try count("SELECT COUNT(*) FROM \"ACHANGE\" WHERE \"ZTRANSACTIONID\" < \(first)") == 0)
        #expect(try count("SELECT COUNT(*) FROM \"ATRANSACTIONSTRING\" WHERE \"ZNAME\" = 'storefs'") == 1)
        // The pruning kept a backup of its own, beside the fix's, though both may be of one second
        // (the second used to fail: "schema … already exists").
        let prunedBackup = try #require(
            (pruned.json["repair"] as? [String: Any])?["backup"] as? String, "\(pruned.errors)")
        #expect(prunedBackup != backup)
        #expect(
            try count(
                "SELECT COUNT(*) FROM pg_namespace WHERE nspname LIKE '\(schema)\\_pre\\_doctor\\_%'") == 2)
    }
}
