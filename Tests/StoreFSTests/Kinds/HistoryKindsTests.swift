import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// The persistent history's folders (``HistoryNode`` and its kinds) on SwiftData's store of the corpus (38
/// transactions with inserts, updates and deletes), checked against what the engine reads.
@Suite struct HistoryKindsTests {
    static let store = "sergd2005_ResourcesManager_default.store"

    /// Every transaction the engine reads, with its changes.
    static func history(_ mount: KernelMount) throws -> [HistoryTransaction] {
        let store = try #require(mount.coordinator.store as? any PersistentHistoryStore)
        return try store.historyTransactions(after: 0, limit: 1000, includingChanges: true)
    }

    @Test func transactionsAreFoldersOfTheirFieldsAndChanges() throws {
        let mount = try KernelMount(corpus: Self.store)
        let k = mount.kernel
        let history = try Self.history(mount)
        #expect(history.count == 38)
        #expect(try k.list(".history") == history.map { "t\($0.number)" })
        #expect(!(try k.list("")).contains(".history"), "reachable, not listed")
        #expect(try k.stat(".history").permissions == 0o555)

        let t37 = try #require(history.first { $0.number == 37 })
        #expect(try k.list(".history/t37") == ["timestamp", "bundleID", "processID", "inserted", "updated", "deleted"])
        #expect(try mount.text(".history/t37/timestamp") == ValueText.format(t37.timestamp) + "\n")
        #expect(try mount.text(".history/t37/bundleID") == "com.sdsoftware.ResourcesManager\n")
        #expect(try mount.text(".history/t37/processID") == "ResourcesManager\n")
        #expect(errnoOf { _ = try k.stat(".history/t37/author") } == ENOENT, "a name the transaction lacks has no file")
        #expect(try k.stat(".history/t37/bundleID").size == UInt64("com.sdsoftware.ResourcesManager\n".utf8.count))
        #expect(try k.list(".history/t37/updated") == ["Item-p9"])
        #expect(try k.readlink(".history/t37/updated/Item-p9") == "../../../Item/p9")
        #expect(
            String(decoding: try k.getxattr(".history/t37/updated/Item-p9", "user.history.changed"), as: UTF8.self)
                == "name")
        #expect(
            String(decoding: try k.getxattr(".history/t37/updated", "user.history.changed.Item-p9"), as: UTF8.self)
                == "name")
        #expect(try k.listxattr(".history/t37/updated") == ["user.history.changed.Item-p9"])
        #expect(errnoOf { _ = try k.getxattr(".history/t37/updated", "user.history.changed.Item-p10") } == ENODATA)
        #expect(
            try mount.text(".history/t37/updated/Item-p9/name") == (try mount.text("Item/p9/name")),
            "the link leads to the object")

        // Every change of every transaction, in its folder.
        for transaction in history {
            for (raw, folder) in ["inserted", "updated", "deleted"].enumerated() {
                let expected = transaction.changes.filter { $0.kind.rawValue == Int64(raw) }.map {
                    "\(mount.coordinator.model[$0.objectID.entity].name)-\($0.objectID.key)"
                }
                #expect(
                    try k.list(".history/t\(transaction.number)/\(folder)") == expected,
                    "t\(transaction.number) \(folder)")
            }
        }

        // A delete: a folder of its tombstone's values, as attribute files show them.
        let (deleting, delete) = try #require(
            history.lazy.flatMap { t in t.changes.filter { $0.kind == .delete }.map { (t, $0) } }.first)
        let entity = mount.coordinator.model[delete.objectID.entity]
        let folder = ".history/t\(deleting.number)/deleted/\(entity.name)-\(delete.objectID.key)"
        let kept = delete.tombstone.compactMap { name, value in value.map { (name, $0) } }
        #expect(Set(try k.list(folder)) == Set(kept.map(\.0)))
        for (name, value) in kept {
            let type = try #require(entity.attribute(named: name)).type
            #expect(try k.read("\(folder)/\(name)") == ValueText.content(of: value, type: type), "\(folder)/\(name)")
        }

        for missing in ["t0", "t007", "t39", "t-1", "t4294967296", "x37", "t"] {
            #expect(errnoOf { _ = try k.stat(".history/\(missing)") } == ENOENT, "\(missing)")
        }
        #expect(errnoOf { _ = try k.stat(".history/t37/updated/Item-p10") } == ENOENT)
        #expect(errnoOf { _ = try k.stat(".history/t37/updated/Nope-p9") } == ENOENT)
        #expect(mount.finish().isEmpty)
    }

    @Test func everythingIsReadOnly() throws {
        let mount = try KernelMount(corpus: Self.store)
        let k = mount.kernel
        #expect(errnoOf { try k.write(".history/t37/bundleID", Data("x\n".utf8)) } == EPERM)
        #expect(errnoOf { try k.write(".history/t37/new", Data("x\n".utf8)) } == EPERM)
        #expect(errnoOf { try k.unlink(".history/t37/updated/Item-p9") } == EPERM)
        #expect(errnoOf { try k.unlink(".history/t37/bundleID") } == EPERM)
        #expect(errnoOf { try k.rmdir(".history/t37") } == EPERM)
        #expect(errnoOf { try k.mkdir(".history/t99") } == EPERM)
        #expect(errnoOf { try k.symlink("../../../Item/p1", ".history/t37/updated/Item-p1") } == EPERM)
        #expect(
            errnoOf { try k.setxattr(".history/t37/updated/Item-p9", "user.history.changed", Data("x".utf8)) } == EPERM)
        #expect(errnoOf { try k.rename(".history/t37", ".history/t36") } == EPERM)
        #expect(try mount.text(".history/t37/bundleID") == "com.sdsoftware.ResourcesManager\n")
        #expect(mount.finish().isEmpty)
    }

    /// A commit through the mount is a new transaction at once: the listing is read again, and
    /// its folder links the object with the property it changed.
    @Test func aCommitThroughTheMountIsANewTransaction() throws {
        let mount = try KernelMount(corpus: Self.store)
        let k = mount.kernel
        let before = try k.list(".history")
        try k.write("Item/p9/name", Data("Renamed\n".utf8))
        try k.fsync("Item/p9/name")
        let after = try k.list(".history")
        let added = after.filter { !before.contains($0) }
        #expect(added.count == 1 && after.starts(with: before), "\(added)")
        let new = try #require(added.first)
        #expect(try k.list(".history/\(new)/updated") == ["Item-p9"])
        #expect(
            String(decoding: try k.getxattr(".history/\(new)/updated/Item-p9", "user.history.changed"), as: UTF8.self)
                == "name")
        #expect(try mount.text(".history/\(new)/author") == "storefs\n")
        #expect(errnoOf { _ = try k.stat(".history/\(new)/contextName") } == ENOENT)
        #expect(mount.finish().isEmpty)
    }

    /// A store that keeps no history has no `.history`.
    @Test func storesWithoutHistoryHaveNone() throws {
        let mount = try KernelMount(objects: 20)
        #expect(errnoOf { _ = try mount.kernel.stat(".history") } == ENOENT)
        #expect(mount.finish().isEmpty)
    }

    /// Inode numbers: the family's part, numbers and indexes survive the round trip, and names
    /// have one form each.
    @Test func nodesRoundTripThroughTheirInodes() {
        let nodes = [
            HistoryNode.folder, HistoryNode.transaction(1), HistoryNode.transaction(Node.maximumKey),
            HistoryNode.field(7, 4),
            HistoryNode.changes(9, .delete), HistoryNode.link(123_456), HistoryNode.tombstone(5),
            HistoryNode.value(5, 4095)
        ]
        for node in nodes {
            #expect(Node(node.inode) == node)
            #expect(Node(node.inode)?.kind.code == Node.Kind.history.rawValue, "one code for the family")
        }
        #expect(Set(nodes.map(\.inode)).count == nodes.count)
        #expect(HistoryNode.number(named: "t12") == 12)
        for name in ["t012", "t", "t+1", "12", "t4294967296", "t99999999999999999999"] {
            #expect(HistoryNode.number(named: name) == nil, "\(name)")
        }
    }
}
