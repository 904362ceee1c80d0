import Foundation
import FuseKit
import ObjectGraph

/// `.history/tN/author` and the other names of a transaction (``HistoryNode/fields``, by the
/// property bits), in the text form of attribute files.
struct HistoryFieldFile: HistoryTextFile {
    func parent(of node: Node, in mapping: Mapping) -> Node { HistoryNode.transaction(node.key.rawValue) }

    func timestamp(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Date {
        try mapping.historyTransaction(node.key.rawValue).transaction.timestamp
    }

    func text(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data {
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
