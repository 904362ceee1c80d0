import Foundation
import ObjectGraph
import Synchronization

/// Changes that could not be committed: why, per object (what `user.storefs.error` shows), a
/// failure of the store itself, and the changes a conflict dropped, kept for the recovery file.
///
/// Threading: one lock; never calls out while holding it.
final class CommitFailures: Sendable {
    private struct State {
        var reasons: [ObjectID: String] = [:]
        var storeReason: String?
        var dropped: [PendingChange] = []
    }

    private let state = Mutex(State())

    /// Records the outcome of a commit; returns the objects whose reason is new or different
    /// (those are logged).
    func record(_ outcome: SaveOutcome, describe: (ObjectGraphError) -> String) -> [ObjectID] {
        state.withLock { state in
            for id in outcome.saved { state.reasons[id] = nil }
            var changed: [ObjectID] = []
            for (id, error) in outcome.failed {
                let reason = describe(error)
                if state.reasons[id] != reason { changed.append(id) }
                state.reasons[id] = reason
            }
            for change in outcome.conflicts {
                state.reasons[change.objectID] = change.failure.map(describe) ?? "conflict"
                changed.append(change.objectID)
            }
            state.dropped += outcome.conflicts
            state.storeReason = outcome.storeError.map(describe)
            return changed
        }
    }

    func reason(for object: ObjectID) -> String? { state.withLock { $0.reasons[object] } }

    /// A change refused when it was made (a uniqueness constraint it would break): the reason
    /// shows in `user.storefs.error` on the object's folder until the object is next saved.
    func refuse(_ objects: [ObjectID], because reason: String) {
        state.withLock { state in for id in objects { state.reasons[id] = reason } }
    }

    var storeReason: String? { state.withLock { $0.storeReason } }

    /// Forgets the reasons of objects whose changes were discarded or saved.
    func clear(_ objects: [ObjectID]) {
        state.withLock { state in for id in objects { state.reasons[id] = nil } }
    }

    /// The changes conflicts dropped during the mount and nobody was told of.
    var droppedChanges: [PendingChange] { state.withLock { $0.dropped } }

    /// Takes out the dropped change of `object` (its writer is being told). Its reason stays in
    /// `user.storefs.error` until the object is next saved: the writer got EBUSY, the xattr says
    /// which change of which object lost.
    func takeDropped(of object: ObjectID) -> PendingChange? {
        state.withLock { state in
            guard let index = state.dropped.lastIndex(where: { $0.objectID == object }) else { return nil }
            return state.dropped.remove(at: index)
        }
    }
}
