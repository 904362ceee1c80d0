import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Model migration through the command line, checked through mounts: each migrated store is
/// mounted read-write with the new model (which the version check lets through only when the
/// store is at that model's version) and compared object by object, through the kernel, with the
/// old store mounted with its own model and changed by hand as the rule says.
///
/// Stores: the corpus's wibosco CoreDataMigration-Example and CoreDataPlus stores (real Core Data
/// files) and a store of the rule models of Tests/Fixtures/migration/rules, made here.
@Suite(.serialized) struct ModelMigrationMountTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").standardizedFileURL
    static let rules = fixtures.appendingPathComponent("migration/rules")
    static let wibosco = Corpus.url("models/wibosco_CoreDataMigration-Example_CoreDataMigration_Example.xcdatamodeld")
    static let coreDataPlus = Corpus.url("models/alemar11_CoreDataPlus_SampleModel.xcdatamodeld")

    static func rule(_ name: String) -> String { rules.appendingPathComponent("\(name).xcdatamodel").path }
    static func wiboscoVersion(_ suffix: String) -> String {
        wibosco.appendingPathComponent("CoreDataMigration_Example\(suffix).xcdatamodel").path
    }

    // MARK: - Running and reading

    /// storefs with a time limit: no test waits on it forever.
    @discardableResult
    static func storefs(_ arguments: [String]) throws -> ToolResult {
        try run("timeout", ["120", try storefsBinary()] + arguments)
    }

    /// A mounted store's objects as text, as a user sees them: entity → object → property →
    /// value (an attribute's file without its newline, a to-one's target `Entity/pN`, a to-many's
    /// targets in listing order when `ordered` names `Entity.relationship`, sorted otherwise).
    /// Objects listed in an ancestor's folder (links) are read in their own entity's folder.
    typealias Contents = [String: [String: [String: String]]]

    static func contents(of mount: String, ordered: Set<String> = []) throws -> Contents {
        let fileManager = FileManager.default
        var result: Contents = [:]
        for entity in try fileManager.contentsOfDirectory(atPath: mount).sorted() where !entity.hasPrefix(".") {
            var objects: [String: [String: String]] = [:]
            let folder = mount + "/" + entity
            for object in try fileManager.contentsOfDirectory(atPath: folder) {
                let path = folder + "/" + object
                var info = stat()
                guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { continue }
                var properties: [String: String] = [:]
                for property in try fileManager.contentsOfDirectory(atPath: path) {
                    let item = path + "/" + property
                    guard lstat(item, &info) == 0 else { continue }
                    switch info.st_mode & S_IFMT {
                    case S_IFREG:
                        var text = try String(contentsOfFile: item, encoding: .utf8)
                        if text.hasSuffix("\n") { text.removeLast() }
                        properties[property] = text
                    case S_IFLNK:
                        properties[property] = target(try fileManager.destinationOfSymbolicLink(atPath: item))
                    case S_IFDIR:
                        var targets = try fileManager.contentsOfDirectory(atPath: item).map {
                            target(try fileManager.destinationOfSymbolicLink(atPath: item + "/" + $0))
                        }
                        if !ordered.contains("\(entity).\(property)") { targets.sort() }
                        properties[property] = targets.joined(separator: " ")
                    default: continue
                    }
                }
                objects[object] = properties
            }
            result[entity] = objects
        }
        return result
    }

    /// `Entity/pN` of a link's target.
    static func target(_ link: String) -> String { link.split(separator: "/").suffix(2).joined(separator: "/") }

    /// Mounts `store` (with `model`, read-only when asked), reads it, unmounts.
    static func read(_ store: URL, model: String?, readOnly: Bool = false, ordered: Set<String> = []) throws -> Contents
    {
        try requireFuse()
        let mountPoint = store.deletingLastPathComponent().appendingPathComponent("mnt-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: mountPoint) }
        var arguments = [
            "mount", store.path, mountPoint.path, "--log-file",
            store.deletingLastPathComponent().appendingPathComponent("mount.log").path
        ]
        if let model { arguments += ["--model", model] }
        if readOnly { arguments += ["-o", "ro"] }
        let mounted = try storefs(arguments)
        guard mounted.status == 0 else {
            throw HarnessError("storefs mount \(store.lastPathComponent) failed: \(mounted.error)")
        }
        defer {
            let unmounted = try? storefs(["unmount", mountPoint.path])
            if unmounted?.status != 0 { _ = try? run("fusermount3", ["-u", "-z", mountPoint.path]) }
        }
        return try contents(of: mountPoint.path, ordered: ordered)
    }

    /// Compares two mounts' contents object by object; each difference is its own failure.
    static func expectSame(_ actual: Contents, _ expected: Contents, sourceLocation: SourceLocation = #_sourceLocation)
    {
        #expect(actual.keys.sorted() == expected.keys.sorted(), "entities", sourceLocation: sourceLocation)
        for (entity, objects) in expected.sorted(by: { $0.key < $1.key }) {
            let found = actual[entity] ?? [:]
            #expect(
                found.keys.sorted() == objects.keys.sorted(), "objects of \(entity)", sourceLocation: sourceLocation)
            for (object, properties) in objects.sorted(by: { $0.key < $1.key }) {
                #expect(found[object] == properties, "\(entity)/\(object)", sourceLocation: sourceLocation)
            }
        }
    }

    /// A scratch folder.
    static func folder() throws -> URL { try ScratchSpace.folder("model-migration") }

    /// Copies a corpus store (and its -wal) into `folder` as `name`.
    static func copyCorpusStore(_ corpusName: String, to folder: URL, as name: String) throws -> URL {
        let original = Corpus.url("sqlite/\(corpusName)")
        let copy = folder.appendingPathComponent(name)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: original.path + suffix) {
            try FileManager.default.copyItem(atPath: original.path + suffix, toPath: copy.path + suffix)
        }
        return copy
    }

    static func sha256(_ url: URL) throws -> String { String(try run("sha256sum", [url.path]).output.prefix(64)) }

    // MARK: - The rules' store

    /// A store of the Base rule model: authors with books, books with ordered chapters, magazines
    /// whose keys collide with the books', a newspaper in a periodical hierarchy, a note; Book's
    /// key counter at 10 (keys of deleted books). `secondBookHasAuthor: false` leaves Book p2
    /// without author, so that no author has two books.
    static func makeRulesStore(at url: URL, secondBookHasAuthor: Bool = true) throws {
        let model = try ModelLoader.load(from: URL(fileURLWithPath: rule("Base"))).model
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: model, options: StoreOptions(createIfMissing: true))
        defer { coordinator.close() }
        func id(_ entity: String, _ key: Int64) -> ObjectID {
            ObjectID(entity: model.entityID(named: entity)!, key: PrimaryKey(key))
        }
        var request = SaveRequest()
        func insert(
            _ entity: String, _ key: Int64, _ values: [String: AttributeValue], _ toOne: [String: ObjectID] = [:]
        ) {
            request.inserted.append(
                Snapshot(
                    objectID: id(entity, key), version: 1, attributes: PropertyValues(values),
                    toOne: PropertyValues(toOne)))
        }
        insert(
            "Author", 1,
            ["name": .string("Ursula"), "born": .integer(1929), "nickname": .string("UKL"), "rating": .float(4.5)])
        insert("Author", 2, ["born": .integer(1950)])
        insert("Author", 3, ["name": .string("Terry"), "rating": .float(3.25)])
        insert(
            "Book", 1,
            [
                "title": .string("A Wizard of Earthsea"), "pages": .integer(183), "isbn": .string("9780547773742"),
                "blurb": .string("A boy.")
            ],
            ["author": id("Author", 1)])
        insert(
            "Book", 2, ["title": .string("The Dispossessed"), "pages": .integer(387)],
            secondBookHasAuthor ? ["author": id("Author", 1)] : [:])
        insert("Book", 3, ["title": .string("Untitled")], ["author": id("Author", 2)])
        insert("Chapter", 1, ["title": .string("One")], ["book": id("Book", 1)])
        insert("Chapter", 2, ["title": .string("Two")], ["book": id("Book", 1)])
        insert("Chapter", 3, ["title": .string("Three")], ["book": id("Book", 3)])
        insert("Magazine", 1, ["title": .string("Byte"), "issue": .integer(1)])
        insert("Magazine", 2, ["title": .string("Wired"), "issue": .integer(2)])
        insert("Periodical", 1, ["name": .string("Quarterly")])
        insert("Newspaper", 2, ["name": .string("Times"), "city": .string("London")])
        insert("Note", 1, ["text": .string("remember")])
        let firstBooks = secondBookHasAuthor ? [id("Book", 1), id("Book", 2)] : [id("Book", 1)]
        request.toManyChanges = [
            .init(source: id("Author", 1), relationship: "books", destinations: firstBooks),
            .init(source: id("Author", 2), relationship: "books", destinations: [id("Book", 3)]),
            .init(source: id("Book", 1), relationship: "chapters", destinations: [id("Chapter", 2), id("Chapter", 1)]),
            .init(source: id("Book", 3), relationship: "chapters", destinations: [id("Chapter", 3)])
        ]
        request.keyCounters[id("Book", 1).entity] = 10
        var metadata = try coordinator.store.metadata()
        metadata["com.example.kept"] = .string("yes")
        request.metadata = metadata
        try coordinator.store.save(request)
    }

    // MARK: - Transforms of the old store's contents

    static func renameEntity(_ contents: inout Contents, _ old: String, _ new: String) {
        contents[new] = contents.removeValue(forKey: old)
        for (entity, objects) in contents {
            for (object, properties) in objects {
                for (name, value) in properties {
                    let parts = value.split(separator: " ").map { part in
                        part.hasPrefix(old + "/") ? new + part.dropFirst(old.count) : part
                    }
                    contents[entity]![object]![name] = parts.joined(separator: " ")
                }
            }
        }
    }

    static func renameProperty(_ contents: inout Contents, _ entity: String, _ old: String, _ new: String) {
        for object in contents[entity]?.keys.sorted() ?? [] {
            if let value = contents[entity]![object]!.removeValue(forKey: old) {
                contents[entity]![object]![new] = value
            }
        }
    }

    static func removeProperty(_ contents: inout Contents, _ entity: String, _ name: String) {
        for object in contents[entity]?.keys.sorted() ?? [] { contents[entity]![object]![name] = nil }
    }

    static func setProperty(
        _ contents: inout Contents, _ entity: String, _ name: String, where missing: Bool = false, to value: String
    ) {
        for object in contents[entity]?.keys.sorted() ?? [] where !missing || contents[entity]![object]![name] == nil {
            contents[entity]![object]![name] = value
        }
    }

    /// What each rule does to the old store's contents, and the relationships whose order counts.
    static let expectations: [String: (ordered: Set<String>, transform: @Sendable (inout Contents) -> Void)] = [
        "Added": (
            ["Book.chapters"],
            { c in
                setProperty(&c, "Book", "inPrint", to: "true")
                c["Publisher"] = [:]
            }
        ),
        "Removed": (
            [],
            { c in
                removeProperty(&c, "Author", "nickname")
                removeProperty(&c, "Book", "blurb")
                removeProperty(&c, "Book", "chapters")
                removeProperty(&c, "Chapter", "book")
                c["Note"] = nil
            }
        ),
        "Renamed": (
            ["Book.chapters"],
            { c in
                renameEntity(&c, "Author", "Writer")
                renameProperty(&c, "Writer", "name", "fullName")
                renameProperty(&c, "Writer", "books", "works")
                renameProperty(&c, "Book", "author", "writer")
                renameProperty(&c, "Book", "title", "heading")
            }
        ),
        "MadeMandatory": (["Book.chapters"], { c in setProperty(&c, "Author", "name", where: true, to: "Unknown") }),
        "ToOneToMany": (["Book.chapters"], { c in renameProperty(&c, "Book", "author", "authors") }),
        "ToManyToOne": (
            ["Book.chapters"],
            { c in
                renameProperty(&c, "Author", "books", "book")
                // An empty to-many was an empty folder; an empty to-one is no link at all.
                for object in c["Author"]?.keys.sorted() ?? [] where c["Author"]![object]!["book"] == "" {
                    c["Author"]![object]!["book"] = nil
                }
            }
        ),
        "Reordered": (["Author.books"], { _ in }),
        "IntoHierarchy": (
            ["Book.chapters"],
            { c in
                // Magazines' keys collide with books' in the new tree: they get keys above the
                // books' counter (10), in key order.
                let magazines = c["Magazine"] ?? [:]
                c["Magazine"] = ["p11": magazines["p1"]!, "p12": magazines["p2"]!]
                c["Publication"] = [:]
            }
        ),
        "OutOfHierarchy": (["Book.chapters"], { _ in }),
        "WidenedTypes": (["Book.chapters"], { _ in })
    ]

    // MARK: - Lightweight rules

    /// Each rule, from a SQLite store into a store of each type: the new store, mounted with the
    /// new model, holds every object of the old one changed as the rule says and nothing else.
    @Test(arguments: [
        ("Added", "xml"), ("Removed", "binary"), ("Renamed", "sqlite"), ("MadeMandatory", "sqlite"),
        ("ToOneToMany", "xml"),
        ("ToManyToOne", "sqlite"), ("Reordered", "sqlite"), ("IntoHierarchy", "sqlite"), ("OutOfHierarchy", "binary"),
        ("WidenedTypes", "xml")
    ])
    func lightweightRuleMigratesObjectByObject(rule: String, suffix: String) throws {
        let folder = try Self.folder()
        let old = folder.appendingPathComponent("Old.sqlite")
        try Self.makeRulesStore(at: old, secondBookHasAuthor: rule != "ToManyToOne")
        let new = folder.appendingPathComponent("Library.\(suffix)")
        let migrated = try Self.storefs(["migrate", old.path, new.path, "--model", Self.rule(rule)])
        #expect(migrated.status == 0, "storefs migrate: \(migrated.error)")
        #expect(migrated.output.contains("→ \(rule): lightweight"), "\(migrated.output)")
        let (ordered, transform) = Self.expectations[rule]!
        var expected = try Self.read(old, model: nil, readOnly: true, ordered: ordered)
        #expect(expected["Author"]?["p1"]?["name"] == "Ursula", "the old store reads as made")
        transform(&expected)
        // Read-write with the new model: the version check passes only for a store at its version.
        let actual = try Self.read(new, model: Self.rule(rule), ordered: ordered)
        Self.expectSame(actual, expected)
        let hashes = try Self.storefs(["model", "--hashes", new.path])
        #expect(
            !hashes.output.contains("differ") && hashes.output.contains("have the store's recorded hash"),
            "\(hashes.output)")
        let info = try Self.storefs(["info", "--json", new.path])
        #expect(info.output.contains("com.example.kept"), "custom metadata comes along: \(info.output)")
    }

    /// The new SQLite store's key counters cover its keys and the old store's counters.
    @Test func migratedSQLiteStoreKeepsKeysAndKeyCounters() throws {
        let folder = try Self.folder()
        let old = folder.appendingPathComponent("Library.sqlite")
        try Self.makeRulesStore(at: old)
        let new = folder.appendingPathComponent("New.sqlite")
        let migrated = try Self.storefs(["migrate", old.path, new.path, "--model", Self.rule("IntoHierarchy")])
        #expect(migrated.status == 0, "\(migrated.error)")
        let rows = try run("sqlite3", [new.path, "SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT"]).output
        #expect(rows.contains("Publication|12"), "the tree of Book and Magazine counts to 12: \(rows)")
        let keys = try run("sqlite3", [new.path, "SELECT Z_PK FROM ZPUBLICATION ORDER BY Z_PK"]).output
        #expect(keys.split(separator: "\n") == ["1", "2", "3", "11", "12"], "\(keys)")
        let cache = try run("sqlite3", [new.path, "SELECT length(Z_CONTENT) > 0 FROM Z_MODELCACHE"]).output
        #expect(cache.hasPrefix("1"), "the new store carries its model cache")
    }

    @Test func refusedRulesNameTheProperty() throws {
        let folder = try Self.folder()
        let old = folder.appendingPathComponent("Library.sqlite")
        try Self.makeRulesStore(at: old)
        let checksum = try Self.sha256(old)
        for (rule, words) in [
            ("ChangedType", ["Book.pages", "Integer 16", "String"]), ("ToManyToOne", ["Author p1", "book", "2 objects"])
        ] {
            let new = folder.appendingPathComponent("\(rule).sqlite")
            let result = try Self.storefs(["migrate", old.path, new.path, "--model", Self.rule(rule)])
            #expect(result.status != 0, "\(rule) is refused")
            for word in words { #expect(result.error.contains(word), "\(rule): \(result.error)") }
            #expect(!FileManager.default.fileExists(atPath: new.path), "no new store is left")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains("migrating") }
        #expect(left.isEmpty, "no temporary file is left: \(left)")
        #expect(try Self.sha256(old) == checksum, "the old store is only read")
    }

    /// In place: the new store takes the old one's name, the old one is kept beside it byte for
    /// byte; a refused migration leaves the store exactly as it was, with no backup.
    @Test func inPlaceMigrationKeepsABackupAndAFailureLeavesTheStoreUntouched() throws {
        let folder = try Self.folder()
        let store = folder.appendingPathComponent("Library.sqlite")
        try Self.makeRulesStore(at: store)
        let before = try Self.sha256(store)
        let refused = try Self.storefs(["migrate", "--in-place", store.path, "--model", Self.rule("ToManyToOne")])
        #expect(refused.status != 0)
        #expect(try Self.sha256(store) == before, "a failure leaves the store untouched")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["Library.sqlite"])

        let expected = try Self.read(store, model: nil, readOnly: true, ordered: ["Book.chapters"])
        let migrated = try Self.storefs(["migrate", "--in-place", store.path, "--model", Self.rule("Renamed")])
        #expect(migrated.status == 0, "\(migrated.error)")
        let backup = folder.appendingPathComponent("Library.pre-migration.sqlite")
        #expect(migrated.output.contains(backup.path), "\(migrated.output)")
        #expect(try Self.sha256(backup) == before, "the backup is the old store, byte for byte")
        var renamed = expected
        Self.expectations["Renamed"]!.transform(&renamed)
        Self.expectSame(try Self.read(store, model: Self.rule("Renamed"), ordered: ["Book.chapters"]), renamed)
        let again = try Self.storefs(["migrate", "--in-place", store.path, "--model", Self.rule("Renamed")])
        #expect(again.status == 0 && again.output.contains("nothing to do"), "\(again.output)")
        // (The mounts that read the store leave SQLite's -shm and -wal, as every reader does.)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { !$0.hasPrefix("mount") && !$0.hasSuffix("-shm") && !$0.hasSuffix("-wal") }.sorted()
        #expect(names == ["Library.pre-migration.sqlite", "Library.sqlite"], "\(names)")
    }

    // MARK: - The corpus's wibosco stores and mapping models

    /// Version 1 → 2 with the app's own mapping model: `hexColor` takes `color` through the
    /// expression `$source.color` (an archived NSKeyPathExpression), the rest by Xcode's automatic
    /// expressions.
    @Test func wiboscoStore1MigratesWithItsMappingModel() throws {
        let folder = try Self.folder()
        let old = try Self.copyCorpusStore(
            "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_1.sqlite", to: folder, as: "Posts.sqlite")
        let mapping = folder.appendingPathComponent("Migration1to2.xcmappingmodel")
        try FileManager.default.createDirectory(at: mapping, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Corpus.url("xml/wibosco_CoreDataMigration-Example_Migration1to2.xcmappingmodel_xcmapping.xml"),
            to: mapping.appendingPathComponent("xcmapping.xml"))
        let new = folder.appendingPathComponent("Posts2.xml")
        let migrated = try Self.storefs([
            "migrate", old.path, new.path, "--model", Self.wiboscoVersion(" 2"), "--mapping", mapping.path
        ])
        #expect(migrated.status == 0, "\(migrated.error)")
        var expected = try Self.read(old, model: nil, readOnly: true)
        #expect(expected["Post"]?.count == 1001)
        Self.renameProperty(&expected, "Post", "color", "hexColor")
        Self.expectSame(try Self.read(new, model: Self.wiboscoVersion(" 2")), expected)
    }

    @Test func wiboscoMappingModelWithACustomPolicyIsRefusedByName() throws {
        let folder = try Self.folder()
        let old = try Self.copyCorpusStore(
            "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_2.sqlite", to: folder, as: "Posts.sqlite")
        let mapping = folder.appendingPathComponent("Migration2to3.xcmappingmodel")
        try FileManager.default.createDirectory(at: mapping, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Corpus.url("xml/wibosco_CoreDataMigration-Example_Migration2to3.xcmappingmodel_xcmapping.xml"),
            to: mapping.appendingPathComponent("xcmapping.xml"))
        let checksum = try Self.sha256(old)
        let result = try Self.storefs([
            "migrate", "--in-place", old.path, "--model", Self.wiboscoVersion(" 3"), "--mapping", mapping.path
        ])
        #expect(result.status != 0)
        #expect(result.error.contains("CoreDataMigration_Example.Post2ToPost3MigrationPolicy"), "\(result.error)")
        #expect(try Self.sha256(old) == checksum)
        #expect(
            !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Posts.pre-migration.sqlite").path))
    }

    /// Version 2 → 3 with a mapping model made without the custom policy (Tests/Fixtures/migration):
    /// a Color made from each Post (`hex` = `$source.hexColor`, `colorID` by a string function),
    /// and `Post.color` through `destinationInstancesForEntityMappingNamed:sourceInstances:`; as
    /// an Xcode mapping model and as a compiled one.
    @Test(arguments: ["Migration2to3WithoutPolicy.xcmappingmodel", "Migration2to3WithoutPolicy.cdm"])
    func wiboscoStore2MigratesWithARelationshipMapping(mapping: String) throws {
        let folder = try Self.folder()
        let old = try Self.copyCorpusStore(
            "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_2.sqlite", to: folder, as: "Posts.sqlite")
        let before = try Self.read(old, model: nil, readOnly: true)
        let result = try Self.storefs([
            "migrate", "--in-place", old.path, "--model", Self.wiboscoVersion(" 3"), "--mapping",
            Self.fixtures.appendingPathComponent("migration/wibosco/\(mapping)").path
        ])
        #expect(result.status == 0, "\(result.error)")
        let after = try Self.read(old, model: Self.wiboscoVersion(" 3"))
        let posts = before["Post"] ?? [:]
        #expect(posts.count == 5979 && after["Post"]?.count == posts.count && after["Color"]?.count == posts.count)
        for (name, post) in posts.sorted(by: { $0.key < $1.key }) {
            guard let migrated = after["Post"]?[name] else {
                Issue.record("Post/\(name) is missing")
                continue
            }
            #expect(
                migrated["date"] == post["date"] && migrated["postID"] == post["postID"] && migrated["hexColor"] == nil,
                "\(name)")
            guard let link = migrated["color"], let color = after["Color"]?[String(link.dropFirst("Color/".count))]
            else {
                Issue.record("Post/\(name) has no color")
                continue
            }
            #expect(color["hex"] == post["hexColor"], "\(name)")
            #expect(color["colorID"] == post["postID"].map { $0 + "-color" }, "\(name)")
            #expect(color["post"] == "Post/\(name)", "the inverse is set")
        }
    }

    /// Staged, in place: store 1 to the bundle's current version (4) through 1 → 2 (the app's
    /// mapping model), 2 → 3 (the mapping model without the policy) and 3 → 4 (lightweight:
    /// `hide` added with its default NO), each step's mapping found among those given.
    @Test func wiboscoStore1StagesToTheCurrentVersion() throws {
        let folder = try Self.folder()
        let old = try Self.copyCorpusStore(
            "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_1.sqlite", to: folder, as: "Posts.sqlite")
        let mappings = folder.appendingPathComponent("Mappings")
        try FileManager.default.createDirectory(
            at: mappings.appendingPathComponent("Migration1to2.xcmappingmodel"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Corpus.url("xml/wibosco_CoreDataMigration-Example_Migration1to2.xcmappingmodel_xcmapping.xml"),
            to: mappings.appendingPathComponent("Migration1to2.xcmappingmodel/xcmapping.xml"))
        try FileManager.default.copyItem(
            at: Self.fixtures.appendingPathComponent("migration/wibosco/Migration2to3WithoutPolicy.xcmappingmodel"),
            to: mappings.appendingPathComponent("Migration2to3WithoutPolicy.xcmappingmodel"))
        let before = try Self.read(old, model: nil, readOnly: true)
        let result = try Self.storefs([
            "migrate", "--in-place", old.path, "--model", Self.wibosco.path, "--mapping", mappings.path
        ])
        #expect(result.status == 0, "\(result.error)")
        for step in [
            "CoreDataMigration_Example → CoreDataMigration_Example 2: mapping model",
            "CoreDataMigration_Example 2 → CoreDataMigration_Example 3: mapping model",
            "CoreDataMigration_Example 3 → CoreDataMigration_Example 4: lightweight"
        ] {
            #expect(result.output.contains(step), "\(result.output)")
        }
        let after = try Self.read(old, model: Self.wibosco.path)
        #expect(after["Post"]?.count == 1001 && after["Color"]?.count == 1001)
        for (name, post) in (before["Post"] ?? [:]).sorted(by: { $0.key < $1.key }) {
            let migrated = after["Post"]?[name] ?? [:]
            #expect(
                migrated["hide"] == "false" && migrated["postID"] == post["postID"] && migrated["date"] == post["date"],
                "\(name)")
            let color = migrated["color"].flatMap { after["Color"]?[String($0.dropFirst("Color/".count))] }
            #expect(color?["hex"] == post["color"], "\(name): the color of version 1 went through two mapping models")
        }
    }

    /// The corpus's CoreDataPlus stores (versions 1 and 2 of SampleModel) stage to SampleModel3
    /// lightweight: ExpensiveSportCar renamed LuxuryCar by its renaming identifier, attributes
    /// removed, Maker and relationships added. The corpus has no CoreDataPlus mapping model.
    @Test(arguments: ["alemar11_CoreDataPlus_SampleModel_V1.sqlite", "alemar11_CoreDataPlus_SampleModel_V2.sqlite"])
    func coreDataPlusStoresStageToSampleModel3(name: String) throws {
        let folder = try Self.folder()
        let old = try Self.copyCorpusStore(name, to: folder, as: "Cars.sqlite")
        var expected = try Self.read(old, model: nil, readOnly: true)
        let target = Self.coreDataPlus.appendingPathComponent("SampleModel3.xcdatamodel").path
        let result = try Self.storefs(["migrate", "--in-place", old.path, "--model", target])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("SampleModel2 → SampleModel3: lightweight"), "\(result.output)")
        if expected["ExpensiveSportCar"] != nil {
            #expect(result.output.contains("SampleModel → SampleModel2: lightweight"), "\(result.output)")
            Self.renameEntity(&expected, "ExpensiveSportCar", "LuxuryCar")
        }
        for entity in ["Car", "SportCar", "LuxuryCar"] {
            Self.removeProperty(&expected, entity, "color")
            Self.removeProperty(&expected, entity, "maker")
            Self.setProperty(&expected, entity, "previousOwners", to: "")  // a new to-many: an empty folder
        }
        Self.removeProperty(&expected, "Person", "id")
        Self.setProperty(&expected, "Person", "previousCars", to: "")
        expected["Maker"] = [:]
        #expect((expected["Car"]?.count ?? 0) > 100)
        Self.expectSame(try Self.read(old, model: target), expected)
    }

    // MARK: - The mount's version check

    /// A store mounted with another version of its model: read-write refused, naming what differs
    /// and the command that migrates; read-only mounted with the store's own model, with a notice.
    @Test func mountChecksTheStoresVersionHashes() throws {
        try requireFuse()
        let folder = try Self.folder()
        let store = try Self.copyCorpusStore(
            "wibosco_CoreDataMigration-Example_CoreDataMigration_Example_1.sqlite", to: folder, as: "Posts.sqlite")
        let mountPoint = folder.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let checksum = try Self.sha256(store)
        let refused = try Self.storefs(["mount", store.path, mountPoint.path, "--model", Self.wibosco.path])
        #expect(refused.status != 0)
        for words in [
            "another version of the model", "entities added: Color", "changed: Post", "storefs migrate --in-place"
        ] {
            #expect(refused.error.contains(words), "\(refused.error)")
        }
        #expect(!Self.isMounted(mountPoint.path))
        let notice = try Self.storefs(["mount", store.path, mountPoint.path, "--model", Self.wibosco.path, "-o", "ro"])
        #expect(notice.status == 0, "\(notice.error)")
        #expect(notice.error.contains("read-only with the store's own model"), "\(notice.error)")
        let color = try run("cat", [mountPoint.path + "/Post/p1/color"])
        #expect(color.output == "6343E2\n", "version 1's attribute, read with the store's own model")
        #expect(try Self.storefs(["unmount", mountPoint.path]).status == 0)
        #expect(try Self.sha256(store) == checksum)
        #expect(
            try Self.storefs(["migrate", "--in-place", store.path, "--model", Self.wiboscoVersion(" 2")]).status == 0)
        let check = try Self.storefs(["mount", store.path, mountPoint.path, "--model", Self.wiboscoVersion(" 2")])
        #expect(check.status == 0, "at version 2 the store mounts read-write with version 2: \(check.error)")
        #expect(try Self.storefs(["unmount", mountPoint.path]).status == 0)
    }

    static func isMounted(_ path: String) -> Bool {
        ((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "").split(separator: "\n").contains {
            $0.split(separator: " ").dropFirst().first.map(String.init) == path
        }
    }

    // MARK: - model --diff

    @Test func modelDiffSaysWhatChangedAndWhetherItIsLightweight() throws {
        let renamed = try Self.storefs(["model", "--diff", Self.rule("Base"), Self.rule("Renamed")])
        #expect(renamed.status == 0, "\(renamed.error)")
        for line in [
            "> Writer: entity renamed from Author (renaming identifier)",
            "    > fullName (attribute): renamed from name (renaming identifier)",
            "    > heading (attribute): renamed from title (renaming identifier)",
            "    > works (relationship): renamed from books (renaming identifier), inverse author → writer",
            "lightweight migration: possible"
        ] {
            #expect(renamed.output.contains(line + "\n"), "\(renamed.output)")
        }
        let changed = try Self.storefs(["model", "--diff", Self.rule("Base"), Self.rule("ChangedType")])
        #expect(
            changed.output.contains("    ~ pages (attribute): changed, type Integer 16 → String [not lightweight]"),
            "\(changed.output)")
        #expect(changed.output.contains("lightweight migration: not possible"), "\(changed.output)")
        // A store against a bundle: its cached model against the bundle's current version.
        let store = Corpus.url("sqlite/wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite")
        let folder = try Self.folder()
        let copy = folder.appendingPathComponent("Posts.sqlite")
        try FileManager.default.copyItem(at: store, to: copy)
        let bundle = try Self.storefs(["model", "--diff", copy.path, Self.wibosco.path])
        #expect(bundle.output.contains("    + hide (attribute): added\n"), "\(bundle.output)")
        #expect(bundle.output.contains("= unchanged: Color\n"), "\(bundle.output)")
        let same = try Self.storefs(["model", "--diff", copy.path, Self.wiboscoVersion(" 3")])
        #expect(same.output.contains("same version hashes"), "\(same.output)")
    }

    // MARK: - The mapping fixtures

    /// The committed mapping models are what MappingFixtures writes, so they can be made again:
    /// with STOREFS_WRITE_FIXTURES=1 this test writes them before it compares.
    @Test func committedMappingFixturesAreWhatTheWriterWrites() throws {
        let folder = Self.fixtures.appendingPathComponent("migration/wibosco")
        let xmlFile = folder.appendingPathComponent("Migration2to3WithoutPolicy.xcmappingmodel/xcmapping.xml")
        let cdmFile = folder.appendingPathComponent("Migration2to3WithoutPolicy.cdm")
        let v2 = try ModelLoader.load(from: URL(fileURLWithPath: Self.wiboscoVersion(" 2"))).model
        let v3 = try ModelLoader.load(from: URL(fileURLWithPath: Self.wiboscoVersion(" 3"))).model
        let cdm = MappingFixtures.cdm(entities: Self.withoutPolicy, source: v2, destination: v3)
        if ProcessInfo.processInfo.environment["STOREFS_WRITE_FIXTURES"] == "1" {
            try FileManager.default.createDirectory(
                at: xmlFile.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Self.withoutPolicyXML.write(to: xmlFile, atomically: true, encoding: .utf8)
            try cdm.write(to: cdmFile)
        }
        #expect(try String(contentsOf: xmlFile, encoding: .utf8) == Self.withoutPolicyXML)
        #expect(try Data(contentsOf: cdmFile) == cdm)
    }

    /// Version 2 → 3 of the wibosco model without the app's custom policy.
    static let withoutPolicy: [MappingFixtures.Entity] = [
        .init(
            source: "Post", destination: "Color",
            attributes: [
                (
                    "colorID",
                    .function(
                        .variable("source", keyPath: ["postID"]), selector: "stringByAppendingString:",
                        arguments: [.constant(.string("-color"))])
                ),
                ("hex", .variable("source", keyPath: ["hexColor"]))
            ],
            relationships: [("post", nil)]),
        .init(
            source: "Post", destination: "Post", attributes: [("date", nil), ("postID", nil)],
            relationships: [
                (
                    "color",
                    .function(
                        .variable("manager", keyPath: []),
                        selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                        arguments: [.constant(.string("PostToColor")), .variable("source", keyPath: [])])
                )
            ])
    ]

    static var withoutPolicyXML: String {
        MappingFixtures.xcmapping(
            sourceModel:
                "CoreDataMigration-Example/CoreData/Model/CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example 2.xcdatamodel",
            destinationModel:
                "CoreDataMigration-Example/CoreData/Model/CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example 3.xcdatamodel",
            entities: withoutPolicy, uuid: "6E2A3F0B-58C4-4C3B-9D1E-2F7A8B9C0D11")
    }
}
