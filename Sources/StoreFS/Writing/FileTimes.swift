import Foundation
import FuseKit
import Synchronization

/// The modification time each value's file shows: when its own content last changed through this
/// mount (its value set or taken back), the mount's time for a file not changed since. A to-many
/// folder's time is kept here too: when its members last changed.
///
/// A file's time is its own, never its object's. Editors compare the time a file had when they
/// read it with the time it has when they write it, and refuse to write when they differ (vim:
/// "The file has been changed since reading it", which `vim -es` answers with no, saves nothing
/// and exits 0). The kernel keeps the attributes it was told for an hour without asking again,
/// and asks again whenever a read or an open invalidates them: had a sibling's change moved this
/// file's time, the kernel would show the old time to the editor's first stat and the new one to
/// its last, and the edit would be lost although nothing changed the file. (An object's folder
/// shows its object's last change, and the kernel is told whenever that moves:
/// ``Mapping/noteFolderChange(_:)``.)
///
/// Bounded: two generations of at most ``generationLimit`` files each; when the newer is full it
/// becomes the older and the older is forgotten. A file changed more than that many changes ago
/// shows the mount's time again, the only time it may show that it did not show before.
///
/// Threading: one lock; never calls out while holding it.
final class FileTimes: Sendable {
    /// Files per generation: ~16 bytes each, so the two hold at most ~16 MiB even while a copy
    /// into the mount sets every value of a large store.
    static let generationLimit = 1 << 18

    private struct State {
        var newer: [UInt64: Date] = [:]
        var older: [UInt64: Date] = [:]
    }

    private let state = Mutex(State())

    /// Notes that `inode`'s content changed now (or at `time`).
    func touch(_ inode: InodeNumber, at time: Date = Date()) {
        state.withLock { state in
            if state.newer.count >= Self.generationLimit, state.newer[inode.rawValue] == nil {
                state.older = state.newer
                state.newer = [:]
            }
            state.newer[inode.rawValue] = time
            state.older[inode.rawValue] = nil
        }
    }

    /// When `inode`'s content last changed through this mount, while that is remembered.
    func time(of inode: InodeNumber) -> Date? {
        state.withLock { $0.newer[inode.rawValue] ?? $0.older[inode.rawValue] }
    }

    /// How many files' times are remembered (for tests).
    var count: Int { state.withLock { $0.newer.count + $0.older.count } }
}
