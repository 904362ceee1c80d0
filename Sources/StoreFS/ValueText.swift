import Foundation
import ObjectGraph

/// The text forms of attribute values in files (DESIGN.md): what `cat` shows and what a write
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
enum ValueText {
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
        case .uuid(let v): return v.uuidString.lowercased()
        case .data(let v): return String(decoding: v, as: UTF8.self)
        }
    }

    /// Parses file content written for an attribute of `type`.
    ///
    /// - Throws: a message saying what the text should look like.
    static func value(from content: Data, type: AttributeType) throws(ValueTextError) -> AttributeValue {
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
                    "\"\(excerpt(text))\" is not an ISO 8601 date such as 2024-05-01T12:30:00Z or 2024-05-01T12:30:00.25+02:00")
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
            if mantissa.contains(where: { $0 >= "1" && $0 <= "9" || (lower.hasPrefix("0x") && $0 >= "a" && $0 <= "f") }) {
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
            if c.isASCII && c.isNumber { digits += 1 } else if c == "." { dots += 1 } else if (c == "-" || c == "+") && i == 0 {
            } else { return false }
        }
        return digits > 0 && dots <= 1
    }

    private static func excerpt(_ text: String) -> String {
        text.count > 40 ? String(text.prefix(40)) + "…" : text
    }

    // MARK: - Dates

    /// ISO 8601 in UTC with the fewest fractional digits that read back to the same Double.
    static func format(_ date: Date) -> String {
        let t = date.timeIntervalSinceReferenceDate
        guard t.isFinite else { return t.description }
        let whole = t.rounded(.down)
        let fraction = t - whole  // exact, but for -1 < t < 0 (see DateTextTests)
        let base = wholeSeconds(whole)
        if fraction == 0 { return base + "Z" }
        // parseDate reads the text back as `whole + Double("0.ddd")`, so that is the round trip
        // to check. Up to 15 digits come from rounding fraction × 10^n (fast; printf made listing
        // a folder of dates twice as slow), more from printf.
        func readsBack(_ decimals: String?) -> Bool {
            guard let decimals, let back = Double("0" + decimals) else { return false }
            return (whole + back).bitPattern == t.bitPattern
        }
        for digits in 1...30 {
            let decimals = Self.scaledDigits(fraction, digits) ?? Self.printfDigits(fraction, digits)
            if readsBack(decimals) { return base + decimals! + "Z" }
        }
        return base + String(format: "%.30f", fraction).dropFirst() + "Z"
    }

    /// `.ddd` with `digits` digits from rounding fraction × 10^digits; nil beyond 15 digits (where
    /// the product is no longer exact) and when it rounds up to 1.
    private static func scaledDigits(_ fraction: Double, _ digits: Int) -> String? {
        guard digits <= 15 else { return nil }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (fraction * scale).rounded()
        guard scaled < scale else { return nil }
        let text = String(Int64(scaled))
        return "." + String(repeating: "0", count: digits - text.count) + text
    }

    /// `.ddd` as printf rounds it; nil when it rounds up to 1.
    private static func printfDigits(_ fraction: Double, _ digits: Int) -> String? {
        let text = String(format: "%.\(digits)f", fraction)
        guard !text.hasPrefix("1") else { return nil }
        return String(text.dropFirst())
    }

    /// `YYYY-MM-DDTHH:MM:SS` of a whole number of seconds since 2001 in UTC, in ISO 8601's
    /// proleptic Gregorian calendar for every year: Foundation's calendar switches to the Julian
    /// calendar before 15 October 1582 (its "0001-01-01" is the proleptic 0000-12-30), which ISO
    /// 8601 does not. Years before 1 are astronomical (0000 is 1 BC, -0001 is 2 BC); years after
    /// 9999 take as many digits as they need. Instants too far out for an Int of seconds (beyond
    /// about 292 billion years) print as their number of seconds.
    private static func wholeSeconds(_ whole: Double) -> String {
        guard let unix = Int(exactly: whole + 978_307_200) else { return whole.description }
        let second = ((unix % 86_400) + 86_400) % 86_400
        let (y, m, d) = civil(fromDays: (unix - second) / 86_400)
        let year = y < 0 ? "-" + padded(-y, 4) : padded(y, 4)
        return year + "-" + padded(m, 2) + "-" + padded(d, 2) + "T" + padded(second / 3600, 2) + ":"
            + padded(second / 60 % 60, 2) + ":" + padded(second % 60, 2)
    }

    private static func padded(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's civil_from_days).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Parses `YYYY-MM-DD[THH:MM[:SS[.fraction]]][Z|±HH:MM]` (a space may stand for the T).
    static func parseDate(_ text: String) -> Date? {
        let scalars = Array(text.utf8)
        var i = 0
        func number(_ count: Int) -> Int? {
            guard i + count <= scalars.count else { return nil }
            var v = 0
            for c in scalars[i..<(i + count)] {
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            i += count
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < scalars.count, scalars[i] == c else { return false }
            i += 1
            return true
        }
        var negativeYear = false
        if i < scalars.count, scalars[i] == UInt8(ascii: "-") || scalars[i] == UInt8(ascii: "+") {
            negativeYear = scalars[i] == UInt8(ascii: "-")
            i += 1
        }
        // Four digits, or more for years after 9999 (bounded: no Int overflow below).
        var yearDigits = 0
        while i + yearDigits < scalars.count, yearDigits < 13, scalars[i + yearDigits] >= 48 && scalars[i + yearDigits] <= 57 {
            yearDigits += 1
        }
        guard (4...12).contains(yearDigits), let unsignedYear = number(yearDigits), expect(UInt8(ascii: "-")),
            let mo = number(2), expect(UInt8(ascii: "-")), let d = number(2)
        else { return nil }
        let y = negativeYear ? -unsignedYear : unsignedYear
        var h = 0
        var mi = 0
        var s = 0
        var fraction = 0.0
        var offset = 0
        if i < scalars.count, scalars[i] == UInt8(ascii: "T") || scalars[i] == UInt8(ascii: " ") {
            i += 1
            guard let hh = number(2), expect(UInt8(ascii: ":")), let mm = number(2) else { return nil }
            h = hh
            mi = mm
            if expect(UInt8(ascii: ":")) {
                guard let ss = number(2) else { return nil }
                s = ss
                if i < scalars.count, scalars[i] == UInt8(ascii: ".") {
                    let start = i
                    i += 1
                    while i < scalars.count, scalars[i] >= 48 && scalars[i] <= 57 { i += 1 }
                    guard i > start + 1, let f = Double("0" + String(decoding: scalars[start..<i], as: UTF8.self)) else {
                        return nil
                    }
                    fraction = f
                }
            }
            if expect(UInt8(ascii: "Z")) {
            } else if i < scalars.count, scalars[i] == UInt8(ascii: "+") || scalars[i] == UInt8(ascii: "-") {
                let sign = scalars[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let oh = number(2) else { return nil }
                _ = expect(UInt8(ascii: ":"))
                guard let om = number(2), oh < 24, om < 60 else { return nil }
                offset = sign * (oh * 3600 + om * 60)
            }
        }
        guard i == scalars.count, (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 60 else {
            return nil
        }
        // Proleptic Gregorian for every year, checking the day exists in its month.
        let days = Self.days(fromCivil: y, mo, d)
        guard Self.civil(fromDays: days) == (y, mo, d) else { return nil }
        let seconds = Double(days) * 86_400 - 978_307_200 + Double(h * 3600 + mi * 60 + s - offset)
        return Date(timeIntervalSinceReferenceDate: seconds + fraction)
    }
}

/// Why a file's text is not a value of its attribute's type.
struct ValueTextError: Error, Sendable {
    var message: String
    init(_ message: String) { self.message = message }
}
