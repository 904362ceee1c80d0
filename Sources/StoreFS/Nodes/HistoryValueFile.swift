import Foundation
import FuseKit
import ObjectGraph

/// `.history/tN/deleted/Entity-pK/ATTR`: a tombstone's value (the attribute's index in the
/// property bits), in the text form of attribute files.
struct HistoryValueFile: HistoryKind {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { HistoryNode.tombstone(node.key.rawValue) }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        let (transaction, _) = try change(node, mapping)
        let content = try Self.content(of: node, mapping)
        return mapping.make(node, .regularFile, permissions: 0o444, size: content.count, time: transaction.timestamp)
    }

    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult {
        if flags.isWriting { throw mapping.configuration.readOnly ? .readOnly : .notPermitted }
        return try mapping.openFile(node, flags: flags)
    }

    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data {
        try Self.content(of: node, mapping)
    }

    /// The value's text (one trailing newline); ENOENT where the tombstone has no such value.
    static func content(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data {
        let (_, change) = try mapping.historyChange(node.key.rawValue)
        guard change.kind == .delete, HistoryNode.isShown(change, mapping) else { throw .notFound }
        let attributes = mapping.model[change.objectID.entity].allAttributes
        guard node.property < attributes.count,
            case .some(.some(let value)) = change.tombstone[attributes[node.property].name]
        else { throw .notFound }
        return ValueText.content(of: value, type: attributes[node.property].type)
    }
}
