import Foundation
import FuseKit
import ObjectGraph

/// `MNT/.recovered/Entity`: a folder per recovered record of the entity (exactly that entity: a
/// subentity's records are in its own folder), named `pN-HASH` when the record's key survived,
/// `r-HASH` otherwise.
struct RecoveredEntityFolder: RecoveredKind {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { RecoveredNode.folder }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        [RecoveredNode.folderName, mapping.model[EntityID(Int(node.key.rawValue))].name]
    }

    private func entity(_ node: Node, _ mapping: Mapping) throws(FileSystemError) -> EntityID {
        let entity = EntityID(Int(node.key.rawValue))
        guard mapping.showsRecovered, mapping.isValid(entity) else { throw .notFound }
        return entity
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        _ = try entity(node, mapping)
        return mapping.make(node, .directory, permissions: 0o555)
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let entity = try entity(node, mapping)
        guard let index = try mapping.recoveredRecords().index(of: entity, named: name),
            Node.fits(PrimaryKey(Int64(index) + 1))
        else { throw .notFound }
        return RecoveredNode.record(index)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let entity = try entity(node, mapping)
        let records = try mapping.recoveredRecords()
        return .names(
            records.indexes(of: entity).filter { Node.fits(PrimaryKey(Int64($0) + 1)) }.map {
                (records.records[$0].name, RecoveredNode.record($0))
            })
    }
}
