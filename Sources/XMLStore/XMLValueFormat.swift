import Foundation
import ObjectGraph

/// How attribute values and strings are spelled in Core Data's XML store format.
///
/// See docs in ``XMLStoreType`` for the decisions; the short version: Core Data's own spellings
/// where the corpus shows them (dates `%.20f`, binary base64 in 76-column lines, booleans 0/1,
/// `\uXXXX` escapes of byte-swapped UTF-16 for `<`, `>` and `&`), and exact, still-numeric
/// spellings where it does not.
enum XMLValueFormat {
    /// The `type` attribute of `<attribute>` for an attribute type.
    static func typeName(_ type: AttributeType) -> String {
        switch type {
        case .integer16: "int16"
        case .integer32: "int32"
        case .integer64: "int64"
        case .decimal: "decimal"
        case .double: "double"
        case .float: "float"
        case .string: "string"
        case .boolean: "bool"
        case .date: "date"
        case .binaryData: "binary"
        case .transformable: "transformable"
        case .uuid: "uuid"
        case .uri: "uri"
        case .objectID: "objectid"
        case .undefined: "undefined"
        }
    }

    /// The attribute type a file's `type` names (for inferring a model).
    static func attributeType(_ name: String) -> AttributeType? {
        switch name {
        case "int16": .integer16
        case "int32": .integer32
        case "int64": .integer64
        case "decimal": .decimal
        case "double": .double
        case "float": .float
        case "string": .string
        case "bool": .boolean
        case "date": .date
        case "binary": .binaryData
        case "transformable": .transformable
        case "uuid": .uuid
        case "uri": .uri
        default: nil
        }
    }

    // MARK: - Values

    static func text(of value: AttributeValue, as type: AttributeType) -> String {
        switch value {
        case .integer(let v): String(v)
        case .decimal(let v): DecimalConversion.text(v)
        case .double(let v): number(v)
        case .float(let v): number(v)
        case .string(let v): escape(v)
        case .boolean(let v): v ? "1" : "0"
        case .date(let v): date(v.timeIntervalSinceReferenceDate)
        case .data(let v): base64Lines(v)
        case .uuid(let v): v.uuidString
        }
    }

    /// Parses `text` for `type`; nil when it does not parse.
    static func value(_ text: String, as type: AttributeType) -> AttributeValue? {
        switch type {
        case .integer16, .integer32, .integer64:
            let t = trimmed(text)
            if let v = Int64(t) { return type.fullIntegerRange.contains(v) ? .integer(v) : nil }
            // Some writers print whole floats for integers ("5.0"); accept exact ones.
            if let d = Double(t), d.rounded() == d, let v = Int64(exactly: d), type.fullIntegerRange.contains(v) {
                return .integer(v)
            }
            return nil
        case .decimal:
            let t = trimmed(text)
            guard !t.isEmpty, let d = DecimalConversion.decimal(t) else { return nil }
            return .decimal(d)
        case .double:
            return parseNumber(text).map { .double($0) }
        case .float:
            let t = trimmed(text)
            return Float(t).map { .float($0) }
        case .string, .uri:
            return unescape(text).map { .string($0) }
        case .boolean:
            switch trimmed(text).lowercased() {
            case "1", "yes", "true": return .boolean(true)
            case "0", "no", "false": return .boolean(false)
            default: return nil
            }
        case .date:
            return parseNumber(text).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .binaryData, .transformable:
            return Data(base64Encoded: withoutWhitespace(text)).map { .data($0) }
        case .uuid:
            let t = trimmed(text)
            return (canonicalUUID(t) ?? UUID(uuidString: t)).map { .uuid($0) }
        case .objectID, .undefined:
            return nil
        }
    }

    /// `text` without leading and trailing white space (Foundation's `.whitespacesAndNewlines`).
    /// Values as written (no space around them, ASCII at both ends) come back as they are:
    /// Foundation's trimming bridges to NSString, a sixth of opening a large XML store.
    static func trimmed(_ text: String) -> String {
        if let first = text.utf8.first, let last = text.utf8.last, first > 0x20, first < 0x80, last > 0x20, last < 0x80
        {
            return text
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `text` without its white space (base64 lines). ASCII text, as Core Data writes, is
    /// filtered by bytes: by Character (Unicode properties) it was 2 % of opening a store.
    static func withoutWhitespace(_ text: String) -> String {
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return text.filter { !$0.isWhitespace } }
        // The ASCII white space: tab, line feed, vertical tab, form feed, carriage return, space.
        func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        guard text.utf8.contains(where: isWhitespace) else { return text }
        return String(decoding: text.utf8.filter { !isWhitespace($0) }, as: UTF8.self)
    }

    /// The value of an ASCII hex digit (either case); nil for any other code.
    private static func hexDigit<Code: FixedWidthInteger>(_ code: Code) -> Code? {
        switch code {
        case 0x30...0x39: code - 0x30
        case 0x41...0x46: code - 0x41 + 10
        case 0x61...0x66: code - 0x61 + 10
        default: nil
        }
    }

    /// A UUID in its canonical form (`8-4-4-4-12` hex digits, either case), read without
    /// `UUID(uuidString:)`, which runs sscanf (2 % of opening a store); nil for any other form.
    static func canonicalUUID(_ text: String) -> UUID? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        var index = 0
        var high: UInt8?
        for (position, byte) in utf8.enumerated() {
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard byte == 0x2D else { return nil }
                continue
            }
            guard let digit = hexDigit(byte) else { return nil }
            if let h = high {
                bytes[index] = h << 4 | digit
                index += 1
                high = nil
            } else {
                high = digit
            }
        }
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    private static func parseNumber(_ text: String) -> Double? {
        Double(trimmed(text))
    }

