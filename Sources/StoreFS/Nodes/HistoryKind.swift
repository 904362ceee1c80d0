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

/// The files of the history's tree (a transaction's names, a tombstone's values): read-only text
/// in the form of attribute files, dated by their transaction.
protocol HistoryTextFile: HistoryKind {
    /// The file's content; ENOENT where there is no such name or value.
    func text(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data
    /// When the file's transaction was recorded.
    func timestamp(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Date
}

extension HistoryTextFile {
    var isDirectory: Bool { false }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        let time = try timestamp(of: node, mapping)
        return mapping.make(node, .regularFile, permissions: 0o444, size: try text(of: node, mapping).count, time: time)
    }

    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult {
        if flags.isWriting { throw mapping.configuration.readOnly ? .readOnly : .notPermitted }
        return try mapping.openFile(node, flags: flags)
    }

    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data {
        try text(of: node, mapping)
    }
}
