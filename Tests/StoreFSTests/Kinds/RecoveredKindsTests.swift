import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// `.recovered`, `.wal` and `.timeline` (``RecoveredNode``, ``StoreVersionsFileSystem``,
/// ``TimelineNode``) on a sample store whose people p3–p5 were deleted and p6 renamed with plain
/// SQL (secure_delete off, the WAL kept), mounted read-only on the embedded kernel.
@Suite struct RecoveredKindsTests {
    final class Mount {
        let folder: URL
        let url: URL
        let coordinator: PersistentStoreCoordinator
        let fileSystem: StoreVersionsFileSystem
        let kernel: EmbeddedKernel
        /// p3's last name, p6's and the 151st person's (by key), before the changes.
        let lastNames: [Int64: String]

        /// `partialChanges`: instead of the deletions and the rename, in rollback-journal mode, the
        /// 151st person deleted and a short row inserted with its key, in one transaction.
        init(readOnly: Bool = true, partialChanges: Bool = false) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("recovered-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            url = folder.appendingPathComponent("Company.sqlite")
            let seed = try PersistentStoreCoordinator.open(
                at: url, types: [SQLiteStoreType()], model: SampleModel.make(),
                options: StoreOptions(createIfMissing: true))
            try SampleGenerator(objectCount: 300).populate(seed.newContext())
            seed.close()
            var names: [Int64: String] = [:]
            for key in [Int64(3), 6] {
                names[key] = try Self.sqlite(url, "SELECT ZLASTNAME FROM ZPERSON WHERE Z_PK = \(key)")
            }
            names[151] = try Self.sqlite(url, "SELECT ZLASTNAME FROM ZPERSON ORDER BY Z_PK LIMIT 1 OFFSET 150")
            lastNames = names
            if partialChanges {
                // The 151st person's row lies among others in a full page: deleted, it is a free
                // block; the row inserted with its key goes to the same page and takes the end of
                // that block. (Rows near the last-written page, as the 41st is now, may not.)
                _ = try Self.sqlite(
                    url, "PRAGMA journal_mode = DELETE", "PRAGMA secure_delete = OFF",
                    "CREATE TEMP TABLE k AS SELECT Z_PK AS pk, Z_ENT AS ent FROM ZPERSON ORDER BY Z_PK LIMIT 1 OFFSET 150",
                    "BEGIN", "DELETE FROM ZPERSON WHERE Z_PK = (SELECT pk FROM k)",
                    "INSERT INTO ZPERSON (Z_PK, Z_ENT, Z_OPT, ZLASTNAME) SELECT pk, ent, 1, 'Y' FROM k", "COMMIT")
            } else {
                _ = try Self.sqlite(
                    url, ".dbconfig no_ckpt_on_close on", "PRAGMA secure_delete = OFF",
                    "DELETE FROM ZPERSON WHERE Z_PK BETWEEN 3 AND 5",
                    "UPDATE ZPERSON SET ZLASTNAME = 'Hopper' WHERE Z_PK = 6")
            }
            try? FileManager.default.removeItem(atPath: url.path + "-shm")
            coordinator = try PersistentStoreCoordinator.open(
                at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: readOnly))
            var configuration = StoreFSConfiguration()
            configuration.readOnly = readOnly
            configuration.mountPoint = "/mnt/company"
            fileSystem = StoreVersionsFileSystem(
                store: StoreFileSystem(coordinator: coordinator, configuration: configuration))
            kernel = EmbeddedKernel(fileSystem)
        }

        /// Runs the sqlite3 tool on `url` with `commands`; its output without the last newline.
        static func sqlite(_ url: URL, _ commands: String...) throws -> String {
            // runTool bounds the wait (a test never hangs CI).
            let result = try runTool("sqlite3", [url.path] + commands, timeout: 120)
            guard result.status == 0 else {
                throw SQLiteToolError(description: "sqlite3 \(commands) failed (\(result.status)): \(result.error)")
            }
            return result.output.trimmingCharacters(in: .newlines)
        }

        func finish() -> EmbeddedKernel.Leftovers {
            let leftovers = kernel.finish()
            fileSystem.willUnmount()
            coordinator.close()
            try? FileManager.default.removeItem(at: folder)
            return leftovers
        }

