import Foundation
import FuseKit
import ObjectGraph

/// `.history/tN/deleted/Entity-pK/ATTR`: a tombstone's value (the attribute's index in the
/// property bits), in the text form of attribute files.
struct HistoryValueFile: HistoryTextFile {
    func parent(of node: Node, in mapping: Mapping) -> Node { HistoryNode.tombstone(node.key.rawValue) }

    func timestamp(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Date {
        try change(node, mapping).transaction.timestamp
    }

    func text(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data {
        let (_, change) = try change(node, mapping)
        guard change.kind == .delete else { throw .notFound }
        let attributes = mapping.model[change.objectID.entity].allAttributes
        guard node.property < attributes.count,
            case .some(.some(let value)) = change.tombstone[attributes[node.property].name]
        else { throw .notFound }
        return ValueText.content(of: value, type: attributes[node.property].type)
    }
}
