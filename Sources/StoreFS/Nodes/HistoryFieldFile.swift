import Foundation
import FuseKit
import ObjectGraph

/// `.history/tN/author` and the other names of a transaction (``HistoryNode/fields``, by the
/// property bits), in the text form of attribute files.
struct HistoryFieldFile: HistoryKind {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { HistoryNode.transaction(node.key.rawValue) }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        let transaction = try mapping.historyTransaction(node.key.rawValue).transaction
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

    /// The field's text (one trailing newline); ENOENT where the transaction has no such name.
    static func content(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data {
        let transaction = try mapping.historyTransaction(node.key.rawValue).transaction
        let value: AttributeValue? =
            switch node.property {
            case 0: .date(transaction.timestamp)
            case 1: transaction.author.map(AttributeValue.string)
            case 2: transaction.bundleID.map(AttributeValue.string)
            case 3: transaction.processID.map(AttributeValue.string)
            case 4: transaction.contextName.map(AttributeValue.string)
            default: nil
            }
        guard let value else { throw .notFound }
        return ValueText.content(of: value, type: node.property == 0 ? .date : .string)
    }
}
