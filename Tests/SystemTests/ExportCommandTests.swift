import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// `storefs export`, run as a user runs it: the built binary on copies of real stores and on
/// generated ones, its output read back by Foundation's JSON parser.
@Suite struct ExportCommandTests {
    /// A copy of corpus store `name` (and its -wal) in `scratch`.
    static func corpusCopy(_ name: String, into scratch: Scratch) throws -> String {
        for suffix in ["", "-wal"] {
            let source = Corpus.url("sqlite/\(name)").path + suffix
            guard FileManager.default.fileExists(atPath: source) else { continue }
            try FileManager.default.copyItem(atPath: source, toPath: scratch.path + "/" + name + suffix)
        }
        return scratch.path + "/" + name
    }

    /// Each file of `folder` (or those of `only`): name, size, modification time and SHA-256.
    ///
    /// A read-only open of a WAL store still makes its -shm (and an empty -wal) where SQLite can:
    /// leaving no file behind is evidence mode's (issue 26, item 6), so the tests compare the
    /// files that were there before.
    static func fingerprint(_ folder: String, only: [String]? = nil) throws -> [String] {
        let names = try only ?? FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        return try names.filter { $0 != "mnt" }.map { name in
            let path = folder + "/" + name
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let hash = try run(try tool("sha256sum", package: "coreutils"), [path]).output.prefix(64)
            return
                "\(name) \(attributes[.size] ?? 0) \((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0) \(hash)"
        }
    }

