import FuseKit
import Synchronization

/// The inode numbers of a folder mount's tree: its folders, files, links and store folders
/// (what is inside a store is numbered by the store, with its slot: ``StoreSlots``).
///
/// A tree node's number has the root's kind code (0) and no slot; below bit 54 it is a serial
/// number given the first time the kernel meets the path, kept while the kernel holds it (its
/// lookups, counted as the kernel counts them, until FORGET gives them back) and never given to
/// another path. Nodes the kernel does not hold (listed by a plain readdir, or forgotten) are
/// dropped once there are more than ``maximumNodes``; their path gets a new number if it comes
/// back. The table thus holds what the kernel holds plus a bounded rest, whatever the tree's size.
///
/// Threading: one lock; safe from any thread.
final class TreeNodes: Sendable {
    /// What a node is shown as.
    enum Kind: Sendable, Hashable {
        case folder
        case file
        case link
        /// A store, by its type's name.
        case store(String)
    }

    struct Record: Sendable {
        var path: String
        var kind: Kind
        var lookups: UInt64
    }

    /// Nodes kept without lookups at most before they are dropped.
    static let maximumNodes = 200_000
    /// Below the slot bits.
    static let limit: UInt64 = 1 << 54

    private struct State {
        var byNumber: [UInt64: Record] = [InodeNumber.root.rawValue: Record(path: "", kind: .folder, lookups: 1)]
        var byPath: [String: UInt64] = ["": InodeNumber.root.rawValue]
        var next: UInt64 = InodeNumber.root.rawValue + 1
        /// Store folders whose store is open: kept whatever the kernel holds (the store's
        /// inodes name its folder by this number).
        var pinned: [UInt64: Int] = [:]
    }

    private let state = Mutex(State())

    /// Whether `inode` is a tree node's (no slot bits).
    static func isTreeNode(_ inode: InodeNumber) -> Bool { inode.rawValue & Node.slotMask == 0 }

    func record(_ inode: InodeNumber) -> Record? { state.withLock { $0.byNumber[inode.rawValue] } }

    /// The number of `path`, given now if it has none; `counted` when the kernel takes a lookup
    /// of it with this answer. Records what it is shown as.
    func number(for path: String, kind: Kind, counted: Bool) -> InodeNumber {
        state.withLock { state in
            if let number = state.byPath[path] {
                state.byNumber[number]?.kind = kind
                if counted { state.byNumber[number]?.lookups += 1 }
                return InodeNumber(number)
            }
            if state.byNumber.count >= Self.maximumNodes { Self.sweep(&state) }
            let number = state.next
            // 2^54 numbers: a mount would need centuries of lookups to run out; should it, the
            // numbers of nodes the kernel no longer holds are given again.
            state.next = number + 1 < Self.limit ? number + 1 : InodeNumber.root.rawValue + 1
            state.byNumber[number] = Record(path: path, kind: kind, lookups: counted ? 1 : 0)
            state.byPath[path] = number
            return InodeNumber(number)
        }
    }

    /// The kernel took another lookup of `inode` (readdirplus of a node already numbered).
    func took(_ inode: InodeNumber) {
        state.withLock { $0.byNumber[inode.rawValue]?.lookups += 1 }
    }

    func forget(_ inode: InodeNumber, count: UInt64) {
        state.withLock { state in
            guard inode != .root, let record = state.byNumber[inode.rawValue] else { return }
            let lookups = record.lookups >= count ? record.lookups - count : 0
            state.byNumber[inode.rawValue]?.lookups = lookups
            if lookups == 0 && state.pinned[inode.rawValue] == nil {
                state.byNumber[inode.rawValue] = nil
                state.byPath[record.path] = nil
            }
        }
    }

    /// Keeps `inode` while a store is open in it (`delta` 1), or lets it go (-1).
    func pin(_ inode: InodeNumber, _ delta: Int) {
        state.withLock { state in
            let count = state.pinned[inode.rawValue, default: 0] + delta
            state.pinned[inode.rawValue] = count > 0 ? count : nil
            if count <= 0, let record = state.byNumber[inode.rawValue], record.lookups == 0, inode != .root {
                state.byNumber[inode.rawValue] = nil
                state.byPath[record.path] = nil
            }
        }
    }

    /// Nodes the table holds (tests, the log).
    var count: Int { state.withLock { $0.byNumber.count } }

    private static func sweep(_ state: inout State) {
        for (number, record) in state.byNumber
        where record.lookups == 0 && state.pinned[number] == nil && number != InodeNumber.root.rawValue {
            state.byNumber[number] = nil
            state.byPath[record.path] = nil
        }
    }
}
