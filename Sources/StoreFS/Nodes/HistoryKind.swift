import Foundation
import FuseKit
import ObjectGraph

/// What every kind of node of the persistent history's tree shares (docs/SEMANTICS.md, "History
/// folders"): everything is read-only (EPERM for any change; EROFS on read-only mounts), and
/// listings are read afresh from the store, so transactions committed since, by the mount or
/// another process, appear at once.
protocol HistoryKind: NodeType {}

extension HistoryKind {
    /// `.history` gains transactions as they are committed.
    var keepsListings: Bool { false }

    func touch(_ node: Node, in mapping: Mapping) throws(FileSystemError) {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        throw mapping.configuration.readOnly ? .readOnly : .notPermitted
    }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error("rm \(HistoryNode.folderName)/…/\(name): the persistent history is read-only")
        throw .notPermitted
    }

    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    {
        mapping.logger.error("rmdir \(HistoryNode.folderName)/…/\(name): the persistent history is read-only")
        throw .notPermitted
    }

    /// Nothing of the history is ever written.
    func fsync(_ node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) {}

    /// The change a link, tombstone or value node is of (its number in the key bits), when the
    /// mount shows it.
    func change(_ node: Node, _ mapping: Mapping) throws(FileSystemError)
        -> (transaction: HistoryTransaction, change: HistoryChange)
    {
        let found = try mapping.historyChange(node.key.rawValue)
        guard HistoryNode.isShown(found.change, mapping) else { throw .notFound }
        return found
    }
}

extension HistoryNode {
    /// Whether a change has a place in the tree: its number and object fit an inode.
    static func isShown(_ change: HistoryChange, _ mapping: Mapping) -> Bool {
        Node.fits(PrimaryKey(change.changeID)) && mapping.isValid(change.objectID.entity)
            && Node.fits(change.objectID.key)
    }

    /// The node a change has in its change folder: a tombstone folder for a delete, else a link.
    static func node(of change: HistoryChange) -> Node {
        change.kind == .delete ? tombstone(change.changeID) : link(change.changeID)
    }
}
