import Foundation
import FuseKit
import ObjectGraph

/// A to-one of a recovered record whose destination is a live object: a link to its folder
/// (`../../../Entity/pN`). A destination that is gone (or was never there) has no link.
struct RecoveredLink: RecoveredKind {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { RecoveredNode.record(Int(node.key.rawValue)) }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(node, .symbolicLink, size: try linkTarget(of: node, in: mapping, known: known).utf8.count)
    }

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        let (records, index) = try RecoveredNode.found(node, mapping)
        let relationships = mapping.model[records.records[index].entity].allRelationships
        guard node.property < relationships.count,
            let destination = Self.destination(
                of: try mapping.recoveredValues(records, index), relationships[node.property], mapping)
        else { throw .notFound }
        return "../../../\(mapping.model[destination.entity].name)/\(destination.key)"
    }

    /// The live object a recovered to-one points at, if it exists.
    static func destination(of values: RecoveredValues, _ relationship: RelationshipDescription, _ mapping: Mapping)
        -> ObjectID?
    {
        guard !relationship.isToMany, let destination = values.toOne[relationship.name], Node.fits(destination),
            (try? mapping.snapshot(of: destination)) != nil
        else { return nil }
        return destination
    }
}
