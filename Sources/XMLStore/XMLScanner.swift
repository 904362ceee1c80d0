import Foundation

/// What a malformed document gives: the line and what is wrong there.
struct XMLScanError: Error {
    var line: Int
    var message: String
}

/// What a handler refuses; the scanner adds the line.
struct XMLScanFailure: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Receives a document's elements and text, in order, as ``XMLScanner`` finds them.
protocol XMLScanHandler {
    /// A start tag (an empty-element tag gives a start and an end). `attributes` are valid only
    /// during the call; `line` is the tag's, `offset` the byte it starts at.
    mutating func startElement(_ name: String, attributes: [XMLScanner.Attribute], line: Int, offset: Int)
        throws(XMLScanFailure)
    /// Text or CDATA content, references expanded and line ends made `\n`; never empty. One run of
    /// text may come in several calls.
    mutating func characters(_ text: String) throws(XMLScanFailure)
    mutating func endElement(_ name: String) throws(XMLScanFailure)
}

/// A streaming reader of XML 1.0 documents in UTF-8 held in memory: start and end tags with their
/// attributes, text and CDATA go to a handler as they are met; no tree is built. Made for Core
/// Data's XML stores (a 1 GB store was a minute in FoundationXML's parser, which builds a
/// dictionary and bridges strings per element); it checks what XML requires of such a document.
///
/// What it does with the rest of XML: comments, processing instructions and the XML declaration
/// are skipped; the document type declaration is skipped with its internal subset, and nothing
/// declared there is used: a reference to an entity other than the five predefined ones is an
/// error (Core Data writes none, and so no external file is read and no entity expands
/// exponentially). Character references and the predefined entities are expanded, attribute
/// values are normalized (tab, line feed and carriage return become spaces), line ends in text
/// become `\n`. Characters XML does not allow (controls other than tab, LF and CR; U+FFFE,
/// U+FFFF), unbalanced or mismatched tags, duplicate attributes, unquoted values, `<` in a value,
/// content outside the root element and a missing root element are errors.
///
/// The bytes must be valid UTF-8 already (``XMLInputCheck/requireUTF8(_:source:code:)``).
struct XMLScanner {
    struct Attribute {
        var name: String
        var value: String
    }

