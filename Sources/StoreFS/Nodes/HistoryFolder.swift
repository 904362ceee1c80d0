import Foundation
import FuseKit
import ObjectGraph

/// `MNT/.history`: a folder `tN` per transaction of the store's persistent history, in order of
/// N. Reachable by name and not listed at the root (as `.fetchRequests`); it exists only when the
/// store keeps history. Listed from the store in pages, without the changes.
struct HistoryFolder: HistoryKind {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] { [HistoryNode.folderName] }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard mapping.historyStore != nil else { throw .notFound }
        return mapping.make(node, .directory, permissions: 0o555)
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        guard let number = HistoryNode.number(named: name) else { throw .notFound }
        _ = try mapping.historyTimestamp(number)
        return HistoryNode.transaction(number)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        .names(
            try mapping.historyListing().map { (HistoryNode.name(of: $0.number), HistoryNode.transaction($0.number)) })
    }
}
