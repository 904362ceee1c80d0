import Foundation
import ObjectGraph

/// A readable rendering of an archived value: a binary or transformable attribute whose bytes are
/// an `NSKeyedArchiver` archive or a binary property list shows, beside its raw file `ATTR`, a
/// read-only `ATTR.json` (docs/SEMANTICS.md, "Archived values").
///
/// Both are read with the bounded readers the model loader uses (``BinaryPropertyList``), and the
/// archive's object graph is walked here with its own bounds: a value of more than
/// ``maximumInput`` bytes is not rendered, nesting deeper than ``maximumDepth`` or a rendering of
/// more than ``maximumNodes`` values (shared references expand) gives no rendering at all, and an
/// object met again on its own path renders as `{"$ref": N}`. Bytes that are not such a property
/// list have none. XML property lists are text already and are not rendered.
///
/// The JSON: an archived object is `{"$class": NAME, key: value, ...}`; arrays and ordered sets
/// are arrays, sets `{"$set": [...]}`, dictionaries with string keys objects (other keys
/// `{"$entries": [[k, v], ...]}`), strings strings, numbers and booleans as such, data
/// `{"$data": BASE64}`, dates `{"$date": ISO 8601}`, UUIDs `{"$uuid": ...}`, URLs `{"$url": ...}`,
/// `$null` null, a plain plist's UIDs `{"$uid": N}`, NaN and infinities `{"$double": "nan"}`. The
/// archive's root object alone when `$top` holds only `root`, else the `$top` keys. Keys are
/// sorted, indented by two spaces, with one trailing newline.
///
/// Stateless; safe from any thread.
enum ArchivedValueRendering {
    /// The name suffix of renderings (a Core Data property name cannot hold a dot).
    static let suffix = ".json"
    static let maximumInput = 16 << 20
    static let maximumDepth = 64
    static let maximumNodes = 1_000_000

    /// The JSON rendering of `bytes`; nil when they are not a binary property list, or one
    /// beyond the bounds.
    static func json(of bytes: Data) -> Data? {
        guard bytes.count <= maximumInput, BinaryPropertyList.looksLikeBinaryPropertyList(bytes),
            let root = try? BinaryPropertyList.parse(bytes, source: "value")
        else { return nil }
        var walk = Walk()
        let value: JSON?
        if root["$archiver"]?.string == "NSKeyedArchiver", case .array(let objects)? = root["$objects"],
            case .dictionary(let top)? = root["$top"]
        {
            walk.objects = objects
            var entries: [(String, JSON)] = []
            for entry in top {
                guard let key = entry.key.string, let rendered = walk.value(entry.value, path: [], depth: 0) else {
                    return nil
                }
                entries.append((key, rendered))
            }
            value = entries.count == 1 && entries[0].0 == "root" ? entries[0].1 : .object(entries)
        } else {
            value = walk.plain(root, depth: 0)
        }
        guard let value else { return nil }
        var text = ""
        value.write(to: &text, indent: 0)
        text += "\n"
        return Data(text.utf8)
    }

    /// A JSON value, built before it is written so that a walk that goes past a bound writes
    /// nothing.
    indirect enum JSON {
        case null
        case bool(Bool)
        case integer(Int64)
        case double(Double)
        case string(String)
        case array([JSON])
        case object([(String, JSON)])

        func write(to text: inout String, indent: Int) {
            switch self {
            case .null: text += "null"
            case .bool(let b): text += b ? "true" : "false"
            case .integer(let i): text += String(i)
            case .double(let d): text += d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)"
            case .string(let s): Self.quote(s, into: &text)
            case .array(let items):
                guard !items.isEmpty else {
                    text += "[]"
                    return
                }
                text += "[\n"
                for (i, item) in items.enumerated() {
                    text += String(repeating: " ", count: indent + 2)
                    item.write(to: &text, indent: indent + 2)
                    text += i == items.count - 1 ? "\n" : ",\n"
                }
                text += String(repeating: " ", count: indent) + "]"
            case .object(let entries):
                guard !entries.isEmpty else {
                    text += "{}"
                    return
                }
                text += "{\n"
                let sorted = entries.sorted { $0.0.unicodeScalars.lexicographicallyPrecedes($1.0.unicodeScalars) }
                for (i, (key, value)) in sorted.enumerated() {
                    text += String(repeating: " ", count: indent + 2)
                    Self.quote(key, into: &text)
                    text += ": "
                    value.write(to: &text, indent: indent + 2)
                    text += i == sorted.count - 1 ? "\n" : ",\n"
                }
                text += String(repeating: " ", count: indent) + "}"
            }
        }

