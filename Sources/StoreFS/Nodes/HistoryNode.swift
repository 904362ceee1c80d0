import Foundation
import ObjectGraph

/// The nodes of the persistent history's tree, one kind of node per part (``HistoryFolder``,
/// ``HistoryTransactionFolder``, …). They share one code in inode numbers; which part of the tree
/// a node is sits in the entity bits, and the numbers it needs in the key and property bits:
///
/// | part | path | key | property |
/// |---|---|---|---|
/// | folder | `.history` | | |
/// | transaction | `.history/tN` | N | |
/// | field | `.history/tN/author` | N | which field (``HistoryNode/fields``) |
/// | changes | `.history/tN/updated` | N | the change type (0 inserted, 1 updated, 2 deleted) |
/// | link | `.history/tN/updated/Entity-pK` | the change's number (`ACHANGE.Z_PK`) | |
/// | tombstone | `.history/tN/deleted/Entity-pK` | the change's number | |
/// | value | `.history/tN/deleted/Entity-pK/ATTR` | the change's number | the attribute's index |
///
/// A link carries its change, not its object (unlike a to-many's member links, whose inode is
/// the object's), because what it says (`user.history.changed`) is the change's. Transactions and
/// changes numbered beyond 2^32 - 1 do not fit the key bits and are not shown.
enum HistoryNode {
    enum Part: Int {
        case folder = 0, transaction, field, changes, link, tombstone, value

        /// The kind of node this part of the tree is.
        var kind: Node.Kind {
            switch self {
            case .folder: .history
            case .transaction: .historyTransaction
            case .field: .historyField
            case .changes: .historyChanges
            case .link: .historyLink
            case .tombstone: .historyTombstone
            case .value: .historyValue
            }
        }
    }

    /// The history's folder at the mount root.
    static let folderName = ".history"

    /// A transaction's files, in the order of the property bits: `timestamp`, then the names
    /// `NSPersistentHistoryTransaction` has (as `storefs history` prints them).
    static let fields = ["timestamp", "author", "bundleID", "processID", "contextName"]

    /// The change folders, by `HistoryChange.Kind`'s raw value.
    static let changeFolders = ["inserted", "updated", "deleted"]

    static let folder = Node.history(.folder)
    static func transaction(_ number: Int64) -> Node { .history(.transaction, key: number) }
    static func field(_ number: Int64, _ index: Int) -> Node {
        .history(.field, property: index, key: number)
    }
    static func changes(_ number: Int64, _ kind: HistoryChange.Kind) -> Node {
        .history(.changes, property: Int(kind.rawValue), key: number)
    }
    static func link(_ changeID: Int64) -> Node { .history(.link, key: changeID) }
    static func tombstone(_ changeID: Int64) -> Node { .history(.tombstone, key: changeID) }
    static func value(_ changeID: Int64, _ index: Int) -> Node {
        .history(.value, property: index, key: changeID)
    }

    /// A transaction's folder name, `tN`.
    static func name(of number: Int64) -> String { "t\(number)" }

    /// The number a transaction's folder name stands for: `t` and the number in decimal, without
    /// sign or leading zeros, so that no two names denote one transaction.
    static func number(named name: String) -> Int64? {
        guard name.hasPrefix("t"), let key = PrimaryKey(reference: "p" + name.dropFirst()), Node.fits(key) else {
            return nil
        }
        return key.rawValue
    }

    /// The name of a change's object in a change folder, `Entity-pK`: keys are unique only within
    /// an entity's hierarchy, and a transaction changes objects of many (entity names hold no `-`).
    static func name(of object: ObjectID, _ model: ManagedObjectModel) -> String {
        "\(model[object.entity].name)-\(object.key)"
    }

    /// The object an `Entity-pK` name stands for.
    static func object(named name: String, _ model: ManagedObjectModel) -> ObjectID? {
        guard let dash = name.lastIndex(of: "-"), let entity = model.entityID(named: String(name[..<dash])),
            let key = PrimaryKey(reference: name[name.index(after: dash)...])
        else { return nil }
        return ObjectID(entity: entity, key: key)
    }
}
