import Foundation
import ObjectGraph

/// SwiftData keeps a `Codable` collection (`[String]`, `Set<Tag>`, an array of structs) in a
/// Binary Data column as JSON text (`["Grapefruit","Anise"]`), and traps when it cannot decode
/// it. Such a value's file shows the JSON as it is stored (raw bytes, which are the text); a
/// new value written into it is kept in the same encoding: the one newline an editor or `echo`
/// adds is dropped, and text that is not JSON is refused (EINVAL) instead of being stored for the
/// app to trap on.
enum JSONInBinary {
    /// Whether `bytes` are a JSON array or object (what SwiftData writes for a collection).
    static func isJSON(_ bytes: Data) -> Bool {
        guard let first = bytes.first(where: { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }),
            first == UInt8(ascii: "[") || first == UInt8(ascii: "{"), bytes.count <= 64 << 20
        else { return false }
        return (try? JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed])) != nil
    }

    /// The value to store for `written` in an attribute whose saved value (as the store has it,
    /// before pending changes) is `stored`: nil when the rule does not apply (the saved value is
    /// not JSON, or nothing is written).
    static func value(_ written: Data, replacing stored: AttributeValue?) throws(ValueTextError) -> Data? {
        // Empty: what `>` truncates to before it writes (the value then comes at close).
        guard case .data(let old)? = stored, isJSON(old), !written.isEmpty else { return nil }
        var text = written
        if text.last == UInt8(ascii: "\n") { text.removeLast() }
        if text.last == UInt8(ascii: "\r") { text.removeLast() }
        guard isJSON(text) else {
            throw ValueTextError(
                "the value is JSON (a Codable collection SwiftData stores as JSON text), and what was written is not JSON"
            )
        }
        return text
    }
}
