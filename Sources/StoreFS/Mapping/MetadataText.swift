import Foundation
import ObjectGraph

/// Store metadata values as the bytes of extended attributes, and back.
enum MetadataText {

    static func data(of value: MetadataValue) -> Data {
        switch value {
        case .string(let s): return Data(s.utf8)
        case .integer(let i): return Data(String(i).utf8)
        case .real(let d): return Data(d.description.utf8)
        case .boolean(let b): return Data((b ? "true" : "false").utf8)
        case .date(let d): return Data(ValueText.format(d).utf8)
        case .data(let d): return d
        case .array, .dictionary:
            let json = try? JSONSerialization.data(withJSONObject: jsonObject(value), options: [.sortedKeys])
            return json ?? Data()
        }
    }

    private static func jsonObject(_ value: MetadataValue) -> Any {
        switch value {
        case .string(let s): s
        case .integer(let i): i
        case .real(let d): d
        case .boolean(let b): b
        case .date(let d): ValueText.format(d)
        case .data(let d): d.base64EncodedString()
        case .array(let a): a.map(jsonObject)
        case .dictionary(let d): d.mapValues(jsonObject)
        }
    }

    /// The metadata value for bytes a user set: the existing key's type where the text parses as
    /// it, else a string (or data, when the bytes are not UTF-8).
    static func value(from bytes: Data, like current: MetadataValue?) -> MetadataValue {
        guard let text = String(data: bytes, encoding: .utf8) else { return .data(bytes) }
        switch current {
        case .integer?: if let i = Int64(text) { return .integer(i) }
        case .real?: if let d = Double(text) { return .real(d) }
        case .boolean?:
            if text == "true" || text == "false" { return .boolean(text == "true") }
        case .date?: if let d = ValueText.parseDate(text) { return .date(d) }
        case .data?: return .data(bytes)
        default: break
        }
        return .string(text)
    }
}
