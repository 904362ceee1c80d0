import Foundation
import FuseKit
import ObjectGraph

/// `.history/tN/updated/Entity-pK -> ../../../Entity/pK`: an insert or update, by the change's
/// number (`ACHANGE.Z_PK`) in the key bits. It carries its change, not its object (unlike a
/// to-many's member links, whose inode is the object's), because what it says
/// (`user.history.changed`) is the change's.
struct HistoryChangeLink: HistoryKind {
    var isDirectory: Bool { false }

    /// An update's properties, space-separated, in the order `storefs history` prints them.
    static let changedName = "user.history.changed"

    func parent(of node: Node, in mapping: Mapping) -> Node {
        (try? mapping.historyChange(node.key.rawValue)).map {
            HistoryNode.changes($0.transaction.number, $0.change.kind)
        }
            ?? HistoryNode.folder
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        let (transaction, change) = try change(node, mapping)
        guard change.kind != .delete else { throw .notFound }
        return mapping.make(
            node, .symbolicLink, size: try Self.target(of: change, mapping).utf8.count, time: transaction.timestamp)
    }

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        let (_, change) = try change(node, mapping)
        guard change.kind != .delete else { throw .notFound }
        return try Self.target(of: change, mapping)
    }

    private static func target(of change: HistoryChange, _ mapping: Mapping) throws(FileSystemError) -> String {
        guard mapping.isValid(change.objectID.entity) else { throw .notFound }
        return "../../../\(mapping.model[change.objectID.entity].name)/\(change.objectID.key)"
    }

    /// For FUSE clients: the kernel answers no `user.` xattr of a symlink, so `updated/` tells the
    /// same (``HistoryChangeFolder``).
    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        let (_, change) = try change(node, mapping)
        guard change.kind == .update else { return [:] }
        return [Self.changedName: Data(change.changedProperties.joined(separator: " ").utf8)]
    }
}
