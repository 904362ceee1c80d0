import Foundation
import ObjectGraph

/// Renders property lists, binary or XML, as the XML property list Apple's `plutil -convert xml1`
/// writes: the XML declaration and DOCTYPE, `<plist version="1.0">`, tab indentation, `<dict>`
/// keys in the order the list holds them, `<array/>` and `<dict/>` when empty, `<data>` as base64
/// on one line, dates in whole seconds (`2001-01-01T00:00:00Z`, as Apple writes them), reals in
/// the shortest form that reads back the same (`+infinity`, `-infinity`, `nan` as Apple spells
/// them), a keyed archive's references as `<dict><key>CF$UID</key><integer>N</integer></dict>`,
/// and `&`, `<`, `>` and carriage returns (which XML readers would turn into line feeds) escaped.
///
/// Binary lists are read by ``BinaryPropertyList``, XML ones by ``XMLPropertyListReader``, both
/// bounded. A list XML cannot express (a null, a dictionary key that is not a string, a string
/// with a control character XML 1.0 cannot carry) has no rendering, nor has input over ``maximumInput`` or a rendering past ``maximumOutput`` (shared
/// references of a binary list expand).
///
/// Stateless; safe from any thread.
public enum PropertyListXML {
    public static let maximumInput = 16 << 20
    public static let maximumOutput = 64 << 20

    /// The XML property list of `data` when it is a binary or XML property list; nil otherwise.
    public static func render(_ data: Data) -> Data? {
        guard data.count <= maximumInput else { return nil }
        let value: PropertyListValue
        if BinaryPropertyList.looksLikeBinaryPropertyList(data) {
            guard let parsed = try? BinaryPropertyList.parse(data, source: "value") else { return nil }
            value = parsed
        } else if XMLPropertyListReader.looksLikeXMLPropertyList(data) {
            guard let parsed = XMLPropertyListReader.parse(data) else { return nil }
            value = parsed
        } else {
            return nil
        }
        return xml(of: value)
    }

    /// `value` as an XML property list document; nil when XML cannot express it or it is too large.
    public static func xml(of value: PropertyListValue) -> Data? {
        var writer = Writer()
        writer.text += """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        guard writer.write(value, indent: 0) else { return nil }
        writer.text += "</plist>\n"
        return Data(writer.text.utf8)
    }

    private struct Writer {
        var text = ""

        /// Writes `value` on its own lines; false when it cannot be expressed or the text passed
        /// its bound.
        mutating func write(_ value: PropertyListValue, indent: Int) -> Bool {
            guard text.utf8.count <= PropertyListXML.maximumOutput else { return false }
            let tabs = String(repeating: "\t", count: indent)
            switch value {
            case .null:
                return false
            case .boolean(let b):
                text += tabs + (b ? "<true/>\n" : "<false/>\n")
            case .integer(let i):
                text += tabs + "<integer>\(i)</integer>\n"
            case .real(let d):
                text += tabs + "<real>\(Self.real(d))</real>\n"
            case .date(let seconds):
                guard let date = Self.date(seconds) else { return false }
                text += tabs + "<date>\(date)</date>\n"
            case .data(let bytes):
                text += tabs + "<data>\(bytes.base64EncodedString())</data>\n"
            case .string(let s):
                guard let escaped = Self.escaped(s) else { return false }
                text += tabs + "<string>" + escaped + "</string>\n"
            case .uid(let uid):
                text +=
                    tabs + "<dict>\n" + tabs + "\t<key>CF$UID</key>\n" + tabs + "\t<integer>\(uid)</integer>\n" + tabs
                    + "</dict>\n"
            case .array(let items):
                guard !items.isEmpty else {
                    text += tabs + "<array/>\n"
                    return true
                }
                text += tabs + "<array>\n"
                for item in items {
                    guard write(item, indent: indent + 1) else { return false }
                }
                text += tabs + "</array>\n"
            case .dictionary(let entries):
                guard !entries.isEmpty else {
                    text += tabs + "<dict/>\n"
                    return true
                }
                text += tabs + "<dict>\n"
                for entry in entries {
                    guard case .string(let key) = entry.key, let escaped = Self.escaped(key) else { return false }
                    text += tabs + "\t<key>" + escaped + "</key>\n"
                    guard write(entry.value, indent: indent + 1) else { return false }
                }
                text += tabs + "</dict>\n"
            }
            return text.utf8.count <= PropertyListXML.maximumOutput
        }

        /// `s` as XML text; nil when it holds a character XML 1.0 cannot carry (control characters
        /// but tab, line feed and carriage return; U+FFFE, U+FFFF), even as a reference.
        static func escaped(_ s: String) -> String? {
            var result = ""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "&": result += "&amp;"
                case "<": result += "&lt;"
                case ">": result += "&gt;"
                // XML readers turn a raw carriage return into a line feed.
                case "\r": result += "&#13;"
                case "\t", "\n": result.unicodeScalars.append(scalar)
                case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: return nil
                default: result.unicodeScalars.append(scalar)
                }
            }
            return result
        }

        static func real(_ d: Double) -> String {
            if d.isNaN { return "nan" }
            if d.isInfinite { return d > 0 ? "+infinity" : "-infinity" }
            return d.description
        }

        /// `YYYY-MM-DDTHH:MM:SSZ` of seconds since 2001 in UTC, whole seconds (rounded down), in the
        /// proleptic Gregorian calendar; nil outside years 0 to 9999, which the format cannot
        /// express.
        static func date(_ seconds: Double) -> String? {
            // Years 0 to 9999 lie within ±3.2e11 seconds of 2001: Int64 arithmetic cannot overflow.
            guard seconds.isFinite, abs(seconds) < 1e12 else { return nil }
            let unix = Int64(seconds.rounded(.down)) + 978_307_200
            let second = ((unix % 86_400) + 86_400) % 86_400
            let days = (unix - second) / 86_400
            let civil = ISO8601DateText.civil(fromDays: Int(days))
            let (year, month, day) = (Int64(civil.year), Int64(civil.month), Int64(civil.day))
            guard (0...9999).contains(year) else { return nil }
            func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
            let yearText = String(year)
            return String(repeating: "0", count: 4 - yearText.count) + yearText + "-" + two(month) + "-" + two(day)
                + "T"
                + two(second / 3600) + ":" + two(second / 60 % 60) + ":" + two(second % 60) + "Z"
        }
    }
}
