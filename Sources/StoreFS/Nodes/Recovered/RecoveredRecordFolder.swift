import Foundation
import FuseKit
import ObjectGraph

/// `MNT/.recovered/Entity/pN-HASH`: one recovered record, shown as a live object's folder shows
/// its object: a file per attribute with a value, in the same text forms (``ValueText``), the
/// renderings of binary values beside them (reachable by name), and a link per to-one whose
/// destination is a live object. To-many relationships are kept in other rows and are not shown.
///
/// Its extended attributes say where it came from (`user.recovered.source`, one line per place
/// it was found), its key where that survived (`user.recovered.key`), and how it stands against
/// the live objects (`user.recovered.live`: `deleted`, `differs` or `unknown key`; with
/// `user.recovered.differences` naming what differs from the live object with its key). A record
/// whose end was overwritten holds files only for what survived: `user.recovered.partial` says how
/// much did, `user.recovered.missing` names the attributes and to-ones that were lost (they are
/// neither files nor counted as differences).
struct RecoveredRecordFolder: RecoveredKind {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node {
        guard let (records, index) = try? RecoveredNode.found(node, mapping) else { return RecoveredNode.folder }
        return RecoveredNode.entity(records.records[index].entity)
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        guard let (records, index) = try? RecoveredNode.found(node, mapping) else {
            return [RecoveredNode.folderName]
        }
        let record = records.records[index]
        return [RecoveredNode.folderName, mapping.model[record.entity].name, record.name]
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        _ = try RecoveredNode.found(node, mapping)
        return mapping.make(node, .directory, permissions: 0o555)
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let (records, index) = try RecoveredNode.found(node, mapping)
        let entity = mapping.model[records.records[index].entity]
        let values = try mapping.recoveredValues(records, index)
        if let attribute = entity.allAttributes.firstIndex(where: { $0.name == name }),
            attribute < Node.maximumHistoryAttributes
        {
            guard values.attributes[name] != nil else { throw .notFound }
            return RecoveredNode.attribute(index, attribute)
        }
        if let relationship = entity.allRelationships.firstIndex(where: { $0.name == name }) {
            guard RecoveredLink.destination(of: values, entity.allRelationships[relationship], mapping) != nil else {
                throw .notFound
            }
            return RecoveredNode.link(index, relationship)
        }
        if let (base, rendering) = ValueRendering.split(name),
            let renderer = ValueRendering.all.firstIndex(where: { $0.suffix == rendering.suffix }),
            let attribute = entity.allAttributes.firstIndex(where: { $0.name == base }),
            attribute < Node.maximumRenderedAttributes
        {
            let node = RecoveredNode.rendering(index, attribute, renderer)
            if (try? RecoveredRenderingFile().bytes(of: node, mapping)) != nil { return node }
        }
        throw .notFound
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let (records, index) = try RecoveredNode.found(node, mapping)
        let entity = mapping.model[records.records[index].entity]
        let values = try mapping.recoveredValues(records, index)
        var result: [(String, Node)] = []
        for (i, attribute) in entity.allAttributes.enumerated()
        where i < Node.maximumHistoryAttributes && values.attributes[attribute.name] != nil {
            result.append((attribute.name, RecoveredNode.attribute(index, i)))
        }
        for (i, relationship) in entity.allRelationships.enumerated()
        where RecoveredLink.destination(of: values, relationship, mapping) != nil {
            result.append((relationship.name, RecoveredNode.link(index, i)))
        }
        return .names(result)
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        let (records, index) = try RecoveredNode.found(node, mapping)
        let record = records.records[index]
        let values = try mapping.recoveredValues(records, index)
        let entity = mapping.model[record.entity]
        var result: [String: Data] = [
            "user.recovered.source": Data(record.sources.map { $0.description + "\n" }.joined().utf8),
            "user.recovered.live": Data(record.live.rawValue.utf8),
            "user.object.entity": Data(entity.name.utf8),
            "user.recovered.entity": Data(
                (record.entityInferred
                    ? "\(entity.name) (from the table and the columns set; Z_ENT did not survive)" : entity.name).utf8)
        ]
        if let key = record.key {
            result["user.recovered.key"] = Data(key.description.utf8)
            let uri = ObjectURI(storeUUID: try mapping.storeUUID(), entityName: entity.name, key: key)
            result["user.object.uri"] = Data(uri.description.utf8)
        }
        if let version = values.version { result["user.recovered.version"] = Data(String(version).utf8) }
        if !values.undecoded.isEmpty {
            result["user.recovered.undecoded"] = Data(
                values.undecoded.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\n" }.joined().utf8)
        }
        if let partial = record.partial {
            result["user.recovered.partial"] = Data(partial.description.utf8)
            result["user.recovered.missing"] = Data(values.missing.joined(separator: ",").utf8)
        }
        if record.live == .differs, let key = record.key,
            let live = try? mapping.snapshot(of: ObjectID(entity: record.entity, key: key))
        {
            let names = Self.differences(values, live, entity)
            result["user.recovered.differences"] = Data(names.joined(separator: ",").utf8)
        }
        return result
    }

    /// The attributes and to-ones whose values differ between a recovered record and the live
    /// object with its key, in the model's order; those the record lost are not compared.
    static func differences(_ values: RecoveredValues, _ live: Snapshot, _ entity: EntityDescription) -> [String] {
        let lost = Set(values.missing)
        return entity.allAttributes.filter {
            !$0.isTransient && !lost.contains($0.name) && values.attributes[$0.name] != live.attributes[$0.name]
        }.map(\.name)
            + entity.allRelationships.filter {
                !$0.isToMany && !lost.contains($0.name) && values.toOne[$0.name] != live.toOne[$0.name]
            }.map(\.name)
    }
}