        static func quote(_ s: String, into text: inout String) {
            text += "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case _ where scalar.value < 0x20:
                    text +=
                        "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                        + String(scalar.value, radix: 16)
                default: text.unicodeScalars.append(scalar)
                }
            }
            text += "\""
        }
    }

    /// One rendering's walk: the archive's objects and the budget left.
    private struct Walk {
        var objects: [PropertyListValue] = []
        var nodes = 0

        /// Counts one value; false once the budget is spent.
        mutating func spend() -> Bool {
            nodes += 1
            return nodes <= ArchivedValueRendering.maximumNodes
        }

        /// A value of an archive: a reference is followed, anything else is plain.
        mutating func value(_ value: PropertyListValue, path: Set<Int>, depth: Int) -> JSON? {
            if case .uid(let uid) = value { return object(uid, path: path, depth: depth + 1) }
            return plain(value, depth: depth)
        }

        mutating func object(_ uid: Int, path: Set<Int>, depth: Int) -> JSON? {
            guard depth <= ArchivedValueRendering.maximumDepth, spend(), uid >= 0, uid < objects.count else {
                return nil
            }
            let raw = objects[uid]
            if case .string("$null") = raw { return .null }
            guard case .uid(let classUID)? = raw["$class"] else { return plain(raw, depth: depth) }
            if path.contains(uid) { return .object([("$ref", .integer(Int64(uid)))]) }
            guard classUID >= 0, classUID < objects.count, let name = objects[classUID]["$classname"]?.string else {
                return nil
            }
            let path = path.union([uid])
            func list(_ key: String) -> [JSON]? {
                guard case .array(let items)? = raw[key] else { return [] }
                var result: [JSON] = []
                for item in items {
                    guard let rendered = value(item, path: path, depth: depth) else { return nil }
                    result.append(rendered)
                }
                return result
            }
            switch name {
            case "NSArray", "NSMutableArray", "NSOrderedSet", "NSMutableOrderedSet":
                return list("NS.objects").map(JSON.array)
            case "NSSet", "NSMutableSet":
                return list("NS.objects").map { .object([("$set", .array($0))]) }
            case "NSDictionary", "NSMutableDictionary":
                guard let keys = list("NS.keys"), let values = list("NS.objects"), keys.count == values.count else {
                    return nil
                }
                var strings: [(String, JSON)] = []
                for (key, value) in zip(keys, values) {
                    guard case .string(let k) = key else {
                        return .object([("$entries", .array(zip(keys, values).map { .array([$0, $1]) }))])
                    }
                    strings.append((k, value))
                }
                return .object(strings)
            case "NSString", "NSMutableString":
                if let s = raw["NS.string"]?.string { return .string(s) }
                if case .data(let bytes)? = raw["NS.bytes"] { return .string(String(decoding: bytes, as: UTF8.self)) }
                return nil
            case "NSData", "NSMutableData":
                guard case .data(let bytes)? = raw["NS.data"] else { return .object([("$data", .string(""))]) }
                return .object([("$data", .string(bytes.base64EncodedString()))])
            case "NSDate":
                guard let time = Self.seconds(raw["NS.time"]) else { return nil }
                return .object([("$date", .string(ValueText.format(Date(timeIntervalSinceReferenceDate: time))))])
            case "NSUUID":
                guard case .data(let bytes)? = raw["NS.uuidbytes"], bytes.count == 16 else { return nil }
                let hex = bytes.map { String(format: "%02x", $0) }.joined()
                let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { r in
                    String(
                        hex[
                            hex.index(
                                hex.startIndex, offsetBy: r.lowerBound)..<hex.index(
                                    hex.startIndex, offsetBy: r.upperBound)])
                }
                return .object([("$uuid", .string(parts.joined(separator: "-")))])
            case "NSURL":
                let relative = raw["NS.relative"].flatMap { value($0, path: path, depth: depth) } ?? .null
                let base = raw["NS.base"].flatMap { value($0, path: path, depth: depth) } ?? .null
                if case .null = base { return .object([("$url", relative)]) }
                return .object([("$url", .object([("base", base), ("relative", relative)]))])
            default:
                guard case .dictionary(let entries) = raw else { return nil }
                var result: [(String, JSON)] = [("$class", .string(name))]
                for entry in entries {
                    guard let key = entry.key.string else { return nil }
                    if key == "$class" { continue }
                    guard let rendered = value(entry.value, path: path, depth: depth) else { return nil }
                    result.append((key, rendered))
                }
                return .object(result)
            }
        }

        /// A property list value that is not an archive's reference.
        mutating func plain(_ value: PropertyListValue, depth: Int) -> JSON? {
            guard depth <= ArchivedValueRendering.maximumDepth, spend() else { return nil }
            switch value {
            case .null: return .null
            case .boolean(let b): return .bool(b)
            case .integer(let i): return .integer(i)
            case .real(let d):
                return d.isFinite
                    ? .double(d) : .object([("$double", .string(d.isNaN ? "nan" : d > 0 ? "inf" : "-inf"))])
            case .date(let d):
                guard d.isFinite else { return .object([("$double", .string("\(d)"))]) }
                return .object([("$date", .string(ValueText.format(Date(timeIntervalSinceReferenceDate: d))))])
            case .data(let bytes): return .object([("$data", .string(bytes.base64EncodedString()))])
            case .string(let s): return .string(s)
            case .uid(let u): return .object([("$uid", .integer(Int64(u)))])
            case .array(let items):
                var result: [JSON] = []
                for item in items {
                    guard let rendered = plain(item, depth: depth + 1) else { return nil }
                    result.append(rendered)
                }
                return .array(result)
            case .dictionary(let entries):
                var strings: [(String, JSON)] = []
                var pairs: [JSON] = []
                var allStrings = true
                for entry in entries {
                    guard let key = plain(entry.key, depth: depth + 1),
                        let rendered = plain(entry.value, depth: depth + 1)
                    else {
                        return nil
                    }
                    if case .string(let k) = key { strings.append((k, rendered)) } else { allStrings = false }
                    pairs.append(.array([key, rendered]))
                }
                return allStrings ? .object(strings) : .object([("$entries", .array(pairs))])
            }
        }

        static func seconds(_ value: PropertyListValue?) -> Double? {
            switch value {
            case .real(let d)?: d.isFinite ? d : nil
            case .integer(let i)?: Double(i)
            case .date(let d)?: d.isFinite ? d : nil
            default: nil
            }
        }
    }
}
