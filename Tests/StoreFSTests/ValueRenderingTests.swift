import Decoding
import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

@testable import StoreFS

/// The registry of value renderings the mount's rendering node goes through, on real values:
/// every note Notes wrote in the corpus reads, through `.pb.txt`, as text holding its title.
@Suite struct ValueRenderingTests {
    static let notesStores = [
        "RhetTbull_apple-notes-parser_NoteStore-macOS-13-Ventura.sqlite",
        "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"
    ]

    /// A read-only engine on a copy of corpus store `name`.
    static func open(_ name: String) throws -> PersistentStoreCoordinator {
        let folder = try ScratchSpace.folder("renderings")
        let url = folder.appendingPathComponent(name)
        for suffix in ["", "-wal"]
        where FileManager.default.fileExists(atPath: Corpus.url("sqlite/\(name)").path + suffix) {
            try FileManager.default.copyItem(
                atPath: Corpus.url("sqlite/\(name)").path + suffix, toPath: url.path + suffix)
        }
        return try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
    }

    /// `s` as ProtobufText writes a string's content.
    static func escaped(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// The acceptance: the body of every note (`ICNoteData.data`, gzipped protobuf) read
    /// through the engine renders as text containing the note's title (`ICNote.title`), the
    /// field Notes keeps the note's text in (Document 2 › Note 3 › text 2) on one line. A note
    /// without a title has an empty text. Password-protected notes are encrypted with the user's
    /// password: no rendering shows their title (checked, so that the count of exceptions is known).
    @Test(arguments: notesStores)
    func everyNoteOfTheCorpusReadsAsTextWithItsTitle(store: String) throws {
        let coordinator = try Self.open(store)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let noteData = try #require(coordinator.model.entityID(named: "ICNoteData"))
        var (readable, titled, encrypted) = (0, 0, 0)
        for id in try context.objectIDs(of: noteData) {
            guard case .data(let bytes)? = try context.value(of: "data", for: id) else { continue }
            let note = try #require(try context.destination(of: "note", for: id), "\(store) \(id.key): its note")
            let title: String? = if case .string(let t)? = try context.value(of: "title", for: note) { t } else { nil }
            let text = ValueRendering.protobufText.render(bytes).map { String(decoding: $0, as: UTF8.self) }
            if try context.value(of: "isPasswordProtected", for: note) == .boolean(true) {
                encrypted += 1
                for rendering in ValueRendering.all {
                    let rendered = rendering.render(bytes).map { String(decoding: $0, as: UTF8.self) } ?? ""
                    #expect(
                        !rendered.contains(title ?? "\u{0}"),
                        "\(store) \(note.key): encrypted, yet \(rendering.suffix) shows its title")
                }
                continue
            }
            let rendered = try #require(text, "\(store) note \(note.key): its data renders as protobuf text")
            readable += 1
            #expect(rendered.hasPrefix("1: 0\n2 {\n"), "\(store) note \(note.key): \(rendered.prefix(80))")
            if let title {
                titled += 1
                // The note's text, on one line: its title first (after a blank line in one note).
                let textLine = rendered.split(separator: "\n").first { $0.hasPrefix("    2: \"") }
                #expect(
                    textLine?.contains(Self.escaped(title)) == true,
                    "\(store) note \(note.key) \(title): \(rendered.prefix(300))")
            } else {
                #expect(rendered.contains("\n    2: \"\"\n"), "\(store) note \(note.key) has neither title nor text")
            }
            #expect(
                ValueRendering.inflated.render(bytes).map(ProtobufText.render)
                    == .some(ValueRendering.protobufText.render(bytes)))
        }
        #expect(
            readable == 7 && titled == 6 && encrypted == 1,
            "\(store): \(readable) read, \(titled) with a title, \(encrypted) encrypted")
    }

    /// Core Data's own values: a keyed archive (Photos' location names) has `.json` and `.plist`;
    /// Notes' gzipped protobuf has `.inflated` and `.pb.txt`.
    @Test func eachValueNamesTheRenderingsItHas() throws {
        let photos = try ArchivedValueRenderingTests.corpusValue(
            "RhetTbull_merge_photos_libraries_Photos.sqlite", "Moment", "localizedLocationNames")
        #expect(ValueRendering.names(for: photos) == ["json", "plist"])
        let plist = try #require(ValueRendering.propertyList.render(photos).map { String(decoding: $0, as: UTF8.self) })
        #expect(
            plist.contains("\t\t<string>Washington</string>\n") && plist.contains("<key>$archiver</key>"), "\(plist)")
        let note = try ArchivedValueRenderingTests.corpusValue(Self.notesStores[1], "ICNoteData", "data")
        #expect(ValueRendering.names(for: note) == ["inflated", "pb.txt"])
        #expect(ValueRendering.names(for: Data("plain text\n".utf8)) == [])
    }

    @Test func namesSplitAtTheirFirstDot() {
        #expect(ValueRendering.split("data.pb.txt").map { "\($0.attribute) \($0.rendering.suffix)" } == "data .pb.txt")
        #expect(ValueRendering.split("cover.json").map { "\($0.attribute) \($0.rendering.suffix)" } == "cover .json")
        #expect(ValueRendering.split("blob.inflated")?.attribute == "blob")
        #expect(ValueRendering.split("blob.plist")?.rendering.suffix == ".plist")
        for name in ["data", "data.txt", ".inflated", "a.b.inflated", "data.pb", "data.json.json", "data."] {
            #expect(ValueRendering.split(name) == nil, "\(name)")
        }
        #expect(Set(ValueRendering.all.map(\.suffix)).count == ValueRendering.all.count, "suffixes are unique")
    }
}
