import Foundation
import FuseKit
import ObjectGraph

/// `.history/tN`: one transaction, read by its key. Its names as files (`timestamp`, `author`,
/// `bundleID`, `processID`, `contextName`; a name it does not have has no file, as a nil
/// attribute has none) and its changes in the folders `inserted`, `updated` and `deleted`.
struct HistoryTransactionFolder: HistoryKind {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { HistoryNode.folder }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        [HistoryNode.folderName, HistoryNode.name(of: node.key.rawValue)]
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(node, .directory, permissions: 0o555, time: try mapping.historyTimestamp(node.key.rawValue))
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let number = node.key.rawValue
        if let kind = HistoryNode.changeFolders.firstIndex(of: name).flatMap({ HistoryChange.Kind(rawValue: Int64($0)) }
        ) {
            _ = try mapping.historyTimestamp(number)
            return HistoryNode.changes(number, kind)
        }
        guard let index = HistoryNode.fields.firstIndex(of: name) else { throw .notFound }
        let field = HistoryNode.field(number, index)
        _ = try HistoryFieldFile().text(of: field, mapping)
        return field
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let number = node.key.rawValue
        var names: [(String, Node)] = []
        for (index, name) in HistoryNode.fields.enumerated() {
            let field = HistoryNode.field(number, index)
            if (try? HistoryFieldFile().text(of: field, mapping)) != nil { names.append((name, field)) }
        }
        for (raw, name) in HistoryNode.changeFolders.enumerated() {
            if let kind = HistoryChange.Kind(rawValue: Int64(raw)) {
                names.append((name, HistoryNode.changes(number, kind)))
            }
        }
        return .names(names)
    }
}
