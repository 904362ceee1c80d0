import Foundation
import ObjectGraph

/// Whether text written so far can still become a value: a write whose text no continuation can
/// make valid (`abc` for an integer, bytes that are not UTF-8) fails at write(2), where every
/// program sees the error, instead of at close, which shells and many programs do not check.
extension ValueText {
    /// Whether some continuation of `content` (the file's text from its start, possibly
    /// incomplete) parses as a value of `type`. Only the shape is judged here; a complete value
    /// is parsed and validated as usual when it is set. `changedFrom`: where the latest write
    /// began, when what precedes it was judged before: a long string written piece by piece is
    /// then read once in all, not once per piece.
    static func canBecomeValue(_ content: Data, type: AttributeType, changedFrom offset: Int = 0) -> Bool {
        guard isText(type) else { return true }
        if type == .string || type == .uri {
            // Back to the start of the UTF-8 sequence the change begins in (at most 3 bytes).
            var start = content.index(content.startIndex, offsetBy: min(max(offset, 0), content.count))
            var steps = 0
            while start > content.startIndex, steps < 3, start < content.endIndex, content[start] & 0xC0 == 0x80 {
                start = content.index(before: start)
                steps += 1
            }
            return isUTF8Prefix(content[start...], allowingControlCharacters: type == .string)
        }
        // Numbers, booleans, dates and UUIDs are short: a longer text is judged whole when set.
        guard content.count <= 256 else { return true }
        guard isUTF8Prefix(content, allowingControlCharacters: false),
            let text = String(data: content, encoding: .utf8)
        else { return false }
        switch type {
        case .integer16, .integer32, .integer64: return isIntegerPrefix(text, type: type)
        case .decimal: return isDecimalPrefix(text)
        case .double, .float: return isFloatingPointPrefix(text)
        case .boolean:
            let lower = text.lowercased()
            return ["true", "false", "yes", "no", "1", "0"].contains { $0.hasPrefix(lower) }
        case .date:
            return text.unicodeScalars.allSatisfy { "0123456789-+:.TZ ".unicodeScalars.contains($0) }
        case .uuid:
            return text.count <= 36 && text.unicodeScalars.allSatisfy { $0 == "-" || $0.properties.isASCIIHexDigit }
        default:
            return true
        }
    }

    /// Whether `bytes` are valid UTF-8 but for a sequence cut off at the end. Without
    /// `allowingControlCharacters`, the control characters no value of a typed attribute holds
    /// (a newline within a number, say) make it invalid too.
    private static func isUTF8Prefix(_ bytes: Data, allowingControlCharacters: Bool) -> Bool {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let lead = bytes[index]
            let length: Int
            switch lead {
            case 0x00..<0x80:
                if !allowingControlCharacters && (lead < 0x20 || lead == 0x7F) { return false }
                length = 1
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: return false
            }
            let available = bytes.distance(from: index, to: bytes.endIndex)
            // A cut-off sequence at the end may still be completed; every byte present must fit.
            let present = min(length, available)
            var offset = 1
            while offset < present {
                let byte = bytes[bytes.index(index, offsetBy: offset)]
                guard byte & 0xC0 == 0x80 else { return false }
                // The second byte's range rules out overlong forms and surrogates (RFC 3629).
                if offset == 1 {
                    if lead == 0xE0 && byte < 0xA0 { return false }
                    if lead == 0xED && byte > 0x9F { return false }
                    if lead == 0xF0 && byte < 0x90 { return false }
                    if lead == 0xF4 && byte > 0x8F { return false }
                }
                offset += 1
            }
            if present < length { return true }
            index = bytes.index(index, offsetBy: length)
        }
        return true
    }

    private static func isIntegerPrefix(_ text: String, type: AttributeType) -> Bool {
        var digits = Substring(text)
        if let first = digits.first, first == "+" || first == "-" { digits = digits.dropFirst() }
        guard digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return false }
        // More digits only make the number larger: one already out of range stays out.
        let significant = digits.drop { $0 == "0" }
        guard !significant.isEmpty else { return true }
        guard significant.count <= 19, let magnitude = UInt64(significant) else { return false }
        guard let range = type.integerRange else { return true }
        let negative = text.hasPrefix("-")
        return negative ? magnitude <= range.lowerBound.magnitude : magnitude <= UInt64(range.upperBound)
    }

    private static func isDecimalPrefix(_ text: String) -> Bool {
        var body = Substring(text)
        if let first = body.first, first == "+" || first == "-" { body = body.dropFirst() }
        return body.filter { $0 == "." }.count <= 1 && body.allSatisfy { $0 == "." || ($0.isASCII && $0.isNumber) }
    }

    /// Decimal floating-point literals with an exponent, hexadecimal ones (`0x1p-3`), and the
    /// words `inf`, `infinity` and `nan`, as Swift's parser reads them.
    private static func isFloatingPointPrefix(_ text: String) -> Bool {
        var body = Substring(text.lowercased())
        if let first = body.first, first == "+" || first == "-" { body = body.dropFirst() }
        if ["infinity", "nan"].contains(where: { $0.hasPrefix(body) }) && !body.isEmpty && body.first?.isLetter == true
        {
            return true
        }
        if body.hasPrefix("0x") {
            return body.dropFirst(2).allSatisfy { $0.isHexDigit || $0 == "." || $0 == "p" || $0 == "+" || $0 == "-" }
        }
        return body.allSatisfy { ($0.isASCII && $0.isNumber) || $0 == "." || $0 == "e" || $0 == "+" || $0 == "-" }
    }
}
