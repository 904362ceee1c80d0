import Foundation
import FuseKit
import ObjectGraph

/// What the kinds of link to an object folder share: the target climbs `levelsUp` folders to the
/// mount's root, then names the object's folder (`../../../Project/p2` from a to-many folder).
/// Links of these kinds have no folder of their own to return to: `..` is the root.
protocol ObjectLink: NodeType {
    /// How many folders up the mount's root is from the folder the link sits in.
    var levelsUp: Int { get }
}

extension ObjectLink {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(node, .symbolicLink, size: try linkTarget(of: node, in: mapping, known: known).utf8.count)
    }

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        guard mapping.isValid(node.entity) else { throw .notFound }
        return String(repeating: "../", count: levelsUp) + "\(mapping.model[node.entity].name)/\(node.key)"
    }
}
