import Foundation
import ObjectGraph

/// Writes ``ObjectDifference``s as `storefs diff` prints them: as text for people, or as JSON
/// Lines for programs.
///
/// Text: one line per object, `- Employee/p12` (only in the first store), `+ Employee/p3001`
/// (only in the second), `~ Employee/p14` (in both, changed), and under a changed object one
/// indented line per property: `lastName: "Turing" -> "Hopper"` (strings and URIs JSON-quoted,
/// other values in their text forms, Binary Data as `<N bytes>`, nil as `nil`), `department:
/// Department/p1 -> nil`, `projects: -Project/p7 +Project/p9`, and for an ordered relationship
/// whose order changed `directReports: order Employee/p3 Employee/p1 -> Employee/p1 Employee/p3`.
///
/// JSON Lines: `{"change":"deleted","object":"Employee/p12"}`, `{"change":"inserted",...}`, and
/// `{"change":"updated","object":"Employee/p14","properties":{...}}` where an attribute is
/// `{"old":TEXT,"new":TEXT}` (text forms as records hold them, base64 for binary, null for nil), a
/// to-one `{"old":"Department/p1","new":null}`, a to-many `{"removed":[...],"added":[...]}` with
/// `"old"` and `"new"` lists for an ordered one.
///
/// Threading: stateless; call from any thread.
public enum DifferenceRecords {
    /// Appends `difference` as text lines to `out`.
    public static func appendText(_ difference: ObjectDifference, to out: inout [UInt8]) {
        let mark =
            switch difference.kind {
            case .deleted: "- "
            case .inserted: "+ "
            case .updated: "~ "
            }
        out.append(contentsOf: Array((mark + difference.object.description + "\n").utf8))
        for property in difference.properties {
            var line = "    \(property.name): "
            switch property {
            case .attribute(_, let type, let old, let new):
                line += text(old, type) + " -> " + text(new, type)
            case .toOne(_, let old, let new):
                line += (old?.description ?? "nil") + " -> " + (new?.description ?? "nil")
            case .toMany(_, let removed, let added, let old, let new):
                var parts = removed.map { "-\($0)" } + added.map { "+\($0)" }
                if removed.isEmpty && added.isEmpty {
                    parts = [
                        "order " + old.map(\.description).joined(separator: " ") + " -> "
                            + new.map(\.description).joined(separator: " ")
                    ]
                }
                line += parts.joined(separator: " ")
            }
            out.append(contentsOf: Array((line + "\n").utf8))
        }
    }

    /// Appends `difference` as one JSON line to `out`.
    public static func appendJSON(_ difference: ObjectDifference, to out: inout [UInt8]) {
        out.append(contentsOf: Array(#"{"change":"#.utf8))
        ObjectRecords.appendJSONString(difference.kind.rawValue.utf8, to: &out)
        out.append(contentsOf: Array(#","object":"#.utf8))
        ObjectRecords.appendJSONString(difference.object.description.utf8, to: &out)
        if difference.kind == .updated {
            out.append(contentsOf: Array(#","properties":{"#.utf8))
            for (index, property) in difference.properties.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                ObjectRecords.appendJSONString(property.name.utf8, to: &out)
                out.append(UInt8(ascii: ":"))
                switch property {
                case .attribute(_, let type, let old, let new):
                    out.append(contentsOf: Array(#"{"old":"#.utf8))
                    appendJSON(old, type, to: &out)
                    out.append(contentsOf: Array(#","new":"#.utf8))
                    appendJSON(new, type, to: &out)
                    out.append(UInt8(ascii: "}"))
                case .toOne(_, let old, let new):
                    out.append(contentsOf: Array(#"{"old":"#.utf8))
                    appendJSON(old, to: &out)
                    out.append(contentsOf: Array(#","new":"#.utf8))
                    appendJSON(new, to: &out)
                    out.append(UInt8(ascii: "}"))
                case .toMany(_, let removed, let added, let old, let new):
                    out.append(contentsOf: Array(#"{"removed":"#.utf8))
                    appendJSON(removed, to: &out)
                    out.append(contentsOf: Array(#","added":"#.utf8))
                    appendJSON(added, to: &out)
                    if !old.isEmpty || !new.isEmpty {
                        out.append(contentsOf: Array(#","old":"#.utf8))
                        appendJSON(old, to: &out)
                        out.append(contentsOf: Array(#","new":"#.utf8))
                        appendJSON(new, to: &out)
                    }
                    out.append(UInt8(ascii: "}"))
                }
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: Array("}\n".utf8))
    }

    // MARK: - Values

    private static func text(_ value: AttributeValue?, _ type: AttributeType) -> String {
        guard let value else { return "nil" }
        if case .data(let bytes) = value, !ValueText.isText(type) { return "<\(bytes.count) bytes>" }
        let text = ObjectRecords.text(of: value, type: type)
        guard type == .string || type == .uri else { return text }
        var quoted: [UInt8] = []
        ObjectRecords.appendJSONString(text.utf8, to: &quoted)
        return String(decoding: quoted, as: UTF8.self)
    }

    private static func appendJSON(_ value: AttributeValue?, _ type: AttributeType, to out: inout [UInt8]) {
        guard let value else {
            out.append(contentsOf: Array("null".utf8))
            return
        }
        ObjectRecords.appendJSONString(ObjectRecords.text(of: value, type: type).utf8, to: &out)
    }

    private static func appendJSON(_ reference: ObjectReference?, to out: inout [UInt8]) {
        guard let reference else {
            out.append(contentsOf: Array("null".utf8))
            return
        }
        ObjectRecords.appendJSONString(reference.description.utf8, to: &out)
    }

    private static func appendJSON(_ references: [ObjectReference], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (index, reference) in references.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendJSON(reference, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }
}