    /// Whole numbers as integers (as Core Data prints floats: `5`), else Swift's shortest
    /// round-tripping form (`0.1`, `5e-324`, `nan`, `inf`, `-0.0`).
    static func number<F: BinaryFloatingPoint & LosslessStringConvertible>(_ v: F) -> String {
        if v.isFinite, v == v.rounded(), abs(v) < 1e15, !(v == 0 && v.sign == .minus) {
            return String(Int64(v))
        }
        return v.description
    }

    /// Core Data's `%.20f`, unless that does not read back to the same bits (very small or very
    /// large magnitudes, NaN), then Swift's shortest exact form.
    static func date(_ seconds: Double) -> String {
        if seconds.isFinite, abs(seconds) < 1e16 {
            let text = String(format: "%.20f", seconds)
            if let back = Double(text), back.bitPattern == seconds.bitPattern { return text }
        }
        return seconds.description
    }

    static func base64Lines(_ data: Data) -> String {
        if data.isEmpty { return "" }
        return data.base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) + "\n"
    }

    // MARK: - String escapes

    /// Escapes a string for element content.
    ///
    /// Core Data 2009 wrote `<`, `>`, `&` as `\u3c00`, `\u3e00`, `\u2600`: a backslash-u escape
    /// of the UTF-16 code unit with its bytes swapped. storefs writes the same and extends it to
    /// every character that XML 1.0 cannot carry or that a parser would change (controls other
    /// than tab and newline, carriage return, U+FFFE/U+FFFF) and to the backslash itself
    /// (`\u5c00`), so that any string reads back exactly.
    static func escape(_ s: String) -> String {
        // Most strings need no escape: returned as they are. U+FFFE and U+FFFF are EF BF BE/BF.
        if !s.utf8.contains(where: {
            $0 == 0x3C || $0 == 0x3E || $0 == 0x26 || $0 == 0x5C || ($0 < 0x20 && $0 != 0x09 && $0 != 0x0A)
                || $0 == 0xEF
        }) {
            return s
        }
        var out = ""
        out.unicodeScalars.reserveCapacity(s.unicodeScalars.count)
        for scalar in s.unicodeScalars {
            let v = scalar.value
            let needsEscape =
                v == 0x3C || v == 0x3E || v == 0x26 || v == 0x5C
                || (v < 0x20 && v != 0x09 && v != 0x0A) || v == 0xFFFE || v == 0xFFFF
            if needsEscape {
                let swapped = ((v & 0xFF) << 8) | (v >> 8)
                out += "\\u"
                let hex = String(swapped, radix: 16)
                out += String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Whether `s` holds a backslash followed by `u`, by a scan of its bytes (`contains` of a
    /// string went through NSString, a twentieth of opening a large XML store).
    private static func containsEscape(_ s: String) -> Bool {
        var previous: UInt8 = 0
        for byte in s.utf8 {
            if previous == 0x5C && byte == 0x75 { return true }
            previous = byte
        }
        return false
    }

    /// Reverses ``escape(_:)``: every `\u` followed by four hex digits is a byte-swapped UTF-16
    /// code unit; anything else is literal. Nil when the escapes form an invalid string.
    static func unescape(_ s: String) -> String? {
        guard containsEscape(s) else { return s }
        var units: [UInt16] = []
        units.reserveCapacity(s.utf16.count)
        let u = Array(s.utf16)
        var i = 0
        while i < u.count {
            if u[i] == 0x5C, i + 5 < u.count + 0, u[i + 1] == 0x75,
                let a = hexDigit(u[i + 2]), let b = hexDigit(u[i + 3]), let c = hexDigit(u[i + 4]),
                let d = hexDigit(u[i + 5])
            {
                let value = (a << 12) | (b << 8) | (c << 4) | d
                units.append((value << 8) | (value >> 8))
                i += 6
            } else {
                units.append(u[i])
                i += 1
            }
        }
        var result = ""
        var iterator = units.makeIterator()
        var decoder = UTF16()
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): result.unicodeScalars.append(scalar)
            case .emptyInput: break loop
            case .error: return nil
            }
        }
        return result
    }

    /// Escapes text for an XML attribute value (names, ids).
    static func attributeEscape(_ s: String) -> String {
        // Most text has nothing to escape: returned as it is, without building a copy.
        guard
            s.utf8.contains(where: {
                $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: "\"")
                    || $0 == UInt8(ascii: ">")
            })
        else { return s }
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case "\"": out += "&quot;"
            case ">": out += "&gt;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}

extension AttributeType {
    /// ``integerRange``, or every Int64 for a type without one (only integer types reach the
    /// callers; spelled without a force unwrap so no path from a file can trap on it).
    fileprivate var fullIntegerRange: ClosedRange<Int64> { integerRange ?? Int64.min...Int64.max }
}
