import Foundation
import FuseKit
import ObjectGraph

/// A link in an ancestor entity's directory to a subentity object's folder
/// (`Person/p6 -> ../Employee/p6`): the object is one of the ancestor's too.
struct SubentityLink: NodeType {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(node, .symbolicLink, size: try linkTarget(of: node, in: mapping, known: known).utf8.count)
    }

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        guard mapping.isValid(node.entity) else { throw .notFound }
        return "../\(mapping.model[node.entity].name)/\(node.key)"
    }
}
