import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// The version hashes a store records are the store's: storefs writing objects or metadata into a
/// store it did not migrate leaves them as Core Data wrote them, even where storefs's own
/// computation differs, and `storefs model --hashes` and `storefs info` show where it does.
@Suite struct RecordedHashesTests {
    static let dataUsage = "mvt-project_mvt_DataUsage_0d609c54856a.sqlite"

    static func copy(_ name: String) throws -> URL {
        let folder = try ScratchSpace.folder("hashes")
        let url = folder.appendingPathComponent(name)
        for extra in ["", "-wal"]
        where FileManager.default.fileExists(atPath: Corpus.url("sqlite/\(name)").path + extra) {
            try FileManager.default.copyItem(
                atPath: Corpus.url("sqlite/\(name)").path + extra, toPath: url.path + extra)
        }
        return url
    }

    static func sqlite3(_ store: URL, _ sql: String) throws -> [String] {
        try run("sqlite3", ["-batch", "-readonly", store.path, sql]).lines
    }

    static func recorded(_ store: URL) throws -> [String: Data] {
        let metadata = try SQLiteStoreType().metadata(at: store)
        return try #require(VersionHashComparison.recordedHashes(in: metadata))
    }

    /// DataUsage's cache does not decode, so storefs reads it with an inferred model whose hashes
    /// differ from every recorded one. Through a real mount: `mkdir` an object and write a value
    /// leave Z_METADATA byte for byte; `setfattr` of a key of the user's adds that key and leaves
    /// every hash (and every other key Core Data wrote) as it was.
    @Test func writingAStoreKeepsItsRecordedHashes() throws {
        let mounted = try MountedStore(copying: Corpus.url("sqlite/\(Self.dataUsage)"))
        let before = try Self.sqlite3(mounted.store, "SELECT hex(Z_PLIST) FROM Z_METADATA")
        let original = try SQLiteStoreType().metadata(at: mounted.store)
        let process = mounted.mountPoint.appendingPathComponent("Process")
        let made = try sh("mkdir \(process.path)/p500 && printf 'storefs\\n' > \(process.path)/p500/procname")
        #expect(made.status == 0, "\(made.error)")
        try mounted.unmount()
        #expect(try Self.sqlite3(mounted.store, "SELECT ZPROCNAME FROM ZPROCESS WHERE Z_PK = 500") == ["storefs"])
        #expect(try Self.sqlite3(mounted.store, "SELECT hex(Z_PLIST) FROM Z_METADATA") == before)

        try mounted.mount()
        let set = try run("setfattr", ["-n", "user.CheckedBy", "-v", "storefs", mounted.path])
        #expect(set.status == 0, "\(set.error)")
        try mounted.unmount()
        let after = try SQLiteStoreType().metadata(at: mounted.store)
        #expect(after["CheckedBy"] == .string("storefs"))
        for (key, value) in original.values {
            #expect(after[key] == value, "\(key)")
        }
        #expect(Set(after.values.keys) == Set(original.values.keys).union(["CheckedBy"]))
        // The model storefs read the store with disagrees on every entity: the hashes kept are not its.
        let engine = try mounted.engine()
        defer { engine.close() }
        let comparison = try #require(VersionHashComparison(model: engine.model, metadata: after))
        #expect(comparison.differing.count == 9)
    }

