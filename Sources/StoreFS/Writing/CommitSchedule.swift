import Foundation
import ObjectGraph
import Synchronization

/// When to commit: whether changes are waiting, since when the mount has been quiet, and the
/// modification time each changed object's folder shows.
///
/// Threading: one lock; never calls out while holding it.
final class CommitSchedule: Sendable {
    private struct State {
        var modified: [ObjectID: Date] = [:]
        var commits = 0
        var dirty = false
        var lastChange = Date.distantPast
        /// When a commit that failed for a reason outside any object (the disk, a lock) is tried
        /// again without a new change.
        var retryAt: Date?
    }

    /// Seconds before a commit that failed for the store's sake is tried again by itself.
    static let retryDelay: Double = 5

    private let state = Mutex(State())

    /// Notes a change through the mount: the object's folder shows a new modification time, and
    /// the commit timer restarts.
    func noteChange(_ object: ObjectID?) {
        state.withLock { state in
            if let object { state.modified[object] = Date() }
            state.dirty = true
            state.lastChange = Date()
        }
    }

    func modificationTime(of object: ObjectID) -> Date? { state.withLock { $0.modified[object] } }

    /// Whether changes are waiting and the mount was quiet for `delay` seconds, or a failed
    /// commit is due to be tried again.
    func isDue(after delay: Double, now: Date = Date()) -> Bool {
        state.withLock { state in
            if state.dirty && now.timeIntervalSince(state.lastChange) >= delay { return true }
            if let retry = state.retryAt, now >= retry { return true }
            return false
        }
    }

    /// Notes a commit attempt: what changed before it was tried. `retry`: try again after
    /// ``retryDelay`` even without a new change.
    func didCommit(retry: Bool) {
        state.withLock { state in
            state.dirty = false
            state.commits += 1
            state.retryAt = retry ? Date().addingTimeInterval(Self.retryDelay) : nil
        }
    }

    var commitCount: Int { state.withLock { $0.commits } }
}