        func text(_ path: String) throws -> String { String(decoding: try kernel.read(path), as: UTF8.self) }
        func xattr(_ path: String, _ name: String) throws -> String {
            String(decoding: try kernel.getxattr(path, name), as: UTF8.self)
        }
    }

    struct SQLiteToolError: Error, CustomStringConvertible { var description: String }

    @Test func deletedAndSupersededRowsAreObjectFolders() throws {
        let mount = try Mount()
        let k = mount.kernel
        #expect(!(try k.list("")).contains(".recovered"), "reachable, not listed")
        #expect(try k.list(".recovered") == ["Manager"])
        let names = try k.list(".recovered/Manager")
        #expect(names.map { $0.prefix(3) } == ["p3-", "p4-", "p5-", "p6-"], "\(names)")
        let p3 = try #require(names.first { $0.hasPrefix("p3-") })
        let p6 = try #require(names.first { $0.hasPrefix("p6-") })
        #expect(try mount.text(".recovered/Manager/\(p3)/lastName") == mount.lastNames[3]! + "\n")
        #expect(try mount.text(".recovered/Manager/\(p6)/lastName") == mount.lastNames[6]! + "\n")
        #expect(try k.list(".recovered/Manager/\(p3)").contains("lastName"))
        #expect(try mount.xattr(".recovered/Manager/\(p3)", "user.recovered.key") == "p3")
        #expect(try mount.xattr(".recovered/Manager/\(p3)", "user.recovered.live") == "deleted")
        #expect(try mount.xattr(".recovered/Manager/\(p6)", "user.recovered.live") == "differs")
        #expect(try mount.xattr(".recovered/Manager/\(p6)", "user.recovered.differences") == "lastName")
        let source = try mount.xattr(".recovered/Manager/\(p3)", "user.recovered.source")
        #expect(source.contains("database page") && source.contains("replaced by WAL commit 1"), "\(source)")
        // A to-one whose destination lives is a link to it.
        let department = try k.readlink(".recovered/Manager/\(p3)/department")
        #expect(department.hasPrefix("../../../Department/p"))
        #expect(errnoOf { try k.write(".recovered/Manager/\(p3)/lastName", Data("x\n".utf8)) } == EROFS)
        #expect(errnoOf { try k.rmdir(".recovered/Manager/\(p3)") } == EROFS)
        #expect(errnoOf { _ = try k.stat(".recovered/Manager/p3-00000000") } == ENOENT)
        #expect(errnoOf { _ = try k.stat(".recovered/Nobody") } == ENOENT)
        #expect(try k.list(".recovered/Department").isEmpty, "an entity without records is an empty folder")
        let leftovers = mount.finish()
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func theWALsCommitsAreVersionsOfTheStore() throws {
        let mount = try Mount()
        let k = mount.kernel
        #expect(try k.list(".wal") == ["c0", "c1", "c2"])
        #expect(try k.list(".wal/c0/Manager").contains("p3"))
        #expect(!(try k.list(".wal/c2/Manager")).contains("p3"))
        #expect(try mount.text(".wal/c0/Manager/p6/lastName") == mount.lastNames[6]! + "\n")
        #expect(try mount.text(".wal/c2/Manager/p6/lastName") == "Hopper\n")
        #expect(try mount.text("Manager/p6/lastName") == "Hopper\n", "the store itself is the last version")
        #expect(try mount.xattr(".wal/c1", "user.version.commit") == "1")
        #expect(errnoOf { _ = try k.stat(".wal/c3") } == ENOENT)
        #expect(errnoOf { _ = try k.stat(".wal/c01") } == ENOENT)
        #expect(errnoOf { try k.write(".wal/c0/Manager/p6/lastName", Data("x\n".utf8)) } == EROFS)
        #expect(errnoOf { try k.mkdir(".wal/c0/Manager/p9999") } == EROFS)
        // Versions entered again and again each show themselves.
        for round in 0..<2 {
            for version in ["c0", "c1", "c2", "c0"] {
                #expect(!(try k.list(".wal/\(version)/Department")).isEmpty, "round \(round) \(version)")
            }
        }
        let leftovers = mount.finish()
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func theTimelineLinksWhatIsDatedEachDay() throws {
        let mount = try Mount()
        let k = mount.kernel
        let context = mount.coordinator.newContext()
        let manager = try #require(mount.coordinator.model.entityID(named: "Manager"))
        let p7 = try #require(try context.snapshot(of: ObjectID(entity: manager, key: PrimaryKey(7))))
        guard case .date(let born)? = p7.attributes["birthDate"] else {
            Issue.record("the sample's p7 has no birthDate")
            return
        }
        let day = try #require(TimelineNode.Day(time: born.timeIntervalSinceReferenceDate))
        let path =
            ".timeline/\(TimelineNode.folderName(day.year, digits: 4))/"
            + "\(TimelineNode.folderName(day.month, digits: 2))/\(TimelineNode.folderName(day.day, digits: 2))"
        #expect(try k.list(".timeline").contains(TimelineNode.folderName(day.year, digits: 4)))
        #expect(try k.list(path).contains("Manager-p7"))
        #expect(try k.readlink(path + "/Manager-p7") == "../../../../Manager/p7")
        #expect(try k.stat(path).modificationTime == day.date)
        #expect(errnoOf { _ = try k.stat(".timeline/0000") } == ENOENT)
        #expect(errnoOf { try k.unlink(path + "/Manager-p7") } == EROFS)
        let leftovers = mount.finish()
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// A row deleted among others, the next insert into its page placed over its end: the record
    /// shows what survived, says it is partial and which attributes were lost, and export says
    /// the same.
    @Test func aPartialRecordHoldsWhatSurvivedAndNamesWhatDidNot() throws {
        let mount = try Mount(partialChanges: true)
        let k = mount.kernel
        let lastName = try #require(mount.lastNames[151])
        // The deleted person's row, cut where the short row took the end of its block. Saves may
        // have left whole older copies of the row elsewhere in the file as well: those are not it.
        var copies: [String] = []
        var found: String?
        for entity in try k.list(".recovered") {
            for name in try k.list(".recovered/\(entity)")
            where (try? mount.text(".recovered/\(entity)/\(name)/lastName")) == lastName + "\n" {
                copies.append(".recovered/\(entity)/\(name)")
                if (try? mount.xattr(".recovered/\(entity)/\(name)", "user.recovered.partial")) != nil {
                    found = ".recovered/\(entity)/\(name)"
                }
            }
        }
        let folder = try #require(found, "the deleted person's record is recovered, partial: copies \(copies)")
        let partial = try mount.xattr(folder, "user.recovered.partial")
        #expect(partial.hasSuffix("bytes (the rest was overwritten)"), "\(partial)")
        let missing = try mount.xattr(folder, "user.recovered.missing").split(separator: ",").map(String.init)
        #expect(!missing.isEmpty)
        let files = try k.list(folder)
        for name in missing {
            #expect(!files.contains(name), "\(name) was lost: no file")
            #expect(errnoOf { _ = try k.stat(folder + "/" + name) } == ENOENT)
        }
        #expect(
            files.contains("firstName") && files.contains("lastName") && Set(files).isDisjoint(with: missing),
            "what survived is there: \(files)")
        #expect(
            try mount.xattr(folder, "user.recovered.live") == "unknown key", "its key was in the block's first bytes")
        #expect(try mount.xattr(".recovered", "user.recovered.summary").contains("1 of them partial"))

        let store = try #require(mount.coordinator.store.recovering)
        let records = try store.recoveredRecords(cancelled: { false })
        let name = String(folder.split(separator: "/").last!)
        let index = try #require(records.records.firstIndex { $0.name == name })
        var line: [UInt8] = []
        try RecoveredRecordLines(model: mount.coordinator.model, storeUUID: "U").append(records, index, into: &line)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
            "\(String(decoding: line, as: UTF8.self))")
        #expect(json["@missing"] as? [String] == missing)
        let bytes = try #require(json["@partial"] as? [String: Int])
        #expect(bytes["survived"].map { $0 < bytes["length"]! && $0 > 0 } == true, "\(bytes)")
        #expect(json["lastName"] as? String == lastName)
        let leftovers = mount.finish()
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// The first read of what the file remembers walks every page: FuseKit serves it off the
    /// thread that receives requests, and a read whose request was interrupted stops and is not
    /// kept (the next read walks again and gives every record).
    @Test func anInterruptedReadOfWhatTheFileRemembersStopsAndIsNotKept() throws {
        let mount = try Mount()
        let fileSystem = mount.fileSystem
        #expect(fileSystem.mayTakeLong(Node.recovered(.folder).inode))
        #expect(fileSystem.mayTakeLong(Node.recovered(.record, key: 3).inode))
        #expect(fileSystem.mayTakeLong(Node.timeline(.day).inode))
        #expect(!fileSystem.mayTakeLong(Node.entity(EntityID(1)).inode), "an entity folder is served at once")
        let mapping = fileSystem.store.mapping
        let interruption = RequestInterruption()
        interruption.interrupt()
        let cut = try RequestInterruption.$current.withValue(interruption) { () throws(FileSystemError) in
            try mapping.recoveredRecords()
        }
        #expect(cut.cancelled, "the interrupted read stopped")
        #expect(cut.records.isEmpty)
        #expect(try mount.kernel.list(".recovered/Manager").count == 4, "the next read is whole")
        let leftovers = mount.finish()
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func aReadWriteMountShowsNoRecoveredRecordsAndNoVersions() throws {
        let mount = try Mount(readOnly: false)
        let k = mount.kernel
        #expect(errnoOf { _ = try k.stat(".recovered") } == ENOENT)
        #expect(errnoOf { _ = try k.stat(".wal") } == ENOENT)
        let leftovers = mount.finish()
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}
