import Foundation
import FuseKit
import ObjectGraph

/// `.history/tN/deleted/Entity-pK/`: the values a delete's tombstone keeps (the attributes the
/// model preserves after deletion), one file per value (``HistoryValueFile``).
struct HistoryTombstoneFolder: HistoryKind {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node {
        (try? mapping.historyChange(node.key.rawValue)).map {
            HistoryNode.changes($0.transaction.number, $0.change.kind)
        }
            ?? HistoryNode.folder
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] { [HistoryNode.folderName] }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        let (transaction, change) = try change(node, mapping)
        guard change.kind == .delete else { throw .notFound }
        return mapping.make(node, .directory, permissions: 0o555, time: transaction.timestamp)
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let (_, change) = try change(node, mapping)
        let attributes = mapping.model[change.objectID.entity].allAttributes
        guard change.kind == .delete, let index = attributes.firstIndex(where: { $0.name == name }),
            index < Node.maximumHistoryAttributes, case .some(.some) = change.tombstone[name]
        else { throw .notFound }
        return HistoryNode.value(change.changeID, index)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let (_, change) = try change(node, mapping)
        let attributes = mapping.model[change.objectID.entity].allAttributes
        return .names(
            attributes.enumerated().filter { index, attribute in
                guard index < Node.maximumHistoryAttributes, case .some(.some) = change.tombstone[attribute.name] else {
                    return false
                }
                return true
            }.map { ($0.element.name, HistoryNode.value(change.changeID, $0.offset)) })
    }
}
