import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Synchronization
import Testing
import XMLStore
import BinaryStore

#if canImport(Glibc)
    import Glibc
#endif

/// Store files that once ended the process that opened them (Tests/Fixtures/hostile, found by
/// scripts/fuzz, scripts/mutate-stores or reported in issue 11), opened by the real store code as
/// `storefs info` and a read-only mount open them. Each must open, or be refused with an
/// ObjectGraphError whose message names the file.
@Suite struct HostileStoreTests {
    static let types: [any PersistentStoreType] = [SQLiteStoreType(), XMLStoreType(), BinaryStoreType()]

    /// Opens `file` without a model as `storefs info` does, then reads what a mount reads: every
    /// entity's objects, their values and relationships, fetched properties.
    @discardableResult
    static func openAndWalk(_ file: URL, readOnly: Bool = true) throws -> PersistentStoreCoordinator {
        _ = try PersistentStoreCoordinator.metadata(at: file, types: types)
        let coordinator = try PersistentStoreCoordinator.open(
            at: file, types: types, options: StoreOptions(readOnly: readOnly))
        let context = coordinator.newContext()
        let model = coordinator.model
        _ = try coordinator.store.metadata()
        for entity in model.entities {
            _ = try coordinator.store.count(of: entity.id)
            for id in try context.objectIDs(of: entity.id) {
                for attribute in entity.allAttributes { _ = try context.value(of: attribute.name, for: id) }
                for relationship in entity.allRelationships {
                    if relationship.isToMany {
                        _ = try context.destinations(of: relationship.name, for: id)
                    } else if let destination = try context.destination(of: relationship.name, for: id) {
                        _ = try context.snapshot(of: destination)
                    }
                }
            }
        }
        return coordinator
    }

    /// Expects `body` to throw an ObjectGraphError of `code` whose message names `file` and
    /// contains each of `words`.
    static func expectRefusal(
        _ code: ObjectGraphError.Code, naming file: URL, _ words: [String],
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) {
        do {
            try body()
            Issue.record("\(file.lastPathComponent) opened; expected a \(code) error", sourceLocation: sourceLocation)
        } catch let error as ObjectGraphError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(file.path), "\(error)", sourceLocation: sourceLocation)
            for word in words { #expect(error.message.contains(word), "\(error)", sourceLocation: sourceLocation) }
        } catch {
            Issue.record("not an ObjectGraphError: \(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: - Every kept input

    @Test(arguments: HostileInputs.names(in: "sqlite-store"))
    func everyKeptSQLiteStoreOpensOrIsRefusedWithAMessage(name: String) throws {
        try Self.opensOrIsRefused("sqlite-store", name)
    }

    @Test(arguments: HostileInputs.names(in: "xml-store"))
    func everyKeptXMLStoreOpensOrIsRefusedWithAMessage(name: String) throws {
        try Self.opensOrIsRefused("xml-store", name)
    }

    static func opensOrIsRefused(_ target: String, _ name: String) throws {
        let (folder, file) = try HostileInputs.copy(target, name)
        defer { try? FileManager.default.removeItem(at: folder) }
        let before = try Data(contentsOf: file)
        do {
            try openAndWalk(file).store.close()
        } catch let error as ObjectGraphError {
            #expect(error.message.contains(file.path) || error.message.contains(file.lastPathComponent), "\(error)")
        }
        #expect(try Data(contentsOf: file) == before, "opening \(name) read-only changed it")
    }

    // MARK: - SQLite, one by one

    @Test func textInZMaxOpensReadsAndHandsOutKeysAboveEveryRow() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "zmax-text.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Until now a `try!` inside GRDB's row decoding ended `storefs info` and every mount. Z_MAX
        // that is not a number counts as 0: new keys come after the highest Z_PK in use instead.
        let coordinator = try Self.openAndWalk(file, readOnly: false)
        defer { coordinator.store.close() }
        let person = try #require(coordinator.model.entityID(named: "Person"))
        let tree = coordinator.model.entities.filter { $0.rootID == person }
        let stored = try tree.flatMap { try coordinator.store.objectIDs(of: $0.id) }.map(\.key.rawValue)
        #expect(try coordinator.store.count(of: try #require(coordinator.model.entityID(named: "Employee"))) == 2)
        let keys = try coordinator.store.reserveKeys(in: person, count: 2)
        #expect(keys.count == 2)
        #expect(keys.allSatisfy { key in stored.allSatisfy { key.rawValue > $0 } }, "\(keys) after \(stored)")
        #expect(Set(keys).count == 2)
    }

    @Test func int64MaxInZMaxRefusesNewKeysWithoutOverflow() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "zmax-int64-max.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        let coordinator = try Self.openAndWalk(file, readOnly: false)
        defer { coordinator.store.close() }
        let person = try #require(coordinator.model.entityID(named: "Person"))
        Self.expectRefusal(.noSpace, naming: file, ["9223372036854775807", "no higher key"]) {
            _ = try coordinator.store.reserveKeys(in: person, count: 1)
        }
    }

