import Foundation
import FuseKit
import ObjectGraph

/// A link in a fetch request template's folder to an object it fetches
/// (`.fetchRequests/remoteEmployees/p12 -> ../../Employee/p12`).
struct TemplateMemberLink: NodeType {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(node, .symbolicLink, size: try linkTarget(of: node, in: mapping, known: known).utf8.count)
    }

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        guard mapping.isValid(node.entity) else { throw .notFound }
        return "../../\(mapping.model[node.entity].name)/\(node.key)"
    }
}
