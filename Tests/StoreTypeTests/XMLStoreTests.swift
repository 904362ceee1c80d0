import Foundation
import ObjectGraph
import Testing
@testable import XMLStore

#if canImport(FoundationXML)
    import FoundationXML
#endif

@Suite struct XMLStoreTests {
    let type = XMLStoreType()

    @Test func sampleGraphRoundTripsWithAndWithoutModel() throws {
        try AtomicStoreScenarios.sampleRoundTrip(type)
    }

    @Test func awkwardValuesRoundTripBitForBit() throws {
        try AtomicStoreScenarios.awkwardValues(type)
    }

    @Test func fullDiskLeavesOldFileAndNoTempFile() throws {
        try AtomicStoreScenarios.fullDisk(type)
    }

    @Test func readOnlyRefusesAndStaleVersionConflicts() throws {
        try AtomicStoreScenarios.readOnlyAndConflict(type)
    }

    /// A save writes the file as it encodes it, a piece of about `chunkSize` bytes at a time
    /// (never the whole text in memory): a store of several pieces reads back as it was saved,
    /// and the pieces are the file, in order.
    @Test func aStoreOfSeveralChunksIsWrittenInPiecesAndReadsBack() throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("big.xml")
        let store = try AtomicStoreScenarios.create(type, at: url)
        try StoreFixtures.copyGraph(from: try StoreFixtures.sampleStore(objects: 8_000), to: store)
        let file = try Data(contentsOf: url)
        #expect(file.count > 2 * XMLStoreWriter.chunkSize, "the store is \(file.count) bytes")
        let reopened = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        try StoreFixtures.expectSameGraph(store, reopened)

