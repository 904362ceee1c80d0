import Foundation
import FuseKit
import ObjectGraph

/// A to-one relationship's link in an object folder (`department -> ../../Department/p3`),
/// present while the relationship is set. `ln -s`/`ln -sfn` sets it and `rm` clears it, in the
/// object's folder (``ObjectFolder``); the inverse follows.
struct ToOneLink: NodeType {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { .object(node.object) }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(node, .symbolicLink, size: try linkTarget(of: node, in: mapping, known: known).utf8.count)
    }

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        let relationships = mapping.isValid(node.entity) ? mapping.model[node.entity].allRelationships : []
        guard node.property < relationships.count else { throw .notFound }
        guard
            let destination = try mapping.snapshot(of: node.object, known: known).toOne[
                relationships[node.property].name]
        else { throw .notFound }
        return "../../\(mapping.model[destination.entity].name)/\(destination.key)"
    }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    { try mapping.removeProperty(node, named: name, by: request) }

    /// `ln -sfn`'s temporary link, which already became this relationship, renamed onto its name.
    func rename(_ node: Node, named name: String, to newName: String, in folder: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        guard mapping.session.scratch.aliased(name, in: folder) != nil else {
            mapping.logger.error(
                "mv \(name) \(newName) in \(mapping.describe(folder)): relationships are changed with ln -s and rm")
            throw .notPermitted
        }
        try mapping.renameAlias(
            name, to: newName, in: folder, shownAs: mapping.model[node.entity].allRelationships[node.property].name)
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        return mapping.relationshipAttributes(of: node.object, node.property)
    }
}
