import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

@testable import StoreFS

/// Archived values of the corpus stores render as JSON a person reads; anything else, and
/// damaged or hostile archives, render as nothing (and never crash).
@Suite struct ArchivedValueRenderingTests {
    /// The value of `attribute` of the first object of `entity` that has one, in a copy of
    /// corpus store `name`.
    static func corpusValue(_ name: String, _ entity: String, _ attribute: String) throws -> Data {
        let folder = try ScratchSpace.folder("rendering")
        let url = folder.appendingPathComponent(name)
        for suffix in ["", "-wal"]
        where FileManager.default.fileExists(atPath: Corpus.url("sqlite/\(name)").path + suffix) {
            try FileManager.default.copyItem(
                atPath: Corpus.url("sqlite/\(name)").path + suffix, toPath: url.path + suffix)
        }
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let id = try #require(coordinator.model.entityID(named: entity))
        for object in try context.objectIDs(of: id) {
            if case .data(let bytes)? = try context.value(of: attribute, for: object) { return bytes }
        }
        throw ObjectGraphError(.notFound, "\(name): no \(entity).\(attribute)")
    }

    static func render(_ bytes: Data) -> String? {
        ArchivedValueRendering.json(of: bytes).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func corpusArchivesRenderAsJSON() throws {
        #expect(
            Self.render(try Self.corpusValue("alemar11_CoreDataPlus_SampleModel2_V1.sqlite", "Book", "cover"))
                == "{\n  \"$class\": \"CoreDataPlus_Tests.Cover\",\n  \"text\": \"default cover\"\n}\n")
        #expect(
            Self.render(
                try Self.corpusValue(
                    "RhetTbull_merge_photos_libraries_Photos.sqlite", "Moment", "localizedLocationNames"))
                == "[\n  \"Washington\"\n]\n")
        #expect(
            Self.render(
                try Self.corpusValue(
                    "RhetTbull_merge_photos_libraries_CLSContactCache.sqlite", "Info", "lastHistoryToken"))
                    == """
                    {
                      "_token": {
                        "$class": "_NSPersistentHistoryToken",
                        "NSPersistentHistoryTokenDictionary": {
                          "8081A08D-2BEC-4409-B52C-56841E423C4E": 4444,
                          "D262E3D5-B406-43FA-9824-E8DE6F5C7612": 5219,
                          "DAB264B8-6CD8-4FD3-A5E3-9F11AF724FD0": 44865
                        }
                      }
                    }

                    """)
        #expect(
            Self.render(
                try Self.corpusValue(
                    "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite", "ICAccount",
                    "replicaIDToBundleIdentifier"))
                    == """
                    {
                      "com.apple.Notes": {
                        "$uuid": "c9d36769-c59a-416e-bfa9-f64891b26700"
                      },
                      "com.apple.Notes.IntentsExtension": {
                        "$uuid": "2366b87a-8f09-4df0-a83c-35c4295bb8ee"
                      },
                      "com.apple.Notes.SharingExtension": {
                        "$uuid": "54e42d22-a866-475a-86e8-a8c525a39763"
                      }
                    }

                    """)
        let sceneprint = try #require(
            Self.render(try Self.corpusValue("RhetTbull_merge_photos_libraries_Photos.sqlite", "Sceneprint", "data")))
        #expect(
            sceneprint.contains("\"$class\": \"VNSceneprint\"") && sceneprint.contains("\"descriptorByteLength\": 1024")
        )
    }

    /// A plain binary property list renders too; bytes that are not one (a JPEG, gzip, a hash, an
    /// XML property list, which is text already) do not.
    @Test func onlyBinaryPropertyListsRender() throws {
        let plist = try PropertyListSerialization.data(
            fromPropertyList: ["name": "x", "count": 3, "ratio": 0.5, "flags": [true, false], "blob": Data([1, 2])]
                as [String: Any],
            format: .binary, options: 0)
        #expect(
            Self.render(plist)
                == "{\n  \"blob\": {\n    \"$data\": \"AQI=\"\n  },\n  \"count\": 3,\n  \"flags\": [\n    true,\n    false\n  ],\n  \"name\": \"x\",\n  \"ratio\": 0.5\n}\n"
        )
        let xml = try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .xml, options: 0)
        for bytes in [
            Data([0xFF, 0xD8, 0xFF, 0xE0]), Data([0x1F, 0x8B, 8, 0]), Data(repeating: 7, count: 20), xml, Data()
        ] {
            #expect(Self.render(bytes) == nil)
        }
        let notes = try Self.corpusValue(
            "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite", "ICAccountData", "mergeableData")
        #expect(Self.render(notes) == nil, "gzip")
    }

    /// Every truncation and thousands of random mutations of a real archive: a rendering or
    /// none, never a crash; an archive that refers to itself renders the cycle as a reference.
    @Test func damagedArchivesRenderAsNothingOrSafely() throws {
        let archive = try Self.corpusValue(
            "RhetTbull_merge_photos_libraries_CLSContactCache.sqlite", "Info", "lastHistoryToken")
        for length in 0..<archive.count { _ = ArchivedValueRendering.json(of: archive.prefix(length)) }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            var bytes = [UInt8](archive)
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                bytes[Int.random(in: 8..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            _ = ArchivedValueRendering.json(of: Data(bytes))
        }
        // An NSArray whose only element is itself.
        let cyclic: [String: Any] = [
            "$archiver": "NSKeyedArchiver", "$version": 100000,
            "$top": ["root": Self.uid(1)],
            "$objects": [
                "$null", ["NS.objects": [Self.uid(1)], "$class": Self.uid(2)],
                ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]]
            ]
        ]
        let text = try #require(Self.render(try Self.binaryPlist(cyclic)))
        #expect(text == "[\n  {\n    \"$ref\": 1\n  }\n]\n")
        // Nesting deeper than the bound gives no rendering.
        var deep: Any = "bottom"
        for _ in 0..<100 { deep = [deep] }
        #expect(Self.render(try Self.binaryPlist(["x": deep])) == nil)
    }

    // A UID is what Foundation on Linux cannot write: this builds the archive's bytes by hand.
    static func uid(_ n: Int) -> UIDMarker { UIDMarker(value: n) }
    struct UIDMarker { var value: Int }

    /// A binary property list of dictionaries, arrays, strings, integers and UIDs.
    static func binaryPlist(_ root: Any) throws -> Data {
        var objects: [[UInt8]] = []
        func add(_ value: Any) throws -> Int {
            let index = objects.count
            objects.append([])
            var bytes: [UInt8] = []
            func count(_ marker: UInt8, _ n: Int) {
                if n < 15 {
                    bytes.append(marker | UInt8(n))
                } else {
                    bytes.append(marker | 0x0F)
                    bytes += [0x11, UInt8(n >> 8), UInt8(n & 0xFF)]
                }
            }
            switch value {
            case let s as String:
                count(0x50, s.utf8.count)
                bytes += Array(s.utf8)
            case let i as Int:
                bytes += [0x13] + withUnsafeBytes(of: Int64(i).bigEndian, Array.init)
            case let u as UIDMarker:
                bytes += [0x81, UInt8(u.value >> 8), UInt8(u.value & 0xFF)]
            case let a as [Any]:
                let refs = try a.map(add)
                count(0xA0, refs.count)
                for r in refs { bytes += [UInt8(r >> 8), UInt8(r & 0xFF)] }
            case let d as [String: Any]:
                let keys = d.keys.sorted()
                let keyRefs = try keys.map { try add($0) }
                let valueRefs = try keys.map { try add(d[$0]!) }
                count(0xD0, keys.count)
                for r in keyRefs + valueRefs { bytes += [UInt8(r >> 8), UInt8(r & 0xFF)] }
            default:
                throw ObjectGraphError(.invalidModel, "cannot encode \(value)")
            }
            objects[index] = bytes
            return index
        }
        let top = try add(root)
        var data = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(data.count)
            data += object
        }
        let tableStart = data.count
        for offset in offsets {
            data += [
                UInt8(offset >> 24), UInt8((offset >> 16) & 0xFF), UInt8((offset >> 8) & 0xFF), UInt8(offset & 0xFF)
            ]
        }
        data += [0, 0, 0, 0, 0, 0, 4, 2]
        data += withUnsafeBytes(of: UInt64(objects.count).bigEndian, Array.init)
        data += withUnsafeBytes(of: UInt64(top).bigEndian, Array.init)
        data += withUnsafeBytes(of: UInt64(tableStart).bigEndian, Array.init)
        return Data(data)
    }
}
