import Foundation
import FuseKit
import ObjectGraph

/// `.history/tN/inserted`, `updated` or `deleted` (the change type in the property bits): an
/// entry `Entity-pK` per object the transaction changed that way (keys are unique only within
/// an entity's hierarchy). Inserts and updates are links (``HistoryChangeLink``), deletes
/// tombstone folders (``HistoryTombstoneFolder``).
struct HistoryChangeFolder: HistoryKind {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { HistoryNode.transaction(node.key.rawValue) }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        guard node.property < HistoryNode.changeFolders.count else { return [HistoryNode.folderName] }
        return [
            HistoryNode.folderName, HistoryNode.name(of: node.key.rawValue), HistoryNode.changeFolders[node.property]
        ]
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard node.property < HistoryNode.changeFolders.count else { throw .notFound }
        return mapping.make(
            node, .directory, permissions: 0o555, time: try mapping.historyTimestamp(node.key.rawValue))
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        guard let object = HistoryNode.object(named: name, mapping.model),
            let kind = HistoryChange.Kind(rawValue: Int64(node.property))
        else { throw .notFound }
        let entry = try mapping.historyTransaction(node.key.rawValue)
        guard
            let change = entry.byObject[object]?.lazy.map({ entry.transaction.changes[$0] })
                .first(where: { $0.kind == kind && HistoryNode.isShown($0, mapping) })
        else { throw .notFound }
        return HistoryNode.node(of: change)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let entry = try mapping.historyTransaction(node.key.rawValue)
        var seen: Set<String> = []
        var names: [(String, Node)] = []
        for change in entry.transaction.changes
        where change.kind.rawValue == node.property && HistoryNode.isShown(change, mapping) {
            let name = HistoryNode.name(of: change.objectID, mapping.model)
            guard seen.insert(name).inserted else { continue }
            names.append((name, HistoryNode.node(of: change)))
        }
        return .names(names)
    }

    // MARK: - What an update changed, for the kernel

    /// Whether the folder is `updated`, whose links have names of properties to tell.
    private func isUpdated(_ node: Node) -> Bool { node.property == Int(HistoryChange.Kind.update.rawValue) }

    /// The kernel answers no `user.` xattr of a symlink (ENODATA, whatever the filesystem says),
    /// so `updated/` says for each of its links what the link says to FUSE clients
    /// (``HistoryChangeLink``): `user.history.changed.Entity-pK`.
    func extendedAttribute(_ name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Data {
        let prefix = HistoryChangeLink.changedName + "."
        guard isUpdated(node), name.hasPrefix(prefix) else {
            guard let value = try extendedAttributes(of: node, in: mapping)[name] else { throw .noAttribute }
            return value
        }
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        guard let link = try? child(named: String(name.dropFirst(prefix.count)), of: node, in: mapping),
            let value = try HistoryChangeLink().extendedAttributes(of: link, in: mapping)[HistoryChangeLink.changedName]
        else { throw .noAttribute }
        return value
    }

    /// Most names `listxattr` can return (the kernel's XATTR_LIST_MAX is 64 KiB): a larger
    /// `updated/` lists none of its per-link names, which stay readable by name.
    static let listedNamesLimit = 60_000

    func extendedAttributeNames(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String] {
        let own = try extendedAttributes(of: node, in: mapping).keys.sorted()
        guard isUpdated(node), case .names(let links) = try listing(of: node, in: mapping, known: nil) else {
            return own
        }
        let names = links.map { HistoryChangeLink.changedName + "." + $0.0 }
        return names.reduce(0) { $0 + $1.utf8.count + 1 } <= Self.listedNamesLimit ? own + names : own
    }
}