    /// Scans `data` into `handler`.
    static func scan<Handler: XMLScanHandler>(_ data: Data, into handler: inout Handler) throws(XMLScanError) {
        let result = data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> XMLScanError? in
            var scanner = XMLScanner(bytes: raw.bindMemory(to: UInt8.self))
            do throws(XMLScanError) {
                try scanner.document(&handler)
                return nil
            } catch {
                return error
            }
        }
        if let result { throw result }
    }

    /// Attributes one tag may have.
    static let attributeLimit = 256

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private var line = 1
    private var open: [String] = []
    private var attributes: [Attribute] = []
    private var scratch: [UInt8] = []

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    // MARK: - Document structure

    private mutating func document<Handler: XMLScanHandler>(_ handler: inout Handler) throws(XMLScanError) {
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { position = 3 }
        var sawRoot = false
        while position < bytes.count {
            if bytes[position] != ascii("<") {
                let start = line
                let text = try textRun()
                if open.isEmpty {
                    if let first = text.firstIndex(where: { $0 != " " && $0 != "\n" && $0 != "\t" }) {
                        let at = start + text[..<first].count { $0 == "\n" }
                        throw XMLScanError(
                            line: at, message: sawRoot ? "text after the root element" : "text before the root element")
                    }
                } else if !text.isEmpty {
                    try call(start) { () throws(XMLScanFailure) in try handler.characters(text) }
                }
                continue
            }
            if starts(with: "<?") {
                try skip(past: "?>", what: "processing instruction")
            } else if starts(with: "<!--") {
                try skip(past: "-->", what: "comment")
            } else if starts(with: "<![CDATA[") {
                guard !open.isEmpty else { throw error("CDATA outside the root element") }
                let start = line
                position += 9
                let from = position
                try skip(past: "]]>", what: "CDATA section")
                try requireCharacters(from, position - 3, line: start)
                let text = normalizedLineEnds(from, position - 3)
                if !text.isEmpty { try call(start) { () throws(XMLScanFailure) in try handler.characters(text) } }
            } else if starts(with: "<!DOCTYPE") {
                guard !sawRoot else { throw error("a document type declaration after the root element") }
                try skipDocumentType()
            } else if starts(with: "</") {
                try endTag(&handler)
            } else {
                if open.isEmpty && sawRoot { throw error("a second root element") }
                sawRoot = true
                try startTag(&handler)
            }
        }
        if let unclosed = open.last { throw error("<\(unclosed)> is not closed (truncated file?)") }
        guard sawRoot else { throw error("no root element") }
    }

    private mutating func startTag<Handler: XMLScanHandler>(_ handler: inout Handler) throws(XMLScanError) {
        let start = line, offset = position
        position += 1
        let name = try self.name()
        attributes.removeAll(keepingCapacity: true)
        while true {
            let spaced = skipWhitespace()
            guard position < bytes.count else { throw error("<\(name) is not closed (truncated file?)") }
            let byte = bytes[position]
            if byte == ascii(">") || byte == ascii("/") {
                let empty = byte == ascii("/")
                if empty {
                    guard position + 1 < bytes.count, bytes[position + 1] == ascii(">") else {
                        throw error("'/' not followed by '>' in <\(name)>")
                    }
                    position += 2
                } else {
                    position += 1
                }
                try call(start) { () throws(XMLScanFailure) in
                    try handler.startElement(name, attributes: attributes, line: start, offset: offset)
                }
                if empty {
                    try call(start) { () throws(XMLScanFailure) in try handler.endElement(name) }
                } else {
                    open.append(name)
                }
                return
            }
            guard spaced else { throw error("attributes of <\(name)> are not separated by white space") }
            let attribute = try self.name()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == ascii("=") else {
                throw error("attribute \(attribute) of <\(name)> has no value")
            }
            position += 1
            skipWhitespace()
            let value = try attributeValue()
            // Checked pairwise: bounded, so a tag of a hundred thousand attributes is refused
            // before that costs billions of comparisons (Core Data writes five at most).
            guard attributes.count < Self.attributeLimit else {
                throw error("<\(name)> has more than \(Self.attributeLimit) attributes")
            }
            if attributes.contains(where: { $0.name == attribute }) {
                throw error("attribute \(attribute) appears twice in <\(name)>")
            }
            attributes.append(Attribute(name: attribute, value: value))
        }
    }

    private mutating func endTag<Handler: XMLScanHandler>(_ handler: inout Handler) throws(XMLScanError) {
        let start = line
        position += 2
        let name = try self.name()
        skipWhitespace()
        guard position < bytes.count, bytes[position] == ascii(">") else {
            throw error("</\(name) is not closed with '>'")
        }
        position += 1
        guard let expected = open.last else { throw error("</\(name)> without a start tag") }
        guard expected == name else { throw error("</\(name)> closes <\(expected)>") }
        open.removeLast()
        try call(start) { () throws(XMLScanFailure) in try handler.endElement(name) }
    }

    /// Skips `<!DOCTYPE … [ internal subset ] >`: quoted strings and comments may hold `>` and
    /// brackets.
    private mutating func skipDocumentType() throws(XMLScanError) {
        let start = line
        position += 9
        var depth = 0
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case ascii("\""), ascii("'"):
                position += 1
                while position < bytes.count && bytes[position] != byte { step() }
                position += 1
            case ascii("<") where starts(with: "<!--"):
                try skip(past: "-->", what: "comment")
            case ascii("<") where starts(with: "<?"):
                try skip(past: "?>", what: "processing instruction")
            case ascii("["):
                depth += 1
                position += 1
            case ascii("]"):
                depth -= 1
                position += 1
            case ascii(">") where depth <= 0:
                position += 1
                return
            default:
                step()
            }
        }
        throw XMLScanError(line: start, message: "the document type declaration is not closed")
    }

    // MARK: - Names, values, text

    private mutating func name() throws(XMLScanError) -> String {
        let from = position
        while position < bytes.count {
            let byte = bytes[position]
            let isNameByte =
                byte >= 0x80 || (byte >= ascii("a") && byte <= ascii("z")) || (byte >= ascii("A") && byte <= ascii("Z"))
                || (byte >= ascii("0") && byte <= ascii("9")) || byte == ascii("_") || byte == ascii(":")
                || byte == ascii("-")
                || byte == ascii(".")
            guard isNameByte else { break }
            position += 1
        }
        guard position > from else {
            guard position < bytes.count else { throw error("a name is cut off (truncated file?)") }
            throw error(
                "'\(Character(Unicode.Scalar(bytes[position])).debugDescription.dropFirst().dropLast())' where a name should be"
            )
        }
        let first = bytes[from]
        if (first >= ascii("0") && first <= ascii("9")) || first == ascii("-") || first == ascii(".") {
            throw error("a name starts with '\(Character(Unicode.Scalar(first)))'")
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[from..<position]), as: UTF8.self)
    }

    private mutating func attributeValue() throws(XMLScanError) -> String {
        guard position < bytes.count, bytes[position] == ascii("\"") || bytes[position] == ascii("'") else {
            throw error("an attribute value is not quoted")
        }
        let quote = bytes[position]
        position += 1
        let from = position, startLine = line
        var plain = true
        while position < bytes.count && bytes[position] != quote {
            let byte = bytes[position]
            if byte == ascii("<") { throw error("'<' in an attribute value") }
            if byte == ascii("&") || byte < 0x20 || byte == 0xEF { plain = false }
            step()
        }
        guard position < bytes.count else { throw error("an attribute value is not closed (truncated file?)") }
        let end = position
        position += 1
        if plain { return String(decoding: UnsafeBufferPointer(rebasing: bytes[from..<end]), as: UTF8.self) }
        return try decoded(from, end, startLine: startLine, attribute: true)
    }

    /// Text up to the next `<` (or the end), decoded.
    private mutating func textRun() throws(XMLScanError) -> String {
        let from = position, startLine = line
        var plain = true
        while position < bytes.count {
            let byte = bytes[position]
            if byte == ascii("<") { break }
            if byte == ascii("&") || byte == 0xEF || (byte < 0x20 && byte != ascii("\n") && byte != ascii("\t")) {
                plain = false
            }
            step()
        }
        if plain { return String(decoding: UnsafeBufferPointer(rebasing: bytes[from..<position]), as: UTF8.self) }
        return try decoded(from, position, startLine: startLine, attribute: false)
    }

    /// The text of `bytes[from..<end]` with references expanded, line ends normalized, and (in an
    /// attribute value) white space made spaces; characters XML does not allow are errors.
    private mutating func decoded(_ from: Int, _ end: Int, startLine: Int, attribute: Bool) throws(XMLScanError)
        -> String
    {
        scratch.removeAll(keepingCapacity: true)
        var lineOf = startLine
        var i = from
        while i < end {
            let byte = bytes[i]
            switch byte {
            case ascii("&"):
                guard let semicolon = (i + 1..<min(end, i + 12)).first(where: { bytes[$0] == ascii(";") }) else {
                    throw XMLScanError(line: lineOf, message: "'&' that starts no reference (write &amp;)")
                }
                try appendReference(bytes[(i + 1)..<semicolon], line: lineOf)
                i = semicolon + 1
            case ascii("\r"):
                // CR LF and a lone CR are one line end.
                scratch.append(attribute ? ascii(" ") : ascii("\n"))
                if i + 1 < end && bytes[i + 1] == ascii("\n") {
                    i += 2
                    lineOf += 1
                } else {
                    i += 1
                }
            case ascii("\n"), ascii("\t"):
                scratch.append(attribute ? ascii(" ") : byte)
                if byte == ascii("\n") { lineOf += 1 }
                i += 1
            default:
                if let forbidden = forbiddenCharacter(at: i, end) {
                    throw XMLScanError(line: lineOf, message: forbidden)
                }
                scratch.append(byte)
                i += 1
            }
        }
        return String(decoding: scratch, as: UTF8.self)
    }

    private mutating func appendReference(_ body: Slice<UnsafeBufferPointer<UInt8>>, line: Int) throws(XMLScanError) {
        let name = String(decoding: UnsafeBufferPointer(rebasing: body), as: UTF8.self)
        switch name {
        case "lt": scratch.append(ascii("<"))
        case "gt": scratch.append(ascii(">"))
        case "amp": scratch.append(ascii("&"))
        case "apos": scratch.append(ascii("'"))
        case "quot": scratch.append(ascii("\""))
        default:
            guard name.hasPrefix("#") else {
                throw XMLScanError(
                    line: line,
                    message: "reference to entity &\(name); (storefs expands only &lt; &gt; &amp; &apos; &quot;)")
            }
            let hexadecimal = name.hasPrefix("#x")
            let digits = name.dropFirst(hexadecimal ? 2 : 1)
            // Digits only: UInt32(_:radix:) would also take a sign ("&#+65;").
            guard !digits.isEmpty, digits.count <= 8,
                digits.allSatisfy({ hexadecimal ? $0.isHexDigit : $0.isWholeNumber && $0.isASCII }),
                let value = UInt32(digits, radix: hexadecimal ? 16 : 10),
                value == 0x9 || value == 0xA || value == 0xD || (0x20...0xD7FF).contains(value)
                    || (0xE000...0xFFFD).contains(value)
                    || (0x10000...0x10FFFF).contains(value),
                let scalar = Unicode.Scalar(value)
            else { throw XMLScanError(line: line, message: "&\(name); is not a character XML allows") }
            scratch.append(contentsOf: String(Character(scalar)).utf8)
        }
    }

    /// Throws unless `bytes[from..<end]` holds only characters XML allows (CDATA is not decoded,
    /// so it is checked here).
    private func requireCharacters(_ from: Int, _ end: Int, line: Int) throws(XMLScanError) {
        var lineOf = line
        for i in from..<end {
            if bytes[i] == ascii("\n") { lineOf += 1 }
            if let forbidden = forbiddenCharacter(at: i, end) { throw XMLScanError(line: lineOf, message: forbidden) }
        }
    }

    /// What is wrong with the character starting at `i` (before `end`), if XML does not allow it:
    /// controls other than tab, LF and CR, and U+FFFE and U+FFFF.
    private func forbiddenCharacter(at i: Int, _ end: Int) -> String? {
        let byte = bytes[i]
        if byte < 0x20 && byte != ascii("\t") && byte != ascii("\n") && byte != ascii("\r") {
            return "control character U+\(hex(UInt32(byte))) (XML does not allow it)"
        }
        if byte == 0xEF && i + 2 < end && bytes[i + 1] == 0xBF && (bytes[i + 2] == 0xBE || bytes[i + 2] == 0xBF) {
            return "U+\(hex(bytes[i + 2] == 0xBE ? 0xFFFE : 0xFFFF)) (XML does not allow it)"
        }
        return nil
    }

    private func normalizedLineEnds(_ from: Int, _ end: Int) -> String {
        let text = UnsafeBufferPointer(rebasing: bytes[from..<end])
        guard text.contains(ascii("\r")) else { return String(decoding: text, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var i = 0
        while i < text.count {
            if text[i] == ascii("\r") {
                out.append(ascii("\n"))
                i += (i + 1 < text.count && text[i + 1] == ascii("\n")) ? 2 : 1
            } else {
                out.append(text[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - Moving

    /// One byte forward, counting lines.
    private mutating func step() {
        if bytes[position] == ascii("\n") { line += 1 }
        position += 1
    }

    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        let from = position
        while position < bytes.count {
            let byte = bytes[position]
            guard byte == ascii(" ") || byte == ascii("\n") || byte == ascii("\t") || byte == ascii("\r") else { break }
            step()
        }
        return position > from
    }

    private func starts(with literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        let pointer = literal.utf8Start
        for k in 0..<count where bytes[position + k] != pointer[k] { return false }
        return true
    }

    /// Moves past the next `terminator`, counting lines.
    private mutating func skip(past terminator: StaticString, what: String) throws(XMLScanError) {
        let start = line
        while position < bytes.count {
            if starts(with: terminator) {
                position += terminator.utf8CodeUnitCount
                return
            }
            step()
        }
        throw XMLScanError(line: start, message: "a \(what) is not closed (truncated file?)")
    }

    private func error(_ message: String) -> XMLScanError { XMLScanError(line: line, message: message) }

    private func call(_ line: Int, _ body: () throws(XMLScanFailure) -> Void) throws(XMLScanError) {
        do { try body() } catch { throw XMLScanError(line: line, message: error.message) }
    }

    private func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

private func ascii(_ character: Unicode.Scalar) -> UInt8 { UInt8(character.value) }
