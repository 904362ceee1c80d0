import Foundation
import ObjectGraph
import Synchronization

/// What removals inside object folders changed, kept until the next commit so that `rmdir` of
/// the object (what `rm -r` does last) can take them back and delete the object by its delete
/// rules instead: a Deny rule then sees the relationships as they were, and a refused `rm -r`
/// leaves the object exactly as it was.
///
/// It also knows which process listed a folder last: `rm -r` (and `find -delete`) list a folder
/// before they empty it, so a removal of a mandatory value by the process that just listed the
/// folder is the start of a delete of the object, which may go ahead (hidden until the rmdir);
/// from anyone else it is refused at once.
///
/// Threading: one lock; never calls out while holding it.
final class RemovalLog: Sendable {
    enum Removal: Sendable {
        case attribute(String, AttributeValue)
        /// A non-optional attribute or to-one: hidden, not changed; refused (shown again) at the
        /// next commit.
        case hiddenProperty(String)
        case toOne(String, ObjectID)
        case member(String, ObjectID, index: Int)
        /// An emptied to-many folder that `rm -r` removed: hidden until the next commit.
        case hiddenFolder(String)
    }

    /// Listings remembered at most: `rm -r` empties a folder right after listing it, so only the
    /// latest matter, and a walk of a million folders must not keep a million entries.
    static let listingLimit = 4096

    private struct State {
        var removals: [ObjectID: [(sequence: Int, removal: Removal)]] = [:]
        var lastListed: [ObjectID: (sequence: Int, pid: Int32)] = [:]
        /// The folders of `lastListed`, oldest first (a folder listed again appears again).
        var listingOrder: [(object: ObjectID, sequence: Int)] = []
        var listingOrderStart = 0
        var sequence = 0
    }

    private let state = Mutex(State())

    func record(_ removal: Removal, in object: ObjectID) {
        state.withLock { state in
            state.sequence += 1
            state.removals[object, default: []].append((state.sequence, removal))
        }
    }

    /// Notes that `object`'s folder was listed from the start: `rm -r` lists a folder before it
    /// empties it, so only removals made after the last listing belong to an `rm -r`.
    func noteListing(of object: ObjectID, by pid: Int32) {
        state.withLock { state in
            state.sequence += 1
            state.lastListed[object] = (state.sequence, pid)
            state.listingOrder.append((object, state.sequence))
            while state.listingOrder.count - state.listingOrderStart > Self.listingLimit {
                let oldest = state.listingOrder[state.listingOrderStart]
                state.listingOrderStart += 1
                // Forgotten unless listed again since.
                if state.lastListed[oldest.object]?.sequence == oldest.sequence { state.lastListed[oldest.object] = nil }
            }
            if state.listingOrderStart >= Self.listingLimit {
                state.listingOrder.removeFirst(state.listingOrderStart)
                state.listingOrderStart = 0
            }
        }
    }

    /// How many folders' last listings are remembered (for tests).
    var rememberedListings: Int { state.withLock { $0.lastListed.count } }

    /// Whether process `pid` listed `object`'s folder last (and so may be emptying it to delete it).
    func isEmptying(_ object: ObjectID, by pid: Int32) -> Bool {
        state.withLock { $0.lastListed[object]?.pid == pid }
    }

    /// The removals in `object`'s folder made since it was last listed (what an `rm -r` did),
    /// taken out so they are not applied twice; earlier ones stay until the commit.
    func takeRecent(in object: ObjectID) -> [Removal] {
        state.withLock { state in
            let since = state.lastListed[object]?.sequence ?? Int.max
            let all = state.removals[object] ?? []
            state.removals[object] = all.filter { $0.sequence < since }
            return all.filter { $0.sequence > since }.map(\.removal)
        }
    }

    func takeAll() -> [ObjectID: [Removal]] {
        state.withLock { state in
            defer {
                state.removals = [:]
                state.lastListed = [:]
                state.listingOrder = []
                state.listingOrderStart = 0
            }
            return state.removals.mapValues { $0.map(\.removal) }
        }
    }

    /// Whether `name` in `object`'s folder is hidden by a removal not yet committed.
    func hides(_ name: String, in object: ObjectID) -> Bool {
        state.withLock { state in
            (state.removals[object] ?? []).contains {
                switch $0.removal {
                case .hiddenProperty(let n), .hiddenFolder(let n): n == name
                default: false
                }
            }
        }
    }
}
