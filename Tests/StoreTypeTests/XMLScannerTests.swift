import Foundation
import Testing

@testable import XMLStore

/// The XML store's own scanner: what it hands on from well-formed documents, and which malformed
/// ones it refuses, at which line.
@Suite struct XMLScannerTests {
    /// Records what the scanner reports, as one line per event.
    struct Recorder: XMLScanHandler {
        var events: [String] = []
        mutating func startElement(_ name: String, attributes: [XMLScanner.Attribute], line: Int, offset: Int)
            throws(XMLScanFailure)
        {
            events.append("<\(name)\(attributes.map { " \($0.name)=[\($0.value)]" }.joined())> line \(line)")
        }
        mutating func characters(_ text: String) throws(XMLScanFailure) {
            // Runs of text may come in pieces: join them.
            if let last = events.last, last.hasPrefix("text ") {
                events[events.count - 1] = last + text
            } else {
                events.append("text " + text)
            }
        }
        mutating func endElement(_ name: String) throws(XMLScanFailure) { events.append("</\(name)>") }
    }

    func events(_ xml: String) throws -> [String] {
        var recorder = Recorder()
        try XMLScanner.scan(Data(xml.utf8), into: &recorder)
        return recorder.events
    }

    func refusal(_ xml: String) -> XMLScanError? {
        var recorder = Recorder()
        do {
            try XMLScanner.scan(Data(xml.utf8), into: &recorder)
            return nil
        } catch {
            return error
        }
    }

    @Test func aCoreDataStoreHeadIsSkippedAndItsElementsReported() throws {
        let xml = """
            \u{FEFF}<?xml version="1.0" standalone="yes"?>
            <!DOCTYPE database [
            <!ELEMENT database (databaseInfo, object*)>
            <!ATTLIST object type CDATA #REQUIRED>
            <!-- a comment with > and ] and ' in it -->
            <!ENTITY note "a > b [c]">
            <?pi with ' and > inside?>
            ]>
            <database>
                <object type="NOTE" id='z102'>
                    <attribute name="title" type="string">Hello</attribute>
                    <relationship name="folder" type="1/1" destination="FOLDER" idrefs="z1 z2"/>
                </object>
            </database>
            """
        let events = try events(xml)
        #expect(
            events.filter { !$0.hasPrefix("text ") } == [
                "<database> line 9", "<object type=[NOTE] id=[z102]> line 10",
                "<attribute name=[title] type=[string]> line 11",
                "</attribute>", "<relationship name=[folder] type=[1/1] destination=[FOLDER] idrefs=[z1 z2]> line 12",
                "</relationship>", "</object>", "</database>"
            ])
        #expect(events.contains("text Hello"))
    }

    @Test func referencesAreExpandedAndLineEndsAndAttributeWhiteSpaceNormalized() throws {
        let xml =
            "<a v=\"x&#10;y\tz\r\nw &lt;&amp;&gt;&quot;&apos;\">1 &lt; 2 &amp;&#x263A;&#233;\r\nnext\rlast<![CDATA[<raw> & \r\n]]></a>"
        #expect(
            try events(xml) == [
                "<a v=[x\ny z w <&>\"']> line 1", "text 1 < 2 &\u{263A}\u{E9}\nnext\nlast<raw> & \n", "</a>"
            ])
    }

    @Test func emptyElementsGiveAStartAndAnEnd() throws {
        #expect(
            try events("<a><b/><c x='1' /></a>") == [
                "<a> line 1", "<b> line 1", "</b>", "<c x=[1]> line 1", "</c>", "</a>"
            ])
    }

    @Test(arguments: [
        ("<a>", "<a> is not closed", 1),
        ("<a></b>", "</b> closes <a>", 1),
        ("<a>\n</a>\n</a>", "</a> without a start tag", 3),
        ("<a/><b/>", "a second root element", 1),
        ("x<a/>", "text before the root element", 1),
        ("<a/>\n\ny", "text after the root element", 3),
        ("", "no root element", 1),
        ("<a x='1' x='2'/>", "attribute x appears twice", 1),
        ("<a x=1/>", "not quoted", 1),
        ("<a x='1'y='2'/>", "not separated by white space", 1),
        ("<a x='<'/>", "'<' in an attribute value", 1),
        ("<a>\n\n&xxe;</a>", "reference to entity &xxe;", 3),
        ("<a>& b</a>", "'&' that starts no reference", 1),
        ("<a>&#0;</a>", "&#0; is not a character XML allows", 1),
        ("<a>&#xFFFE;</a>", "is not a character XML allows", 1),
        ("<a>&#999999999;</a>", "is not a character XML allows", 1),
        ("<a>\u{1}</a>", "control character U+0001", 1),
        ("<a>\u{FFFF}</a>", "U+FFFF", 1),
        ("<a><!-- never closed </a>", "comment is not closed", 1),
        ("<a><![CDATA[ never closed </a>", "CDATA section is not closed", 1),
        ("<!DOCTYPE a [ <!ENTITY x 'y'>", "document type declaration is not closed", 1),
        ("<a/><!DOCTYPE a>", "after the root element", 1),
        ("<1a/>", "a name starts with '1'", 1),
        ("<a><=/></a>", "where a name should be", 1),
        ("<a", "<a is not closed (truncated file?)", 1),
        ("<a x", "has no value", 1),
        ("<a x='1", "not closed", 1),
        ("<a></a", "not closed with '>'", 1),
        ("<a>\n<![CDATA[ok\n\u{2}]]></a>", "control character U+0002", 3),
        ("<a>&#+65;</a>", "&#+65; is not a character XML allows", 1),
        ("<a>&#x+41;</a>", "is not a character XML allows", 1),
        ("<a " + (0...256).map { "a\($0)='1'" }.joined(separator: " ") + "/>", "more than 256 attributes", 1)
    ])
    func malformedDocumentsAreRefusedAtTheirLine(xml: String, message: String, line: Int) {
        let error = refusal(xml)
        #expect(error?.message.contains(message) == true, "\(xml.debugDescription): \(String(describing: error))")
        #expect(error?.line == line, "\(xml.debugDescription): \(String(describing: error))")
    }

    @Test func aHandlersRefusalCarriesTheLineOfItsTag() {
        struct Refuser: XMLScanHandler {
            mutating func startElement(_ name: String, attributes: [XMLScanner.Attribute], line: Int, offset: Int)
                throws(XMLScanFailure)
            {
                if name == "bad" { throw XMLScanFailure("no <bad> here") }
            }
            mutating func characters(_ text: String) throws(XMLScanFailure) {}
            mutating func endElement(_ name: String) throws(XMLScanFailure) {}
        }
        var refuser = Refuser()
        do {
            try XMLScanner.scan(Data("<a>\n<ok/>\n\n<bad/></a>".utf8), into: &refuser)
            Issue.record("<bad> was accepted")
        } catch {
            #expect(error.line == 4 && error.message == "no <bad> here")
        }
    }
}
