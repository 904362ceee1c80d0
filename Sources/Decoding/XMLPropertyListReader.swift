import Foundation
import ObjectGraph

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Reads an XML property list (Apple's PropertyList-1.0 DTD) into a ``PropertyListValue``, for
/// ``PropertyListXML``.
///
/// Foundation's `PropertyListSerialization` would read it too, but recursively without a bound
/// and without keyed archives' `CF$UID` form; this reader goes through `XMLParser` callbacks
/// with an explicit stack, after ``XMLInputCheck`` (the parser traps on names that are not
/// UTF-8), stops past ``XMLInputCheck/maximumDepth`` levels or ``maximumValues`` values, never
/// resolves external entities, and refuses anything the DTD does not allow (unknown elements,
/// text outside a value, a `<dict>` whose keys and values do not alternate).
///
/// Stateless; safe from any thread (each parse has its own parser).
public enum XMLPropertyListReader {
    public static let maximumValues = 1_000_000

    /// Whether `data` starts like an XML property list: after an optional byte order mark and
    /// white space, an XML declaration, a plist DOCTYPE or the `<plist` element.
    public static func looksLikeXMLPropertyList(_ data: Data) -> Bool {
        var start = data.startIndex
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { start += 3 }
        while start < data.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(data[start]) { start += 1 }
        let head = data[start...].prefix(64)
        return ["<?xml", "<!DOCTYPE plist", "<plist"].contains { head.starts(with: Array($0.utf8)) }
            && data.prefix(4096).range(of: Data("<plist".utf8)) != nil
    }

    /// The property list `data` holds; nil when it is not a well-formed one.
    public static func parse(_ data: Data) -> PropertyListValue? {
        guard (try? XMLInputCheck.requireUTF8(data, source: "value", code: .corruptStore)) != nil else { return nil }
        let parser = XMLParser(data: data)
        let builder = Builder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        guard parser.parse(), !builder.failed else { return nil }
        return builder.root
    }

    /// Collects one parse's callbacks; used by one parse on one thread.
    private final class Builder: NSObject, XMLParserDelegate {
        /// What an open container collected: a dictionary's keys are kept apart from its values,
        /// to check that they alternate.
        private enum Item {
            case key(String)
            case value(PropertyListValue)
        }

        /// An element not yet closed: a container collecting items, or a leaf collecting text.
        private struct Open {
            var name: String
            var items: [Item] = []
            var text = ""

            var holdsValues: Bool { name == "plist" || name == "dict" || name == "array" }
        }

        private static let leaves: Set<String> = ["key", "string", "integer", "real", "date", "data", "true", "false"]
        private var stack: [Open] = []
        private var values = 0
        private(set) var root: PropertyListValue?
        private(set) var failed = false

        private func fail(_ parser: XMLParser) {
            failed = true
            parser.abortParsing()
        }

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?,
            attributes attributeDict: [String: String] = [:]
        ) {
            guard !failed else { return }
            let fits: Bool
            if let parent = stack.last {
                // Values go inside containers only, a plist holds one, and a container holds no text.
                fits =
                    parent.holdsValues && (parent.name != "plist" || parent.items.isEmpty)
                    && parent.text.allSatisfy(\.isWhitespace)
                    && (elementName == "dict" || elementName == "array" || Self.leaves.contains(elementName))
                    && (elementName != "key" || parent.name == "dict")
            } else {
                fits = elementName == "plist"
            }
            values += 1
            guard fits, stack.count < XMLInputCheck.maximumDepth, values <= XMLPropertyListReader.maximumValues else {
                return fail(parser)
            }
            stack.append(Open(name: elementName))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !failed, !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            guard !failed, !stack.isEmpty else { return }
            stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
        ) {
            guard !failed, let open = stack.popLast() else { return }
            let trimmed = open.text.trimmingCharacters(in: .whitespacesAndNewlines)
            if open.holdsValues, !trimmed.isEmpty { return fail(parser) }
            let value: PropertyListValue?
            switch open.name {
            case "plist":
                guard open.items.count == 1, case .value(let only) = open.items[0] else { return fail(parser) }
                root = only
                return
            case "key":
                guard !stack.isEmpty else { return fail(parser) }
                stack[stack.count - 1].items.append(.key(open.text))
                return
            case "array":
                var items: [PropertyListValue] = []
                for item in open.items {
                    guard case .value(let v) = item else { return fail(parser) }
                    items.append(v)
                }
                value = .array(items)
            case "dict": value = Self.dictionary(open.items)
            case "string": value = .string(open.text)
            case "integer": value = Int64(trimmed).map { .integer($0) }
            case "real": value = Self.real(trimmed).map { .real($0) }
            case "true": value = trimmed.isEmpty ? .boolean(true) : nil
            case "false": value = trimmed.isEmpty ? .boolean(false) : nil
            case "date": value = Self.date(trimmed).map { .date($0) }
            case "data":
                let base64 = String(
                    open.text.unicodeScalars.filter { !CharacterSet.whitespacesAndNewlines.contains($0) })
                value = Data(base64Encoded: base64).map { .data($0) }
            default: value = nil
            }
            guard let value, !stack.isEmpty else { return fail(parser) }
            stack[stack.count - 1].items.append(.value(value))
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) { failed = true }

        func parser(_ parser: XMLParser, validationErrorOccurred validationError: Error) { failed = true }

        /// Keys and values alternating; a lone `CF$UID` key is a keyed archive's reference.
        private static func dictionary(_ items: [Item]) -> PropertyListValue? {
            guard items.count % 2 == 0 else { return nil }
            var entries: [(key: PropertyListValue, value: PropertyListValue)] = []
            var index = 0
            while index < items.count {
                guard case .key(let key) = items[index], case .value(let value) = items[index + 1] else { return nil }
                entries.append((.string(key), value))
                index += 2
            }
            if entries.count == 1, entries[0].key == .string("CF$UID"), case .integer(let uid) = entries[0].value,
                uid >= 0, uid <= UInt32.max
            {
                return .uid(Int(uid))
            }
            return .dictionary(entries)
        }

        static func real(_ text: String) -> Double? {
            switch text.lowercased() {
            case "nan": return .nan
            case "+infinity", "infinity", "+inf", "inf": return .infinity
            case "-infinity", "-inf": return -.infinity
            default: return Double(text).flatMap { $0.isFinite ? $0 : nil }
            }
        }

        /// `YYYY-MM-DDTHH:MM:SSZ` as seconds since 2001.
        static func date(_ text: String) -> Double? {
            let digits = Array(text.utf8)
            guard digits.count == 20, digits[4] == UInt8(ascii: "-"), digits[7] == UInt8(ascii: "-"),
                digits[10] == UInt8(ascii: "T"), digits[13] == UInt8(ascii: ":"), digits[16] == UInt8(ascii: ":"),
                digits[19] == UInt8(ascii: "Z")
            else { return nil }
            func number(_ range: Range<Int>) -> Int64? {
                var value: Int64 = 0
                for i in range {
                    guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digits[i]) else { return nil }
                    value = value * 10 + Int64(digits[i] - UInt8(ascii: "0"))
                }
                return value
            }
            guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
                let hour = number(11..<13),
                let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month),
                (1...31).contains(day),
                hour < 24, minute < 60, second < 60
            else { return nil }
            // Proleptic Gregorian, as the format's ISO 8601 means (Foundation's calendar turns Julian
            // before 1582).
            let days = Int64(ISO8601DateText.days(fromCivil: Int(year), Int(month), Int(day)))
            guard ISO8601DateText.civil(fromDays: Int(days)) == (Int(year), Int(month), Int(day)) else { return nil }
            return Double(days * 86_400 + hour * 3600 + minute * 60 + second - 978_307_200)
        }
    }
}
