import Decoding
import Foundation
import ObjectGraph
import TestSupport
import Testing

/// Binary and XML property lists render as the XML property list Apple's tools write, and
/// Python's plistlib (an independent reader) reads the rendering as the same list it reads from
/// the original.
@Suite struct PropertyListXMLTests {
    /// Asks plistlib whether `original` and `rendered` hold the same list (UIDs as `CF$UID`
    /// dictionaries and dates in whole seconds, as the rendering writes them); "same" or why not.
    static func pythonCompares(_ original: Data, _ rendered: Data) throws -> String {
        let script = """
            import base64, datetime, plistlib, sys
            def norm(v):
                if isinstance(v, plistlib.UID): return {"CF$UID": v.data}
                if isinstance(v, dict): return {k: norm(x) for k, x in v.items()}
                if isinstance(v, list): return [norm(x) for x in v]
                if isinstance(v, datetime.datetime): return v.replace(microsecond=0)
                return v
            a, b = (plistlib.loads(base64.b64decode(line)) for line in sys.stdin.read().split())
            print("same" if norm(a) == norm(b) else "different:\\n%r\\n%r" % (norm(a), norm(b)))
            """
        let input = Data((original.base64EncodedString() + "\n" + rendered.base64EncodedString() + "\n").utf8)
        let result = try runTool("timeout", ["60", "python3", "-c", script], input: input)
        try #require(result.status == 0, "python3: \(result.error)")
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Core Data's keyed archives: the compiled model cached in corpus stores (thousands of
    /// objects, UIDs, nested dictionaries, data, reals).
    @Test(arguments: [
        "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite", "alemar11_CoreDataPlus_SampleModel2_V1.sqlite",
        "sergd2005_ResourcesManager_default.store"
    ])
    func keyedArchivesOfTheCorpusRenderAsPlistlibReadsThem(store: String) throws {
        let hex = try runTool(
            "timeout",
            [
                "60", "sqlite3", "-readonly", "file:" + Corpus.url("sqlite/\(store)").path + "?immutable=1",
                "SELECT hex(Z_CONTENT) FROM Z_MODELCACHE"
            ])
        let blob = try #require(InflaterTests.data(hex: hex.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        let archive = try #require(Inflater.inflate(blob)?.bytes)
        let rendered = try #require(PropertyListXML.render(archive), "\(store)")
        #expect(
            String(decoding: rendered.prefix(200), as: UTF8.self).hasPrefix(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist"))
        #expect(try Self.pythonCompares(archive, rendered) == "same", "\(store)")
        #expect(PropertyListXML.render(rendered) == rendered, "the rendering of the rendering is itself")
    }

    /// An XML list Python wrote, with every type and what XML must escape, renders to the same list.
    @Test func xmlListsRenderToTheSameList() throws {
        let script = """
            import datetime, plistlib, sys
            value = {"text": "a < b & c > d \\u00e9\\u4e2d", "empty": "", "int": -9223372036854775808, "big": 9223372036854775807,
                     "real": 0.1, "whole": 3.0, "tiny": 1e-300, "yes": True, "no": False, "bytes": bytes(range(256)),
                     "when": datetime.datetime(1969, 7, 20, 20, 17, 40), "nested": [[], {}, [{"k": [1, 2.5, "x"]}]]}
            sys.stdout.buffer.write(plistlib.dumps(value, fmt=plistlib.FMT_XML))
            """
        let written = try runTool("timeout", ["60", "python3", "-c", script])
        try #require(written.status == 0, "python3: \(written.error)")
        let original = Data(written.output.utf8)
        let rendered = try #require(PropertyListXML.render(original))
        #expect(try Self.pythonCompares(original, rendered) == "same")
        let text = String(decoding: rendered, as: UTF8.self)
        #expect(text.contains("<string>a &lt; b &amp; c &gt; d é中</string>"), "\(text)")
        #expect(text.contains("<date>1969-07-20T20:17:40Z</date>"))
        #expect(text.contains("<array/>") && text.contains("<dict/>"))
    }

    @Test func aSmallListReadsAsApplesToolsWriteIt() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>$top</key><dict><key>root</key><dict><key>CF$UID</key><integer>1</integer></dict></dict>
            <key>r</key><real>+infinity</real><key>d</key><data>
              AAEC
            </data></dict></plist>
            """
        let rendered = try #require(PropertyListXML.render(Data(xml.utf8)))
        #expect(
            String(decoding: rendered, as: UTF8.self) == """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0">
                <dict>
                \t<key>$top</key>
                \t<dict>
                \t\t<key>root</key>
                \t\t<dict>
                \t\t\t<key>CF$UID</key>
                \t\t\t<integer>1</integer>
                \t\t</dict>
                \t</dict>
                \t<key>r</key>
                \t<real>+infinity</real>
                \t<key>d</key>
                \t<data>AAEC</data>
                </dict>
                </plist>

                """)
    }

    /// What XML cannot say (a null, keys that are not strings) and what is no property list.
    @Test func whatIsNoPropertyListHasNoRendering() {
        #expect(PropertyListXML.xml(of: .null) == nil)
        #expect(PropertyListXML.xml(of: .array([.string("a"), .null])) == nil)
        #expect(PropertyListXML.xml(of: .dictionary([(key: .integer(1), value: .string("x"))])) == nil)
        #expect(PropertyListXML.xml(of: .date(1e300)) == nil, "a date beyond year 9999")
        #expect(PropertyListXML.xml(of: .string("a\u{1}b")) == nil, "a control character XML 1.0 cannot carry")
        #expect(
            PropertyListXML.xml(of: .string("a\r\nb")).map { String(decoding: $0, as: UTF8.self) }?.contains(
                "a&#13;\nb") == true)
        // A binary list of one null: header, object 0x00, offset table, trailer.
        var null = Data("bplist00".utf8) + Data([0x00, 0x08]) + Data(count: 6) + Data([1, 1])
        null += Data([0, 0, 0, 0, 0, 0, 0, 1]) + Data(count: 8) + Data([0, 0, 0, 0, 0, 0, 0, 9])
        #expect(PropertyListXML.render(null) == nil)
        let deep =
            "<plist>" + String(repeating: "<array>", count: 200) + String(repeating: "</array>", count: 200)
            + "</plist>"
        let refused = [
            "", "hello", "<plist><dict><key>a</key></dict></plist>",
            "<plist><string>a</string><string>b</string></plist>",
            "<plist><dict><string>a</string><string>b</string></dict></plist>", "<plist><foo/></plist>",
            "<plist><array>text<string>a</string></array></plist>", "<plist><integer>12x</integer></plist>",
            "<plist><date>2001-02-30T00:00:00Z</date></plist>", "<plist><data>!!</data></plist>",
            "<plist><true>x</true></plist>",
            "<plist><string><string>a</string></string></plist>", "<plist><key>a</key></plist>",
            "<plist><array></plist>", deep
        ]
        for xml in refused { #expect(PropertyListXML.render(Data(xml.utf8)) == nil, "\(xml.prefix(80))") }
        #expect(
            PropertyListXML.render(Data("<plist><string>".utf8) + Data([0xFF]) + Data("</string></plist>".utf8)) == nil,
            "not UTF-8")
        #expect(PropertyListXML.render(Data("<plist><array><string>a</string></array></plist>".utf8)) != nil)
    }
}
