import Foundation
import GRDB
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Core Data's external binary data: values of an attribute that allows external storage are
/// read from the row (marker 0x01) or from `.<store>_SUPPORT/_EXTERNAL_DATA/<UUID>` (marker 0x02),
/// and written the same way, the files atomically with the commit.
///
/// Fixtures: `Tests/Fixtures/external-data` (a store built by its `make-fixture.py` from its
/// model, in the format public readers of real app stores describe), and a Photos library copy
/// given externally stored values of its `ProjectAlbum.projectData`, whose model (Apple's own,
/// from Z_MODELCACHE) allows external storage.
@Suite struct ExternalDataTests {
    static let fixture = Fixtures.repoRoot.appendingPathComponent("Tests/Fixtures/external-data")
    static let uuid3 = "0E0C1A7B-7D4B-4C1E-8F53-2B8A3C9D0E11"
    static let uuid4 = "9F4E2D1C-0B3A-4E5F-8A7B-6C5D4E3F2A10"

    /// The fixture's bytes for `size` and `seed`, as make-fixture.py makes them.
    static func pattern(_ size: Int, _ seed: Int) -> Data {
        Data((0..<size).map { i in UInt8((seed + i * 31 + (i >> 8) * 7) % 251 + 3) })
    }

    /// A copy of the fixture (store and support folder) opened with its model.
    static func open() throws -> (CorpusStore, URL) {
        let folder = try Fixtures.temporaryDirectory()
        for name in ["Attachments.sqlite", ".Attachments_SUPPORT"] {
            try FileManager.default.copyItem(
                at: fixture.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        let model = try XcodeModelLoader.load(from: fixture.appendingPathComponent("Attachments.xcdatamodel"))
        let store = try CorpusStore(existing: folder.appendingPathComponent("Attachments.sqlite"), model: model)
        return (store, folder.appendingPathComponent(".Attachments_SUPPORT/_EXTERNAL_DATA"))
    }

    static func files(_ folder: URL) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
    }

    @Test func valuesAreReadFromTheRowOrTheirFile() throws {
        let (s, _) = try Self.open()
        func data(_ key: Int64, _ name: String = "data") throws -> AttributeValue? {
            try s.context.value(of: name, for: try s.id("Attachment", key))
        }
        #expect(try data(1) == .data(Data("tiny value".utf8)))
        #expect(try data(2) == .data(Self.pattern(127 * 1024, 2)))
        #expect(try data(3) == .data(Self.pattern(129 * 1024, 3)))
        #expect(try data(4) == .data(Self.pattern(300 * 1024, 4)))
        #expect(try data(5) == nil, "a reference whose file is missing reads as absent; the object stays readable")
        #expect(try s.context.value(of: "name", for: try s.id("Attachment", 5)) == .string("dangling"))
        #expect(
            try data(6) == .data(Data([7]) + Data("written without a marker".utf8)),
            "a value without a marker shows as stored")
        #expect(
            try data(7, "thumbnail") == .data(Data([2]) + Data(Self.uuid3.utf8)),
            "only attributes that allow external storage")
        #expect(try data(8) == nil)
    }

    @Test func valuesAreWrittenAsCoreDataWouldAndOldFilesGoAfterTheCommit() throws {
        let (s, folder) = try Self.open()
        let start = Self.files(folder)
        #expect(start == [Self.uuid3, Self.uuid4])

        // A small value stays in the row, with its marker.
        let small = try s.id("Attachment", 8)
        try s.context.setValue(.data(Data("ten bytes!".utf8)), of: "data", for: small)
        s.save()
        #expect(
            try s.value("SELECT hex(ZDATA) FROM ZATTACHMENT WHERE Z_PK = 8") == "01"
                + Data("ten bytes!".utf8).map { String(format: "%02X", $0) }.joined())
        #expect(Self.files(folder) == start)

        // A large one goes to one new file, named by the reference in the row.
        let large = Self.pattern(200 * 1024, 9)
        try s.context.setValue(.data(large), of: "data", for: small)
        s.save()
        let added = Self.files(folder).subtracting(start)
        #expect(added.count == 1)
        let name = try #require(added.first)
        #expect(UUID(uuidString: name)?.uuidString == name, "an upper-case UUID")
        #expect(
            try s.value("SELECT hex(ZDATA) FROM ZATTACHMENT WHERE Z_PK = 8") == "02"
                + Data(name.utf8).map { String(format: "%02X", $0) }.joined())
        #expect(try Data(contentsOf: folder.appendingPathComponent(name)) == large)

        // Replacing a value removes its old file after the commit; nil removes it too.
        let external3 = try s.id("Attachment", 3)
        try s.context.setValue(.data(Data("now small".utf8)), of: "data", for: external3)
        s.save()
        #expect(!Self.files(folder).contains(Self.uuid3))
        try s.context.setValue(nil, of: "data", for: small)
        s.save()
        #expect(!Self.files(folder).contains(name))
        #expect(try s.value("SELECT quote(ZDATA) FROM ZATTACHMENT WHERE Z_PK = 8") == "NULL")

        // Deleting the object removes its file.
        try s.context.delete(try s.id("Attachment", 4))
        s.save()
        #expect(Self.files(folder).isEmpty)

        // Reopened, everything reads back.
        s.close()
        let model = try XcodeModelLoader.load(from: Self.fixture.appendingPathComponent("Attachments.xcdatamodel"))
        let reopened = try CorpusStore(existing: s.url, model: model)
        #expect(try reopened.context.value(of: "data", for: external3) == .data(Data("now small".utf8)))
        #expect(
            try reopened.context.value(of: "data", for: try reopened.id("Attachment", 1))
                == .data(Data("tiny value".utf8)))
    }

    /// A save that does not commit (a conflict with another process) leaves no new file, and the
    /// old value and its file as they were.
    @Test func aSaveThatFailsLeavesTheOldFileAndNoNewOne() throws {
        let (s, folder) = try Self.open()
        let object = try s.id("Attachment", 4)
        let old = try s.context.value(of: "data", for: object)
        let other = try s.id("Attachment", 1)
        try s.context.setValue(.data(Self.pattern(250 * 1024, 5)), of: "data", for: object)
        try s.context.setValue(.string("renamed"), of: "name", for: object)
        // Another process changes the name meanwhile: this save of the object conflicts.
        _ = try Fixtures.sqlite3Writing(
            s.url, "UPDATE ZATTACHMENT SET ZNAME = 'theirs', Z_OPT = Z_OPT + 1 WHERE Z_PK = 4")
        try s.context.setValue(.string("unrelated"), of: "name", for: other)
        let outcome = s.context.save(holding: [])
        #expect(outcome.conflicts.map(\.objectID) == [object])
        #expect(Self.files(folder) == [Self.uuid3, Self.uuid4], "the staged file went with the rolled-back transaction")
        #expect(try s.context.value(of: "data", for: object) == old)
        #expect(try s.value("SELECT ZNAME FROM ZATTACHMENT WHERE Z_PK = 1") == "unrelated")
    }

    /// Apple's own model: Photos' ProjectAlbum.projectData allows external storage. A copy of
    /// the library given one inline and one external value reads both; other binary attributes
    /// whose bytes start with a marker (AdditionalAssetAttributes.originalHash) are shown as they are.
    @Test func aPhotosLibrarysProjectDataIsReadAndWritten() throws {
        let uuid = "3C2B1A09-8F7E-4D6C-9B5A-1234567890AB"
        let payload = Self.pattern(150 * 1024, 7)
        let s = try CorpusStore("RhetTbull_merge_photos_libraries_Photos.sqlite") { url in
            let support = url.deletingLastPathComponent()
                .appendingPathComponent(".RhetTbull_merge_photos_libraries_Photos_SUPPORT/_EXTERNAL_DATA")
            try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
            try payload.write(to: support.appendingPathComponent(uuid))
            let uuidHex = Data(uuid.utf8).map { String(format: "%02X", $0) }.joined()
            try Fixtures.sqlite3Write(
                url,
                """
                INSERT INTO ZGENERICALBUM (Z_PK, Z_ENT, Z_OPT, ZKIND, ZPROJECTDATA) SELECT Z_MAX + 1, 30, 1, 1505, x'0168656C6C6F' FROM Z_PRIMARYKEY WHERE Z_ENT = 25;
                INSERT INTO ZGENERICALBUM (Z_PK, Z_ENT, Z_OPT, ZKIND, ZPROJECTDATA) SELECT Z_MAX + 2, 30, 1, 1505, x'02\(uuidHex)' FROM Z_PRIMARYKEY WHERE Z_ENT = 25;
                UPDATE Z_PRIMARYKEY SET Z_MAX = Z_MAX + 2 WHERE Z_ENT = 25;
                """)
        }
        let entity = try s.entity("ProjectAlbum")
        #expect(s.model[entity].attribute(named: "projectData")?.allowsExternalBinaryDataStorage == true)
        let albums = try s.context.objectIDs(of: entity)
        let values = try albums.compactMap { try s.context.value(of: "projectData", for: $0) }
        #expect(values.contains(.data(Data("hello".utf8))))
        #expect(values.contains(.data(payload)))
        let hashed = try #require(
            try s.context.objectIDs(of: try s.entity("AdditionalAssetAttributes")).first {
                if case .data(let d)? = try s.context.value(of: "originalHash", for: $0) { return d.first == 1 }
                return false
            })
        if case .data(let hash)? = try s.context.value(of: "originalHash", for: hashed) {
            #expect(hash.count == 21, "the marker-like first byte is part of the value")
        }
    }
}