        let (model, graph) = try XMLStoreFormat().decode(file, of: url, model: nil, progress: nil)
        var pieces: [Int] = []
        var joined = Data()
        try XMLStoreWriter.write(graph, model: model) { (piece) throws(ObjectGraphError) in
            pieces.append(piece.count)
            joined.append(contentsOf: piece)
        }
        #expect(pieces.count >= 3)
        #expect(pieces.dropLast().allSatisfy { $0 >= XMLStoreWriter.chunkSize && $0 < 2 * XMLStoreWriter.chunkSize })
        #expect(joined == file)
    }

    @Test func fileLooksLikeCoreDataXML() throws {
        let text = String(decoding: try AtomicStoreScenarios.smallStoreBytes(type), as: UTF8.self)
        #expect(
            text.hasPrefix(
                "<?xml version=\"1.0\" standalone=\"yes\"?>\n<!DOCTYPE database SYSTEM \"file:///System/Library/DTDs/CoreData.dtd\">\n\n<database>"
            ))
        #expect(text.contains("<version>134481920</version>"))
        #expect(text.contains("<object type=\"EMPLOYEE\" id=\"z"))
        #expect(text.contains("<attribute name=\"firstname\" type=\"string\">"))
        #expect(text.contains("<relationship name=\"department\" type=\"0/1\" destination=\"DEPARTMENT\" idrefs=\"z"))
        #expect(text.contains("<relationship name=\"headof\" type=\"0/1\" destination=\"DEPARTMENT\"></relationship>"))
        #expect(text.contains("<key>StoreFSKeys</key>"))
        #expect(XMLParser(data: Data(text.utf8)).parse())
    }

    /// The metadata is read from the start of the file, in prefixes that grow until they hold the
    /// whole header: a header of several MiB reads whole, a file cut inside it is a corrupt store.
    @Test func metadataLargerThanTheFirstPrefixReadsWhole() throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("big-header.xml")
        let big = String(repeating: "metadata ", count: 400_000)  // 3.6 MB, past the first 1 MiB
        let store = try type.open(
            at: url, model: SampleModel.make(), options: StoreOptions(createIfMissing: true),
            initialMetadata: StoreMetadata(["Big": .string(big)]))
        try StoreFixtures.copyGraph(from: try StoreFixtures.sampleStore(objects: 200), to: store)
        let read = try type.metadata(at: url)
        #expect(read["Big"] == .string(big))
        #expect(read == (try store.metadata()))

        let bytes = try Data(contentsOf: url)
        try bytes.prefix(2_000_000).write(to: url)
        #expect(throws: ObjectGraphError.self) { try type.metadata(at: url) }
        do {
            _ = try type.metadata(at: url)
        } catch {
            #expect(error.code == .corruptStore, "\(error)")
        }
    }

    @Test func escapesReadBackAndMatchCoreData2009() throws {
        #expect(XMLValueFormat.escape("<a & b>") == "\\u3c00a \\u2600 b\\u3e00")
        #expect(XMLValueFormat.unescape("\\u3c00note\\u3e00") == "<note>")
        #expect(XMLValueFormat.escape("\u{1}\r\\") == "\\u0100\\u0d00\\u5c00")
        #expect(XMLValueFormat.unescape("C:\\path") == "C:\\path")
        #expect(XMLValueFormat.date(259_257_125.711286) == "259257125.71128600835800170898")
        #expect(XMLValueFormat.number(Float(5)) == "5")
    }

    @Test func uuidsAndBase64ReadAsFoundationReadsThem() {
        var random = SplitMix64(seed: 4)
        for _ in 0..<2_000 {
            let uuid = UUID(
                uuid: (
                    UInt8.random(in: 0...255, using: &random), UInt8.random(in: 0...255, using: &random),
                    UInt8.random(in: 0...255, using: &random), UInt8.random(in: 0...255, using: &random),
                    UInt8.random(in: 0...255, using: &random), UInt8.random(in: 0...255, using: &random),
                    UInt8.random(in: 0...255, using: &random), UInt8.random(in: 0...255, using: &random),
                    UInt8.random(in: 0...255, using: &random), UInt8.random(in: 0...255, using: &random),
                    UInt8.random(in: 0...255, using: &random), UInt8.random(in: 0...255, using: &random),
                    UInt8.random(in: 0...255, using: &random), UInt8.random(in: 0...255, using: &random),
                    UInt8.random(in: 0...255, using: &random), UInt8.random(in: 0...255, using: &random)
                ))
            #expect(XMLValueFormat.canonicalUUID(uuid.uuidString) == uuid)
            #expect(XMLValueFormat.canonicalUUID(uuid.uuidString.lowercased()) == uuid)
        }
        for text in [
            "", "E621E1F8-C36C-495A-93FC-0C247A3E6E5", "E621E1F8-C36C-495A-93FC-0C247A3E6E5FF",
            "E621E1F8C36C-495A-93FC-0C247A3E6E5F0",
            "G621E1F8-C36C-495A-93FC-0C247A3E6E5F", "E621E1F8-C36C-495A-93FC+0C247A3E6E5F",
            "é621E1F8-C36C-495A-93FC-0C247A3E6E5"
        ] {
            #expect(XMLValueFormat.canonicalUUID(text) == nil, "\(text)")
        }
        #expect(
            XMLValueFormat.value(" e621e1f8-c36c-495a-93fc-0c247a3e6e5f\n", as: .uuid)
                == .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!))

        let bytes = Data((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) })
        let lines = XMLValueFormat.base64Lines(bytes)
        #expect(XMLValueFormat.value(lines, as: .binaryData) == .data(bytes))
        #expect(
            XMLValueFormat.value(
                "\t" + lines.replacingOccurrences(of: "\n", with: "\r\n\u{0B}\u{0C} "), as: .binaryData) == .data(bytes)
        )
        #expect(
            XMLValueFormat.value(lines.replacingOccurrences(of: "\n", with: "\u{A0}\u{2028}"), as: .binaryData)
                == .data(bytes))
        #expect(XMLValueFormat.value("AAE=é", as: .binaryData) == nil)
    }

    @Test(arguments: [
        "haraldmartin_things-rb_Database.xml",
        "wibosco_CoreDataMigration-Example_Migration1to2.xcmappingmodel_xcmapping.xml",
        "wibosco_CoreDataMigration-Example_Migration2to3.xcmappingmodel_xcmapping.xml"
    ])
    func corpusFileLoadsWithoutModelAndRoundTrips(name: String) throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let original = StoreFixtures.corpus.appendingPathComponent("xml/\(name)")
        let url = dir.appendingPathComponent("store.xml")
        try FileManager.default.copyItem(at: original, to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: url.path)
        let text = try String(contentsOf: original, encoding: .utf8)
        var expected: [String: Int] = [:]
        let regex = try NSRegularExpression(pattern: "<object type=\"([A-Za-z0-9_]+)\"")
        for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            expected[String(text[Range(match.range(at: 1), in: text)!]), default: 0] += 1
        }
        #expect(!expected.isEmpty)

        let store = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        for (typeName, count) in expected {
            let entity = try #require(store.model.entityID(named: typeName))
            #expect(try store.count(of: entity) == count, "\(typeName)")
        }
        let uuid = try #require(text.range(of: "<UUID>").map { text[$0.upperBound...].prefix(36) })
        #expect(try store.metadata().storeUUID == String(uuid))
        #expect(try store.metadata()["NSStoreModelVersionHashes"] != nil)
        #expect(try type.metadata(at: url) == store.metadata())

        let recorded = try #require(VersionHashComparison.recordedHashes(in: try store.metadata()))
        try store.save(SaveRequest())  // rewrites the whole file
        // Core Data recorded hashes of a model storefs only infers (its own differ): the rewrite
        // keeps them.
        #expect(VersionHashComparison(model: store.model, metadata: try store.metadata())?.isMatch == false)
        #expect(VersionHashComparison.recordedHashes(in: try type.metadata(at: url)) == recorded)
        let reopened = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        try StoreFixtures.expectSameGraph(store, reopened)
        // Keys are the file's z-numbers, kept on write-back.
        let written = try String(contentsOf: url, encoding: .utf8)
        for id in text.matches(of: /id="(z\d+)"/).map(\.output.1).prefix(20) {
            #expect(written.contains("id=\"\(id)\""))
        }
    }

    @Test func thingsFileKeepsEscapedStringsDatesAndInferredInheritance() throws {
        let url = StoreFixtures.corpus.appendingPathComponent("xml/haraldmartin_things-rb_Database.xml")
        let store = try type.open(
            at: url, model: nil, options: StoreOptions(readOnly: true), initialMetadata: StoreMetadata())
        let todo = try #require(store.model.entity(named: "TODO"))
        #expect(
            store.model.entity(named: "THING").map {
                todo.rootID == $0.id || store.model.entity(todo.id, isKindOf: $0.id)
            } == true)
        let snapshots = try store.snapshots(for: store.objectIDs(of: todo.id))
        let contents = snapshots.compactMap { if case .string(let s)? = $0.attributes["content"] { s } else { nil } }
        #expect(contents.contains("<note xml:space=\"preserve\">I'm hungry</note>"))
        let mapping = try #require(store.model.entity(named: "TAG"))
        #expect(mapping.name == "TAG")
        let dates = snapshots.compactMap { if case .date(let d)? = $0.attributes["datecreated"] { d } else { nil } }
        #expect(!dates.isEmpty)
        #expect(dates.allSatisfy { XMLValueFormat.date($0.timeIntervalSinceReferenceDate).count > 20 })
    }

    @Test func mappingFileInfersInverses() throws {
        let url = StoreFixtures.corpus.appendingPathComponent(
            "xml/wibosco_CoreDataMigration-Example_Migration2to3.xcmappingmodel_xcmapping.xml")
        let store = try type.open(
            at: url, model: nil, options: StoreOptions(readOnly: true), initialMetadata: StoreMetadata())
        let entityMapping = try #require(store.model.entity(named: "XDDEVENTITYMAPPING"))
        #expect(entityMapping.relationship(named: "mappingmodel")?.inverseName == "entitymappings")
        #expect(entityMapping.relationship(named: "attributemappings")?.isToMany == true)
    }

    @Test func damagedFilesAreCorruptStores() throws {
        let good = try AtomicStoreScenarios.smallStoreBytes(type)
        let text = String(decoding: good, as: UTF8.self)
        for cut in [10, 200, good.count / 2, good.count - 12] {
            try AtomicStoreScenarios.expectCorrupt(type, good.prefix(cut))
        }
        try AtomicStoreScenarios.expectCorrupt(
            type, Data("garbage \u{0} not xml".utf8), mentioning: "not a Core Data XML store")
        try AtomicStoreScenarios.expectCorrupt(
            type,
            Data(text.replacingOccurrences(of: "<version>134481920</version>", with: "<version>99</version>").utf8),
            mentioning: "version 99")
        let firstRef = try #require(text.firstMatch(of: /idrefs="(z\d+)/)).output.1
        try AtomicStoreScenarios.expectCorrupt(
            type, Data(text.replacingOccurrences(of: "idrefs=\"\(firstRef)", with: "idrefs=\"z987654").utf8),
            mentioning: "z987654")
        try AtomicStoreScenarios.expectCorrupt(
            type, Data(text.replacingOccurrences(of: "type=\"DEPARTMENT\"", with: "type=\"NOSUCHENTITY\"").utf8),
            mentioning: "NOSUCHENTITY")
        let badInt = text.replacing(/type="int32">-?\d+</, maxReplacements: 1) { _ in "type=\"int32\">12abc<" }
        try AtomicStoreScenarios.expectCorrupt(type, Data(badInt.utf8), mentioning: "12abc")
        let objectMatch = text.firstMatch(of: try Regex(#"    <object type="DEPARTMENT"[\s\S]*?</object>\n"#))
        let object = String(text[try #require(objectMatch).range])
        let duplicated = text.replacingOccurrences(of: "</database>", with: object + "</database>")
        try AtomicStoreScenarios.expectCorrupt(type, Data(duplicated.utf8), mentioning: "used twice")
    }
}
