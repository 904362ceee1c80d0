import Foundation
import FuseKit
import ObjectGraph

/// `MNT/.wal`: a read-only folder per version of the store its files hold (`c0` the database
/// file alone, `cN` the store right after its WAL's commit N). Each version is a store of its own,
/// served by ``StoreVersionsFileSystem``, which answers lookups and listings here; this kind
/// answers what needs no version (the folder's attributes; a version's folder is nothing without
/// it). Reachable by name, not listed at the root; only where the mount serves versions.
struct WALFolder: RecoveredKind {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] { [RecoveredNode.walName] }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard mapping.servesVersions, node.kind == .walFolder else { throw .notFound }
        return mapping.make(node, .directory, permissions: 0o555)
    }

    /// Versions are served by ``StoreVersionsFileSystem``: nothing is found here without it.
    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        throw .notFound
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        .names([])
    }
}
