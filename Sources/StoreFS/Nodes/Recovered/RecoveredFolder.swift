import Foundation
import FuseKit
import ObjectGraph

/// `MNT/.recovered`: a folder per entity with recovered records (any entity's name can be looked
/// up; an entity without any is an empty folder). Reachable by name and not listed at the root,
/// like `.history`; only on read-only and evidence mounts of stores whose files can be read for
/// what they remember (SQLite). `user.recovered.summary` says how much was read and found.
struct RecoveredFolder: RecoveredKind {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] { [RecoveredNode.folderName] }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard mapping.showsRecovered else { throw .notFound }
        return mapping.make(node, .directory, permissions: 0o555)
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        guard mapping.showsRecovered, let entity = mapping.model.entityID(named: name) else { throw .notFound }
        return RecoveredNode.entity(entity)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let records = try mapping.recoveredRecords()
        let entities = Set(records.records.map(\.entity))
        return .names(
            entities.map { (mapping.model[$0].name, RecoveredNode.entity($0)) }.sorted { $0.0 < $1.0 })
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        let records = try mapping.recoveredRecords()
        var text = "\(records.records.count) records recovered from \(records.pagesRead) page versions"
        let partial = records.records.count { $0.partial != nil }
        if partial > 0 { text += " (\(partial) of them partial: their end was overwritten)" }
        if records.leftOut > 0 { text += "; \(records.leftOut) more found but left out (memory bound)" }
        if records.cancelled { text += "; the read was cancelled before the end" }
        return ["user.recovered.summary": Data((text + "\n").utf8)]
    }
}
