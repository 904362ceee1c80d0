import Foundation
import ObjectGraph

/// The text forms of attribute values in files (docs/SEMANTICS.md): what `cat` shows and what a write
/// must hold.
///
/// Strings as UTF-8; integers and decimals in decimal; doubles and floats in the shortest form that
/// reads back to the same value; booleans `true`/`false` (1/0, yes/no accepted); dates in ISO 8601,
/// UTC, with as many fractional digits as it takes to read back the same value; UUIDs canonical
/// (lower-case); binary and transformable values raw. Text types get one trailing newline when
/// read, and a write strips exactly one.
///
/// Writes are strict where a lenient reading would change the value silently: apart from that one
/// newline, nothing around a number, date, boolean, UUID or URI is ignored (spaces, a `\r` of a
/// Windows line ending, a second newline), a number too large or too small for its type is
/// refused rather than stored as infinity or zero, and text that is not UTF-8 is refused. Forms
/// that denote exactly the same value are accepted and read back in the canonical form (`+7` and
/// `007` as `7`, `0.00001` as `1e-05`, dates with an offset as UTC).
package enum ValueText {
    /// Whether files of this type are text (a trailing newline) rather than raw bytes.
    static func isText(_ type: AttributeType) -> Bool {
        type != .binaryData && type != .transformable
    }

    /// The file content for `value` of an attribute of `type`.
    static func content(of value: AttributeValue, type: AttributeType) -> Data {
        if case .data(let bytes) = value { return bytes }
        return Data((text(of: value) + "\n").utf8)
    }

    /// The size of ``content(of:type:)`` without making it (a large string is not copied).
    static func size(of value: AttributeValue, type: AttributeType) -> Int {
        switch value {
        case .data(let bytes): return bytes.count
        case .string(let text): return text.utf8.count + 1
        default: return text(of: value).utf8.count + 1
        }
    }

    static func text(of value: AttributeValue) -> String {
        switch value {
        case .integer(let v): return String(v)
        case .decimal(let v): return DecimalConversion.text(v)
        case .double(let v): return v.description
        case .float(let v): return v.description
        case .string(let v): return v
        case .boolean(let v): return v ? "true" : "false"
        case .date(let v): return format(v)
        case .uuid(let v):
            var text: [UInt8] = []
            appendUUID(v, to: &text)
            return String(decoding: text, as: UTF8.self)
        case .data(let v): return String(decoding: v, as: UTF8.self)
        }
    }

    /// A UUID's text form (canonical, lower case), appended as bytes: without Foundation's
    /// printf and a lowercased copy, for writers of many values (an export) too.
    static func appendUUID(_ uuid: UUID, to text: inout [UInt8]) {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
                text.append(hexDigits[Int(byte >> 4)])
                text.append(hexDigits[Int(byte & 0x0F)])
            }
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Parses file content written for an attribute of `type`.
    ///
    /// - Throws: a message saying what the text should look like.
    package static func value(from content: Data, type: AttributeType) throws(ValueTextError) -> AttributeValue {
        if !isText(type) { return .data(content) }
        // Exactly one newline byte goes, whatever precedes it: as a String, "\r\n" is one
        // Character and would hide the newline from hasSuffix.
        let body = content.last == UInt8(ascii: "\n") ? content.dropLast() : content[...]
        guard let text = String(validating: body, as: UTF8.self) else {
            throw ValueTextError("the text is not valid UTF-8")
        }
        if type == .string { return .string(text) }
        if let first = text.unicodeScalars.first, let last = text.unicodeScalars.last,
            first.properties.isWhitespace || last.properties.isWhitespace
        {
            let hint = text.hasSuffix("\r") ? " (a \\r\\n line ending: write the value with \\n)" : ""
            throw ValueTextError("\"\(excerpt(text))\" has spaces or line breaks around the value\(hint)")
        }
        switch type {
        case .string:
            return .string(text)
        case .uri:
            // Kept as the exact text (stores hold URIs that URL parsers refuse, spaces included,
            // and a value read must write back unchanged); what cannot be a URI at all is refused.
            guard !text.isEmpty, !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw ValueTextError("\"\(excerpt(text))\" is not a URI (it is empty or holds control characters)")
            }
            return .string(text)
        case .integer16, .integer32, .integer64:
            guard isIntegerLiteral(text) else { throw ValueTextError("\"\(excerpt(text))\" is not an integer") }
            guard let v = Int64(text.hasPrefix("+") ? String(text.dropFirst()) : text) else {
                throw ValueTextError("\(excerpt(text)) is out of range for a 64-bit integer")
            }
            return .integer(v)
        case .decimal:
            guard isDecimalLiteral(text), let v = DecimalConversion.decimal(text) else {
                throw ValueTextError("\"\(excerpt(text))\" is not a decimal number")
            }
            return .decimal(v)
        case .double:
            guard let v = Double(text) else { throw ValueTextError("\"\(excerpt(text))\" is not a number") }
            try checkFinite(Double(v), text)
            return .double(v)
        case .float:
            guard let v = Float(text) else { throw ValueTextError("\"\(excerpt(text))\" is not a number") }
            try checkFinite(Double(v), text)
            return .float(v)
        case .boolean:
            switch text.lowercased() {
            case "true", "1", "yes": return .boolean(true)
            case "false", "0", "no": return .boolean(false)
            default: throw ValueTextError("\"\(excerpt(text))\" is not a boolean (true/false, 1/0, yes/no)")
            }
        case .date:
            guard let date = parseDate(text) else {
                throw ValueTextError(
                    "\"\(excerpt(text))\" is not an ISO 8601 date such as 2024-05-01T12:30:00Z or 2024-05-01T12:30:00.25+02:00"
                )
            }
            return .date(date)
        case .uuid:
            guard let uuid = UUID(uuidString: text) else {
                throw ValueTextError("\"\(excerpt(text))\" is not a UUID")
            }
            return .uuid(uuid)
        case .binaryData, .transformable:
            return .data(content)
        case .objectID, .undefined:
            throw ValueTextError("attributes of this type cannot be written")
        }
    }

    /// Refuses a number that became infinite or zero only because its type cannot hold it.
    private static func checkFinite(_ value: Double, _ text: String) throws(ValueTextError) {
        let lower = text.lowercased()
        if value.isInfinite && !lower.contains("inf") {
            throw ValueTextError("\(excerpt(text)) is too large for this number type")
        }
        if value == 0 {
            let mantissa = lower.hasPrefix("0x") ? lower.dropFirst(2).prefix { $0 != "p" } : lower.prefix { $0 != "e" }
            if mantissa.contains(where: { $0 >= "1" && $0 <= "9" || (lower.hasPrefix("0x") && $0 >= "a" && $0 <= "f") })
            {
                throw ValueTextError("\(excerpt(text)) is too small for this number type (it would be stored as 0)")
            }
        }
    }

    private static func isIntegerLiteral(_ text: String) -> Bool {
        let digits = text.utf8.drop { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+") }
        return !digits.isEmpty && text.utf8.count - digits.count <= 1
            && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    private static func isDecimalLiteral(_ text: String) -> Bool {
        var digits = 0
        var dots = 0
        for (i, c) in text.enumerated() {
            if c.isASCII && c.isNumber {
                digits += 1
            } else if c == "." {
                dots += 1
            } else if (c == "-" || c == "+") && i == 0 {
            } else {
                return false
            }
        }
        return digits > 0 && dots <= 1
    }

    private static func excerpt(_ text: String) -> String {
        text.count > 40 ? String(text.prefix(40)) + "…" : text
    }

    // MARK: - Dates

    /// ISO 8601 in UTC (``ISO8601DateText/text(of:)``).
    static func format(_ date: Date) -> String { ISO8601DateText.text(of: date) }

    /// Parses an ISO 8601 date (``ISO8601DateText/date(from:)``).
    static func parseDate(_ text: String) -> Date? { ISO8601DateText.date(from: text) }

    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) { ISO8601DateText.civil(fromDays: days) }

    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
        ISO8601DateText.days(fromCivil: year, month, day)
    }
}

/// Why a file's text is not a value of its attribute's type.
package struct ValueTextError: Error, Sendable {
    package var message: String
    init(_ message: String) { self.message = message }
}