    static func jsonLines(_ output: String) throws -> [[String: Any]] {
        try output.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw SystemTestError("not a JSON object: \(line.prefix(200))")
            }
            return object
        }
    }

    static func objectCount(_ store: String) throws -> Int {
        let info = try run(try storefsBinary(), ["info", "--json", store])
        let json = try JSONSerialization.jsonObject(with: Data(info.output.utf8)) as? [String: Any]
        guard let count = json?["objects"] as? Int else {
            throw SystemTestError("storefs info: \(info.output)\(info.errorOutput)")
        }
        return count
    }

    // MARK: - Real stores

    @Test(arguments: [
        "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite",
        "RhetTbull_merge_photos_libraries_Photos.sqlite",
        "alemar11_CoreDataPlus_SampleModel2_V1.sqlite", "sergd2005_ResourcesManager_default.store"
    ])
    func everyObjectOfARealStoreIsWrittenOnce(_ name: String) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let store = try Self.corpusCopy(name, into: scratch)
        let before = try Self.fingerprint(scratch.path)
        let expected = try Self.objectCount(store)
        let export = try run(try storefsBinary(), ["export", store])
        #expect(export.succeeded, "\(export.errorOutput)")
        #expect(
            !export.errorOutput.contains("\r") && !export.errorOutput.contains("error"),
            "no progress bar when stderr is not a terminal: \(export.errorOutput)")
        let objects = try Self.jsonLines(export.output)
        #expect(objects.count == expected, "storefs info counts \(expected)")
        let uris = objects.compactMap { $0["@uri"] as? String }
        #expect(uris.count == objects.count && Set(uris).count == uris.count, "every object once")
        #expect(uris.allSatisfy { $0.hasPrefix("x-coredata://") })
        let array = try run(try storefsBinary(), ["export", "--format", "json", store])
        #expect((try JSONSerialization.jsonObject(with: Data(array.output.utf8)) as? [Any])?.count == expected)
        #expect(
            try Self.fingerprint(scratch.path, only: before.map { String($0.prefix { $0 != " " }) }) == before,
            "the store's files are untouched")

        // Relationships are URIs of objects of the same store (a reference to an object the
        // store lacks is written as the store holds it, so dangling ones are counted apart).
        let coordinator = try PersistentStoreCoordinator.open(
            at: URL(fileURLWithPath: store), types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        let known = Set(uris)
        var links = 0
        var dangling = 0
        for object in objects {
            let entity = try #require(coordinator.model.entity(named: object["@entity"] as? String ?? ""))
            for relationship in entity.persistentRelationships {
                let value = try #require(object[relationship.name], "\(relationship.name) is written")
                let targets = (value as? [String]) ?? (value as? String).map { [$0] } ?? []
                #expect(relationship.isToMany == (value is [String]) || value is NSNull, "\(relationship.name)")
                links += targets.count
                dangling += targets.filter { !known.contains($0) }.count
            }
        }
        #expect(links > 0, "the store's relationships are written")
        #expect(dangling * 100 <= links, "\(dangling) of \(links) links name objects the export does not hold")
    }

    // MARK: - Generated stores

    @Test func whereSelectsWhatTheEvaluatorSelects() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 1000)
        let coordinator = try PersistentStoreCoordinator.open(
            at: URL(fileURLWithPath: scratch.store), types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let uuid = try #require(try coordinator.store.metadata().storeUUID)
        let cases = [
            ("Employee", "level > 7 AND department.name BEGINSWITH[c] 'sales'"),
            ("Employee", #"birthDate < CAST("1970-01-01", "NSDate") OR ANY projects.name ENDSWITH "-2""#),
            ("Person", #"firstName BEGINSWITH[c] "a" AND birthDate > CAST("1960-06-01T12:00:00Z", "NSDate")"#),
            ("Department", "employees.@avg.salary > 100000"),
            ("Project", "ALL milestones.done == NO AND members.@count > 20"),
            ("Manager", "directReports.@count == 0")
        ]
        for (entity, predicate) in cases {
            let export = try run(
                try storefsBinary(), ["export", scratch.store, "--entity", entity, "--where", predicate])
            #expect(export.succeeded, "\(predicate): \(export.errorOutput)")
            let uris = try Self.jsonLines(export.output).compactMap { $0["@uri"] as? String }
            let expected = try context.objects(
                matching: PredicateParser.parse(predicate), of: try #require(coordinator.model.entityID(named: entity)),
                strategy: .inMemory
            ).map { "x-coredata://\(uuid)/\(coordinator.model[$0.entity].name)/\($0.key)" }
            #expect(uris == expected, "\(entity) where \(predicate)")
            #expect(entity == "Manager" || !expected.isEmpty, "\(predicate) selects something")
        }
    }

    @Test func everyStoreTypeExportsTheSameBytes() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 300)
        let binary = try storefsBinary()
        var outputs: [String] = []
        for suffix in ["xml", "binary"] {
            let copy = scratch.path + "/Library." + suffix
            let migrate = try run(binary, ["migrate", scratch.store, copy])
            #expect(migrate.succeeded, "\(migrate.errorOutput)")
            outputs.append(try run(binary, ["export", copy]).output)
        }
        let sqlite = try run(binary, ["export", scratch.store]).output
        #expect(try Self.jsonLines(sqlite).count == 300)
        // Migration keeps keys and the store UUID, so the objects are the same, byte for byte.
        #expect(outputs == [sqlite, sqlite])
    }

    @Test func csvHasAHeaderAndARowPerObject() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 200)
        let export = try run(
            try storefsBinary(), ["export", scratch.store, "--entity", "Department", "--format", "csv"])
        #expect(export.succeeded, "\(export.errorOutput)")
        let lines = export.output.split(separator: "\n")
        #expect(lines.first == "@entity,@uri,name,code,budget,founded,employees,projects,head")
        #expect(lines.count == 3, "a header and the sample's two departments")
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("Department,x-coredata://") })
    }

    @Test func evidenceReadsTheSameAndChangesNoFile() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 200)
        let before = try Self.fingerprint(scratch.path)
        let evidence = try run(try storefsBinary(), ["export", "--evidence", scratch.store])
        #expect(evidence.succeeded, "\(evidence.errorOutput)")
        // Evidence mode makes no file at all beside the store (not even a -shm).
        #expect(try Self.fingerprint(scratch.path) == before)
        let sha256sum = try run(try tool("sha256sum", package: "coreutils"), [scratch.store])
        let storeHash = sha256sum.output.split(separator: " ").first.map(String.init) ?? "?"
        #expect(
            evidence.errorOutput.contains("\(storeHash)  \(scratch.store)"),
            "the files read, with their SHA-256: \(evidence.errorOutput)")
        let plain = try run(try storefsBinary(), ["export", scratch.store])
        #expect(evidence.output == plain.output)
    }

    @Test func aClosedPipeEndsTheExportQuietly() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 3000)
        let bash = try tool("bash", package: "bash")
        let result = try run(
            bash,
            [
                "-c",
                "\(quoted(try storefsBinary())) export \(quoted(scratch.store)) | head -c 100 >/dev/null; echo ${PIPESTATUS[0]}"
            ])
        #expect(
            ["0", "141"].contains(result.output.trimmingCharacters(in: .whitespacesAndNewlines)),
            "status \(result.output)")
        #expect(result.errorOutput.isEmpty, "\(result.errorOutput)")
    }

    @Test(arguments: [
        (["--where", "level > 5"], "--where needs --entity"),
        (["--format", "csv"], "--format csv needs --entity"),
        (["--format", "xml"], "--format must be jsonl, json or csv"),
        (["--entity", "Employe"], "the store's model has no entity Employe (it has Department, Employee,"),
        (["--entity", "Employee", "--where", "level >"], "--where: predicate \"level >\" at position 8"),
        (
            ["--entity", "Employee", "--where", "levle > 5"],
            "--where: key path levle: entity Employee has no attribute or relationship named levle"
        ),
        (["--entity", "Employee", "--where", "photo == 'x'"], "compares only with nil")
    ])
    func mistakesAreRefusedWithTheReason(_ arguments: [String], _ message: String) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore(objects: 100)
        let result = try run(try storefsBinary(), ["export", scratch.store] + arguments)
        #expect(result.status == 64, "\(result.errorOutput)")
        #expect(result.output.isEmpty)
        #expect(result.errorOutput.contains(message), "\(result.errorOutput)")
    }
}
