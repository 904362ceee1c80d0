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
        var text = "t\(transaction.number) \(ValueText.format(transaction.timestamp))"
        for (name, value) in fields(of: transaction) {
            if let value { text += " \(name)=" + quoted(value) }
        }
        text += "\n"
        for change in transaction.changes {
            text += "  \(folder(of: change.kind)) \(path(of: change.objectID, model: model))"
            switch change.kind {
            case .insert: break
            case .update: text += change.changedProperties.map { " " + $0 }.joined()
            case .delete:
                for (name, value) in change.tombstone.sorted(by: { $0.key < $1.key }) {
                    text += " \(name)="
                    switch value {
                    case nil: text += "nil"
                    case .data(let bytes)?: text += "<\(bytes.count) bytes>"
                    case .string(let s)?: text += quoted(s)
                    case let value?: text += ValueText.text(of: value)
                    }
                }
            }
            text += "\n"
        }
        return text
    }

    /// The JSON object of `transaction` on one line, ending in a newline. `storeUUID` makes the
    /// changes' object URIs (`x-coredata://UUID/Entity/pN`); without it they have none.
    public static func jsonLine(of transaction: HistoryTransaction, model: ManagedObjectModel, storeUUID: String?) -> String {
        var entries: [(String, String)] = [
            ("transaction", String(transaction.number)), ("timestamp", quoted(ValueText.format(transaction.timestamp))),
        ]
        for (name, value) in fields(of: transaction) { entries.append((name, value.map(quoted) ?? "null")) }
        var changes: [String] = []
        for change in transaction.changes {
            let entity = change.objectID.entity
            let entityName = entity.rawValue >= 1 && entity.rawValue <= model.entities.count ? model[entity].name : "\(entity)"
            var fields: [(String, String)] = [
                ("change", String(change.changeID)), ("type", quoted(folder(of: change.kind))),
                ("object", quoted(path(of: change.objectID, model: model))),
            ]
            if let storeUUID {
                fields.append(("uri", quoted(ObjectURI(storeUUID: storeUUID, entityName: entityName, key: change.objectID.key).description)))
            }
            if change.kind == .update {
                fields.append(("changed", "[" + change.changedProperties.map(quoted).joined(separator: ",") + "]"))
            }
            if change.kind == .delete {
                let values = change.tombstone.map { name, value -> (String, String) in
                    switch value {
                    case nil: (name, "null")
                    case .data(let bytes)?: (name, quoted(bytes.base64EncodedString()))
                    case let value?: (name, quoted(ValueText.text(of: value)))
                    }
                }
                fields.append(("tombstone", object(values)))
            }
            changes.append(object(fields))
        }
        entries.append(("changes", "[" + changes.joined(separator: ",") + "]"))
        return object(entries) + "\n"
    }

    /// The folder a change's object is listed in: `inserted`, `updated` or `deleted`.
    public static func folder(of kind: HistoryChange.Kind) -> String {
        switch kind {
        case .insert: "inserted"
        case .update: "updated"
        case .delete: "deleted"
        }
    }

    /// `Entity/pN`, where the object's folder is in a mount.
    static func path(of id: ObjectID, model: ManagedObjectModel) -> String {
        let entity = id.entity.rawValue >= 1 && id.entity.rawValue <= model.entities.count ? model[id.entity].name : "\(id.entity)"
        return "\(entity)/\(id.key)"
    }

    /// The transaction's header fields by their names in `NSPersistentHistoryTransaction`.
    private static func fields(of transaction: HistoryTransaction) -> [(String, String?)] {
        [
            ("author", transaction.author), ("bundleID", transaction.bundleID), ("processID", transaction.processID),
            ("contextName", transaction.contextName),
        ]
    }

    private static func quoted(_ s: String) -> String {
        var text = ""
        ArchivedValueRendering.JSON.quote(s, into: &text)
        return text
    }

    /// `{"key": value, ...}` on one line, keys sorted (values are JSON already).
    private static func object(_ entries: [(String, String)]) -> String {
        "{" + entries.sorted { $0.0 < $1.0 }.map { quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