    /// `storefs model --hashes`: both hashes of every entity, and which differ.
    @Test func modelHashesShowsComputedAndRecorded() throws {
        let store = try Self.copy(Self.dataUsage)
        let result = try run(try storefsBinary(), ["model", "--hashes", store.path])
        #expect(result.status == 0, "\(result.error)")
        let lines = result.lines
        let recorded = try Self.recorded(store)
        #expect(lines.first?.hasPrefix("entity") == true)
        for (entity, hash) in recorded {
            let hex = hash.map { String(format: "%02x", $0) }.joined()
            let line = try #require(lines.first { $0.hasPrefix(entity + " ") }, "\(entity)")
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            #expect(fields.count == 4, "\(line)")
            #expect(
                fields.count == 4 && fields[2] == hex[...] && fields[1] != hex[...] && fields[3] == "differs", "\(line)"
            )
        }
        #expect(
            lines.last?.hasPrefix(
                "9 of 9 entities differ from the store's recorded hashes: CheckUpEvent, DemoLiveUsage, Event, EventScene, "
                    + "LiveUsage, Peer, Process, TshootingData, WiFiData") == true, "\(lines.last ?? "")")

        let exact = try Self.copy("alemar11_CoreDataPlus_SampleModel2_V1.sqlite")
        let same = try run(try storefsBinary(), ["model", "--hashes", exact.path]).lines
        #expect(same.dropFirst().dropLast().allSatisfy { $0.hasSuffix(" same") }, "\(same)")
        #expect(same.last == "all 6 entities have the store's recorded hash")

        let momd = Corpus.url("momd/Karim-ezzedine_CartKit_CartStorage.momd")
        let compiled = try run(try storefsBinary(), ["model", "--hashes", momd.path]).lines
        #expect(compiled.first?.hasSuffix("recorded (VersionInfo.plist's)") == true, "\(compiled)")
        #expect(compiled.last == "all 3 entities have VersionInfo.plist's recorded hash")
    }

    /// `storefs info` warns when the recorded hashes and the model cache disagree (Core Data would
    /// migrate the store on open), naming the entities; and when the cache does not decode.
    @Test func infoWarnsWhenRecordedHashesAndTheCacheDisagree() throws {
        let store = try Self.copy("alemar11_CoreDataPlus_SampleModel_V1.sqlite")
        let clean = try run(try storefsBinary(), ["info", store.path])
        #expect(clean.status == 0, "\(clean.error)")
        #expect(clean.lines.contains("hashes:   all 4 entities match the recorded version hashes"), "\(clean.output)")
        #expect(!clean.error.contains("warning"), "\(clean.error)")

        // Another tool rewrote one entity's recorded hash.
        var metadata = try SQLiteStoreType().metadata(at: store)
        var hashes = try Self.recorded(store)
        let entity = try #require(hashes.keys.sorted().first)
        hashes[entity] = Data(repeating: 7, count: 32)
        metadata["NSStoreModelVersionHashes"] = .dictionary(hashes.mapValues(MetadataValue.data))
        metadata.storeUUID = nil
        let plist = try PropertyListSerialization.data(
            fromPropertyList: MetadataValue.dictionary(metadata.values).propertyList, format: .binary, options: 0)
        let hex = plist.map { String(format: "%02X", $0) }.joined()
        let update = try run("sqlite3", ["-batch", "-bail", store.path, "UPDATE Z_METADATA SET Z_PLIST = X'\(hex)'"])
        #expect(update.status == 0, "\(update.error)")

        let warned = try run(try storefsBinary(), ["info", store.path])
        #expect(warned.status == 0, "\(warned.error)")
        #expect(
            warned.lines.contains("hashes:   1 of 4 entities differ from the recorded version hashes (\(entity))"),
            "\(warned.output)")
        #expect(
            warned.error.contains(
                "the recorded version hashes and the model cache (Z_MODELCACHE) disagree on \(entity): Core Data opening the "
                    + "store with the cached model would migrate it"), "\(warned.error)")
        let json = try run(try storefsBinary(), ["info", "--json", store.path])
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        let check = try #require(object?["versionHashes"] as? [String: Any])
        #expect(check["cache"] as? String == "differs")
        #expect(check["cacheDiffering"] as? [String] == [entity])

        let damaged = try run(try storefsBinary(), ["info", try Self.copy(Self.dataUsage).path])
        #expect(damaged.status == 0, "\(damaged.error)")
        #expect(
            damaged.error.contains("the model cache (Z_MODELCACHE) does not decode")
                && damaged.error.contains("only the first 3102 of its 7194 bytes hold data"), "\(damaged.error)")
    }
}
