import Foundation
import ObjectGraph

/// How a store's persistent history reads as text and as JSON (`storefs history`,
/// docs/SEMANTICS.md "Persistent history"): values in the text forms their files show, objects
/// by the paths their folders have in a mount (`ICFolder/p5`).
///
/// Text, one transaction a block:
///
///     t52 2026-11-25T10:00:00.5Z author="storefs" bundleID="storefs" processID="storefs"
///       inserted ICFolder/p12
///       updated ICFolder/p5 title dateForLastTitleModification
///       deleted ICNote/p16 title="Groceries" size=12 data=<3 bytes>
///
/// Header fields the transaction does not have are left out, strings are quoted as JSON quotes
/// them (so a name with spaces or line breaks stays on its line), and a deleted object's
/// tombstone values follow it by name (`nil` where it preserved none, binary values by size).
/// JSON: one object per transaction on one line, keys sorted; values as JSON strings of their
/// text forms (binary values in base64), nil as null; each change with its object's URI.
///
/// Stateless; safe from any thread.
public enum HistoryText {
    /// The text block of `transaction`, ending in a newline.
    public static func text(of transaction: HistoryTransaction, model: ManagedObjectModel) -> String {
        var out = Output()
        out.raw("t\(transaction.number) ")
        out.raw(ValueText.format(transaction.timestamp))
        for (name, value) in fields(of: transaction) {
            guard let value else { continue }
            out.raw(" \(name)=")
            out.quoted(value)
        }
        out.raw("\n")
        for change in transaction.changes {
            out.raw("  \(folder(of: change.kind)) ")
            out.raw(path(of: change.objectID, model: model))
            switch change.kind {
            case .insert: break
            case .update:
                for name in change.changedProperties { out.raw(" " + name) }
            case .delete:
                for (name, value) in change.tombstone.sorted(by: { $0.key < $1.key }) {
                    out.raw(" \(name)=")
                    switch value {
                    case nil: out.raw("nil")
                    case .data(let bytes)?: out.raw("<\(bytes.count) bytes>")
                    case .string(let s)?: out.quoted(s)
                    case let value?: out.raw(ValueText.text(of: value))
                    }
                }
            }
            out.raw("\n")
        }
        return out.string
    }

    /// The JSON object of `transaction` on one line, ending in a newline. `storeUUID` makes the
    /// changes' object URIs (`x-coredata://UUID/Entity/pN`); without it they have none.
    public static func jsonLine(of transaction: HistoryTransaction, model: ManagedObjectModel, storeUUID: String?)
        -> String
    {
        // Keys are written in sorted order.
        var out = Output()
        func field(_ key: String, _ value: String?, first: Bool = false) {
            out.raw(first ? "{\"\(key)\":" : ",\"\(key)\":")
            if let value { out.quoted(value) } else { out.raw("null") }
        }
        field("author", transaction.author, first: true)
        field("bundleID", transaction.bundleID)
        out.raw(",\"changes\":[")
        for (i, change) in transaction.changes.enumerated() {
            out.raw(i == 0 ? "{\"change\":\(change.changeID)" : ",{\"change\":\(change.changeID)")
            if change.kind == .update {
                out.raw(",\"changed\":[")
                for (j, name) in change.changedProperties.enumerated() {
                    if j > 0 { out.raw(",") }
                    out.quoted(name)
                }
                out.raw("]")
            }
            let path = path(of: change.objectID, model: model)
            field("object", path)
            if change.kind == .delete {
                out.raw(",\"tombstone\":{")
                for (j, (name, value)) in change.tombstone.sorted(by: { $0.key < $1.key }).enumerated() {
                    if j > 0 { out.raw(",") }
                    out.quoted(name)
                    out.raw(":")
                    switch value {
                    case nil: out.raw("null")
                    case .data(let bytes)?: out.quoted(bytes.base64EncodedString())
                    case let value?: out.quoted(ValueText.text(of: value))
                    }
                }
                out.raw("}")
            }
            field("type", folder(of: change.kind))
            if let storeUUID { field("uri", "x-coredata://\(storeUUID)/\(path)") }
            out.raw("}")
        }
        out.raw("]")
        field("contextName", transaction.contextName)
        field("processID", transaction.processID)
        field("timestamp", ValueText.format(transaction.timestamp))
        out.raw(",\"transaction\":\(transaction.number)}\n")
        return out.string
    }

    /// The folder a change's object is listed in: `inserted`, `updated` or `deleted`.
    public static func folder(of kind: HistoryChange.Kind) -> String {
        switch kind {
        case .insert: "inserted"
        case .update: "updated"
        case .delete: "deleted"
        }
    }

    /// `Entity/pN`, where the object's folder is in a mount (and the tail of its URI).
    static func path(of id: ObjectID, model: ManagedObjectModel) -> String {
        let entity =
            id.entity.rawValue >= 1 && id.entity.rawValue <= model.entities.count
            ? model[id.entity].name : "\(id.entity)"
        return "\(entity)/\(id.key)"
    }

    /// The transaction's header fields by their names in `NSPersistentHistoryTransaction`.
    private static func fields(of transaction: HistoryTransaction) -> [(String, String?)] {
        [
            ("author", transaction.author), ("bundleID", transaction.bundleID), ("processID", transaction.processID),
            ("contextName", transaction.contextName)
        ]
    }

    /// Text built as UTF-8 bytes: appending bytes, not characters, keeps a listing of thousands
    /// of transactions cheap (JSON quoting character by character took most of its time).
    private struct Output {
        var bytes: [UInt8] = []

        var string: String { String(decoding: bytes, as: UTF8.self) }

        mutating func raw(_ text: String) { bytes.append(contentsOf: text.utf8) }

        /// `text` as a JSON string: quotes and backslashes escaped, control characters as `\n`,
        /// `\r`, `\t` or `\u00XX`, everything else as it is.
        mutating func quoted(_ text: String) {
            bytes.append(UInt8(ascii: "\""))
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
                case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
                default: bytes.append(byte)
                }
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }
}
