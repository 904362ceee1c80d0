import Foundation
import FuseKit
import ObjectGraph

/// The nodes of `.recovered` (what the store's files remember: ``RecoveringStore``) and `.wal`,
/// one kind of node per part. They share code 7 in inode numbers; which part a node is sits in
/// the entity bits, and the numbers it needs in the key and property bits:
///
/// | part | path | key | property |
/// |---|---|---|---|
/// | folder | `.recovered` | | |
/// | entity | `.recovered/Entity` | the entity's number | |
/// | record | `.recovered/Entity/pN-HASH` | the record's index | |
/// | attribute | `.recovered/Entity/pN-HASH/ATTR` | the record's index | the attribute's index |
/// | rendering | `.recovered/Entity/pN-HASH/ATTR.json` | the record's index | renderer << 9, attribute |
/// | link | `.recovered/Entity/pN-HASH/REL` | the record's index | the relationship's index |
/// | wal | `.wal` | | |
/// | version | `.wal/cN` | N | |
///
/// A record's index is its place in the store's ``RecoveredRecords``, which the same files always
/// give in the same order; its name (``RecoveredRecord/name``) is what stays the same across
/// mounts. `.wal`'s versions (`c0`, `c1`, …) are stores of their own, served by
/// ``StoreVersionsFileSystem``: a version's folder has this family's number, what is inside it
/// the version's own numbers with its slot in bits 54–59.
enum RecoveredNode {
    enum Part: Int {
        case folder = 0, entity, record, attribute, rendering, link, wal, version

        var kind: Node.Kind {
            switch self {
            case .folder: .recovered
            case .entity: .recoveredEntity
            case .record: .recoveredRecord
            case .attribute: .recoveredAttribute
            case .rendering: .recoveredRendering
            case .link: .recoveredLink
            case .wal: .walFolder
            case .version: .walVersion
            }
        }
    }

    static let folderName = ".recovered"
    static let walName = ".wal"

    static let folder = Node.recovered(.folder)
    static let wal = Node.recovered(.wal)
    static func entity(_ id: EntityID) -> Node { .recovered(.entity, key: Int64(id.rawValue)) }
    static func record(_ index: Int) -> Node { .recovered(.record, key: Int64(index)) }
    static func attribute(_ index: Int, _ attribute: Int) -> Node {
        .recovered(.attribute, property: attribute, key: Int64(index))
    }
    static func rendering(_ index: Int, _ attribute: Int, _ renderer: Int) -> Node {
        .recovered(.rendering, property: renderer << Node.renderingShift | attribute, key: Int64(index))
    }
    static func version(_ number: Int) -> Node { .recovered(.version, key: Int64(number)) }
    static func link(_ index: Int, _ relationship: Int) -> Node {
        .recovered(.link, property: relationship, key: Int64(index))
    }

    /// The record a node of the record's folder names, with the store's records.
    static func found(_ node: Node, _ mapping: Mapping) throws(FileSystemError) -> (RecoveredRecords, Int) {
        let records = try mapping.recoveredRecords()
        let index = Int(node.key.rawValue)
        guard index < records.records.count, mapping.isValid(records.records[index].entity) else { throw .notFound }
        return (records, index)
    }
}