    @Test func textInZEntLeavesThatRowOutOfEveryEntity() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "zent-text.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        let coordinator = try Self.openAndWalk(file)
        defer { coordinator.store.close() }
        let total = try coordinator.model.entities.reduce(0) { $0 + (try coordinator.store.count(of: $1.id)) }
        #expect(total == 8, "9 objects, one of which has no integer Z_ENT")
    }

    @Test func textInZOptReadsAsVersionZero() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "zopt-text.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        let coordinator = try Self.openAndWalk(file)
        defer { coordinator.store.close() }
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        let snapshots = try coordinator.store.snapshots(for: try coordinator.store.objectIDs(of: employee))
        #expect(snapshots.count == 2 && snapshots.allSatisfy { $0.version == 0 })
    }

    @Test func int64MaxInAToOneColumnIsFollowedWithoutOverflow() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "foreign-key-int64-max.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Following the link read ahead the keys after it: Int64.max + 1 trapped (scripts/mutate-stores).
        let coordinator = try Self.openAndWalk(file)
        defer { coordinator.store.close() }
        let context = coordinator.newContext()
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        let first = try #require(try context.objectIDs(of: employee).first)
        let department = try #require(try context.destination(of: "department", for: first))
        #expect(department.key.rawValue == Int64.max)
        #expect(try context.snapshot(of: department) == nil)
        #expect(try context.objectID(forKey: department.key, in: department.entity) == nil)
    }

    @Test func aNegativeKeyInAToOneColumnIsNoLinkAndRelinkingSaves() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "foreign-key-negative.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Relinking faults the old destination to unlink its inverse; its read-ahead computed
        // Int64.max - (-5) and trapped (found in review of the reliability merge).
        let coordinator = try Self.openAndWalk(file, readOnly: false)
        defer { coordinator.store.close() }
        let context = coordinator.newContext()
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        let department = try #require(coordinator.model.entityID(named: "Department"))
        let first = try #require(try context.objectIDs(of: employee).first)
        #expect(try context.destination(of: "department", for: first) == nil, "a key below 1 is no object's")
        let target = try #require(try context.objectIDs(of: department).first)
        try context.setDestination(target, of: "department", for: first)
        let outcome = context.save(holding: [])
        #expect(outcome.failed.isEmpty && outcome.storeError == nil, "\(outcome)")
        #expect(outcome.saved.contains(first))
        #expect(try coordinator.newContext().destination(of: "department", for: first) == target)
    }

    @Test func textInAToOneColumnIsAClearErrorNamingTheRow() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "foreign-key-text.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        let coordinator = try PersistentStoreCoordinator.open(
            at: file, types: Self.types, options: StoreOptions(readOnly: true))
        defer { coordinator.store.close() }
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        do {
            _ = try coordinator.store.snapshots(for: try coordinator.store.objectIDs(of: employee))
            Issue.record("a TEXT key in ZDEPARTMENT was read")
        } catch {
            #expect(error.code == .corruptStore)
            #expect(error.message.contains("department") && error.message.contains("TEXT 'abc'"), "\(error)")
        }
    }

    @Test func textKeyInAJoinTableIsLeftOut() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "join-table-text-keys.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        let coordinator = try Self.openAndWalk(file)
        defer { coordinator.store.close() }
        let employee = try #require(coordinator.model.entityID(named: "Employee"))
        let ids = try coordinator.store.objectIDs(of: employee)
        let projects = try coordinator.store.toManyDestinations(of: "projects", in: employee, for: ids)
        #expect(projects.values.reduce(0) { $0 + $1.count } == 2, "three pairs, one of which has a TEXT key")
    }

    @Test func blobInZUUIDIsAClearError() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "zuuid-blob.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        Self.expectRefusal(.corruptStore, naming: file, ["Z_UUID", "BLOB"]) { try Self.openAndWalk(file) }
    }

    @Test func integerInZPlistIsAClearError() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "zplist-integer.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        Self.expectRefusal(.corruptStore, naming: file, ["Z_PLIST", "INTEGER 42"]) { try Self.openAndWalk(file) }
    }

    @Test func blobInZNameStillMatchesTheEntityByItsPlace() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "zname-blob.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        let coordinator = try Self.openAndWalk(file)
        defer { coordinator.store.close() }
        #expect(try coordinator.store.count(of: try #require(coordinator.model.entityID(named: "Milestone"))) == 2)
    }

    @Test func zSuperCycleWithoutAModelIsAClearError() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "zsuper-cycle.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        Self.expectRefusal(.corruptStore, naming: file, ["inheritance cycle"]) { try Self.openAndWalk(file) }
    }

    @Test func zPrimaryKeyWithoutZMaxIsAClearError() throws {
        let (folder, file) = try HostileInputs.copy("sqlite-store", "zprimarykey-without-zmax.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        Self.expectRefusal(.corruptStore, naming: file, ["Z_PRIMARYKEY has no column Z_MAX"]) {
            try Self.openAndWalk(file)
        }
    }

    @Test func nonPositiveKeysAreLeftOutAndTheStoreMigratesToEveryType() throws {
        // A Project whose Z_PK is -5: the binary writer trapped converting it to an unsigned key,
        // and the XML writer wrote z-5, which no reader accepts (found migrating mutated stores).
        let (folder, file) = try HostileInputs.copy("sqlite-store", "negative-key.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        let coordinator = try Self.openAndWalk(file)
        defer { coordinator.store.close() }
        let project = try #require(coordinator.model.entityID(named: "Project"))
        #expect(try coordinator.store.objectIDs(of: project).map(\.key) == [PrimaryKey(2)])
        #expect(try coordinator.store.count(of: project) == 1)
        for suffix in ["xml", "binary"] {
            let target = folder.appendingPathComponent("migrated.\(suffix)")
            try coordinator.migrate(
                to: target, type: try PersistentStoreCoordinator.storeType(for: target, among: Self.types))
            let reopened = try Self.openAndWalk(target)
            #expect(try reopened.store.count(of: project) == 1, "\(suffix)")
            reopened.store.close()
        }
    }

    @Test func keysTooLargeForOneXMLStoreAreRefusedNotTrapped() throws {
        // Keys near Int64.max in several entities: an XML store numbers objects z<N> across the
        // whole file, and adding the entities' offsets overflowed.
        let (folder, file) = try HostileInputs.copy("sqlite-store", "keys-near-int64-max.sqlite")
        defer { try? FileManager.default.removeItem(at: folder) }
        let coordinator = try Self.openAndWalk(file)
        defer { coordinator.store.close() }
        let target = folder.appendingPathComponent("migrated.xml")
        do {
            try coordinator.migrate(to: target, type: XMLStoreType())
            Issue.record("the graph was written to an XML store")
        } catch {
            #expect(error.code == .unsupported && error.message.contains("too large for one XML store"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: target.path))
        let binary = folder.appendingPathComponent("migrated.binary")
        try coordinator.migrate(to: binary, type: BinaryStoreType())
        try Self.openAndWalk(binary).store.close()
    }

    // MARK: - Atomic stores

    @Test(arguments: ["xml", "binary"])
    func temporaryFileOfASaveKilledMidwayIsRemovedWhenTheStoreOpensForWriting(suffix: String) throws {
        // kill -9 between writing the temporary file and renaming it left it beside the store
        // for good (found by scripts/crash-trials).
        let folder = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("Company.\(suffix)")
        let type = try PersistentStoreCoordinator.storeType(for: file, among: Self.types)
        try type.open(
            at: file, model: SampleModel.make(), options: StoreOptions(createIfMissing: true),
            initialMetadata: StoreMetadata()
        )
        .close()
        var dead: pid_t = 4_000_000
        while kill(dead, 0) == 0 || errno != ESRCH { dead -= 1 }
        let stale = folder.appendingPathComponent(".Company.\(suffix).storefs-\(dead)-12345")
        let live = folder.appendingPathComponent(".Company.\(suffix).storefs-\(getpid())-678")
        let other = folder.appendingPathComponent(".Other.\(suffix).storefs-\(dead)-9")
        for url in [stale, live, other] { try Data("half a save".utf8).write(to: url) }
        try type.open(at: file, model: nil, options: StoreOptions(readOnly: true), initialMetadata: StoreMetadata())
            .close()
        #expect(FileManager.default.fileExists(atPath: stale.path), "a read-only open removed a file")
        try type.open(at: file, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata()).close()
        #expect(!FileManager.default.fileExists(atPath: stale.path), "the dead save's file is still there")
        #expect(FileManager.default.fileExists(atPath: live.path), "a running process's save was removed")
        #expect(FileManager.default.fileExists(atPath: other.path), "another store's file was removed")
    }

    /// Z_METADATA's plist nested 300,000 levels deep (PropertyListSerialization recursed until
    /// the stack ran out): a clear error, binary or XML.
    @Test(arguments: ["binary", "xml"])
    func sqliteStoreWithADeepMetadataPlistIsAClearError(format: String) throws {
        let folder = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = folder.appendingPathComponent("Deep.sqlite")
        let seed = try PersistentStoreCoordinator.open(
            at: store, types: Self.types, model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
        seed.close()
        let depth = 300_000
        var plist = Data()
        if format == "xml" {
            plist = Data(
                ("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>k</key>"
                    + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth)
                    + "</dict></plist>").utf8)
        } else {
            plist = nestedBinaryPropertyList(depth: depth)
        }
        let hex = plist.map { String(format: "%02X", $0) }.joined()
        let sql = "UPDATE Z_METADATA SET Z_PLIST = X'\(hex)';"
        let updated = try runTool("sqlite3", [store.path], input: Data(sql.utf8), timeout: 120)
        #expect(updated.status == 0, "\(updated.error)")
        for readOnly in [true, false] {
            Self.expectRefusal(.corruptStore, naming: store, []) {
                _ = try PersistentStoreCoordinator.open(
                    at: store, types: Self.types, options: StoreOptions(readOnly: readOnly))
            }
        }
    }

    // MARK: - XML

    @Test func xmlStoreWithInvalidUTF8InAnElementNameIsAClearError() throws {
        // FoundationXML force-unwraps the decoding of element names: this file ended the process.
        for name in ["invalid-utf8-element-name.xml", "invalid-utf8-element-name-things.xml"] {
            let (folder, file) = try HostileInputs.copy("xml-store", name)
            defer { try? FileManager.default.removeItem(at: folder) }
            Self.expectRefusal(.corruptStore, naming: file, ["not valid UTF-8", "line "]) { try Self.openAndWalk(file) }
        }
    }

    @Test func xmlStoreNested200000ElementsDeepIsAClearError() throws {
        let folder = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let text = try String(
            contentsOf: HostileInputs.url("xml-store", "next-object-id-int64-max.xml"), encoding: .utf8)
        for (label, deep) in [
            (
                "object",
                text.replacingOccurrences(
                    of: "<attribute name=\"title\"",
                    with: String(repeating: "<x>", count: 200_000) + String(repeating: "</x>", count: 200_000)
                        + "<attribute name=\"title\"")
            ),
            (
                "metadata",
                text.replacingOccurrences(
                    of: "<metadata></metadata>",
                    with: "<metadata><plist version=\"1.0\"><dict><key>k</key>"
                        + String(repeating: "<array>", count: 200_000)
                        + String(repeating: "</array>", count: 200_000) + "</dict></plist></metadata>")
            )
        ] {
            let file = folder.appendingPathComponent("deep-\(label).xml")
            try Data(deep.utf8).write(to: file)
            do {
                try Self.openAndWalk(file)
                Issue.record("a store nested 200,000 deep in its \(label) opened")
            } catch let error as ObjectGraphError {
                #expect(error.code == .corruptStore && error.message.contains(file.path), "\(error)")
            }
        }
    }

    @Test func xmlStoreWithNextObjectIDAtInt64MaxRefusesNewKeysWithoutOverflow() throws {
        let (folder, file) = try HostileInputs.copy("xml-store", "next-object-id-int64-max.xml")
        defer { try? FileManager.default.removeItem(at: folder) }
        let coordinator = try Self.openAndWalk(file, readOnly: false)
        defer { coordinator.store.close() }
        let note = try #require(coordinator.model.entityID(named: "NOTE"))
        #expect(try coordinator.store.count(of: note) == 1)
        Self.expectRefusal(.noSpace, naming: file, ["no higher key"]) {
            _ = try coordinator.store.reserveKeys(in: note, count: 1)
        }
    }

    /// The one-note XML fixture with `declarations` as its internal DTD subset and `title` (an
    /// entity reference) as the note's title, written to `folder/name`.
    static func xmlStore(in folder: URL, named name: String, declaring declarations: String, title: String) throws
        -> URL
    {
        var text = try String(
            contentsOf: HostileInputs.url("xml-store", "next-object-id-int64-max.xml"), encoding: .utf8)
        text = text.replacingOccurrences(
            of: "<!DOCTYPE database SYSTEM \"file:///System/Library/DTDs/CoreData.dtd\">",
            with: "<!DOCTYPE database [\(declarations)]>")
        text = text.replacingOccurrences(of: ">Hello<", with: ">\(title)<")
        let file = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file
    }

    /// The titles of the NOTE objects of `file`, opened and walked read-only.
    static func noteTitles(of file: URL) throws -> [AttributeValue?] {
        let coordinator = try openAndWalk(file)
        defer { coordinator.store.close() }
        let note = try #require(coordinator.model.entityID(named: "NOTE"))
        let context = coordinator.newContext()
        return try context.objectIDs(of: note).map { try context.value(of: "title", for: $0) }
    }

    @Test func xmlStoreWithAnExternalEntityDoesNotReadTheFile() throws {
        let folder = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = folder.appendingPathComponent("secret.txt")
        try Data("top secret".utf8).write(to: secret)
        let file = try Self.xmlStore(
            in: folder, named: "external.xml", declaring: "<!ENTITY xxe SYSTEM \"file://\(secret.path)\">",
            title: "&xxe;")
        do {
            for title in try Self.noteTitles(of: file) {
                #expect(title != .string("top secret"))
            }
        } catch let error as ObjectGraphError {
            #expect(!error.message.contains("top secret"), "\(error)")
        }
    }

    @Test func xmlStoreWithExpandingEntitiesIsReadInBoundedTimeAndMemory() throws {
        let folder = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        var subset = "<!ENTITY l0 \"lol\">"
        for i in 1...9 { subset += "<!ENTITY l\(i) \"\(String(repeating: "&l\(i - 1);", count: 10))\">" }
        let file = try Self.xmlStore(in: folder, named: "laughs.xml", declaring: subset, title: "&l9;")
        do {
            for value in try Self.noteTitles(of: file) {
                if case .string(let title) = value {
                    #expect(title.utf8.count < 10_000_000, "a billion laughs expanded to \(title.utf8.count) bytes")
                }
            }
        } catch let error as ObjectGraphError {
            #expect(error.message.contains(file.path), "\(error)")
        }
    }

    // MARK: - Files that are not regular files

    /// Runs `body` on its own thread; nil when it has not returned within `seconds` (a call
    /// blocked on a FIFO must not take the test run with it), else the problems it found.
    static func problems(within seconds: Double = 30, _ body: @escaping @Sendable () -> [String]) -> [String]? {
        let found = Mutex<[String]?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let problems = body()
            found.withLock { $0 = problems }
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return found.withLock { $0 }
    }

    enum Refusal {
        /// The message of the ObjectGraphError thrown.
        case refused(String)
        /// What happened instead.
        case problem(String)
    }

    /// How `body` refused, or what it did instead.
    static func refusal(_ what: String, _ body: () throws -> Any) -> Refusal {
        do {
            _ = try body()
            return .problem("\(what) succeeded")
        } catch let error as ObjectGraphError {
            return .refused(error.message)
        } catch {
            return .problem("\(what) threw \(error), not an ObjectGraphError")
        }
    }

    /// A FIFO named as a store is refused at once, whatever its suffix says and however it is
    /// opened (metadata, read-only, for writing, by content, by each type itself): an open of a
    /// FIFO would wait for a writer that never comes.
    @Test(arguments: ["Pipe.sqlite", "Pipe.xml", "Pipe.binary", "Pipe"])
    func aFIFONamedAsAStoreIsRefusedWithoutWaiting(name: String) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("storefs-fifo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent(name)
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let types = Self.types
        let problems = Self.problems {
            var problems: [String] = []
            func expectRefused(
                _ what: String, saying: String? = "is a FIFO, not a regular file", _ body: () throws -> Any
            ) {
                switch Self.refusal(what, body) {
                case .refused(let message):
                    if let saying, !message.contains(saying) { problems.append("\(what): \(message)") }
                case .problem(let problem): problems.append(problem)
                }
            }
            for readOnly in [true, false] {
                expectRefused("open, readOnly \(readOnly)") {
                    try PersistentStoreCoordinator.open(
                        at: fifo, types: types, options: StoreOptions(readOnly: readOnly))
                }
            }
            expectRefused("metadata") { try PersistentStoreCoordinator.metadata(at: fifo, types: types) }
            for type in types {
                // Each type's own reading refuses it too, when a caller names the type itself.
                expectRefused("\(type.name) metadata", saying: nil) { try type.metadata(at: fifo) }
                expectRefused("\(type.name) open", saying: nil) {
                    try type.open(
                        at: fifo, model: nil, options: StoreOptions(readOnly: true), initialMetadata: StoreMetadata())
                }
            }
            return problems
        }
        #expect(problems != nil, "opening a FIFO as a store waited for a writer")
        #expect(problems == [], "\(problems ?? [])")
    }

    @Test(arguments: ["/dev/zero", "/dev/null"])
    func aDeviceNamedAsAStoreOrMappingModelIsRefused(path: String) throws {
        let types = Self.types
        let problems = Self.problems {
            var problems: [String] = []
            let url = URL(fileURLWithPath: path)
            for result in [
                Self.refusal("open") {
                    try PersistentStoreCoordinator.open(at: url, types: types, forcedType: XMLStoreType())
                },
                Self.refusal("mapping model") { try MappingModelLoader.load(from: url, xmlStoreType: XMLStoreType()) }
            ] {
                switch result {
                case .refused(let message) where message.contains("is a character device, not a regular file"): break
                case .refused(let message): problems.append(message)
                case .problem(let problem): problems.append(problem)
                }
            }
            return problems
        }
        #expect(problems != nil, "reading \(path) as a store never ended")
        #expect(problems == [], "\(problems ?? [])")
    }
}
