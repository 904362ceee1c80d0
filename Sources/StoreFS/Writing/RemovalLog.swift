import Foundation
import ObjectGraph
import Synchronization

/// Removals inside object folders that are not applied yet: what `rm -r` (and `find -delete`)
/// remove in a folder before its rmdir, and folders hidden until the next commit.
///
/// `rm -r` opens a folder, removes everything in it, then removes the folder. Removing the files
/// of an object that is being deleted is not an edit of them: such removals, by the process that
/// opened the folder last, are only hidden (nothing changes in the context), and the rmdir that
/// follows deletes the object by its delete rules as it is: a Deny rule sees its relationships,
/// a derived attribute or a mandatory value is no obstacle, and a commit that comes in between
/// saves nothing half-emptied. When no rmdir comes within ``settleTime`` of the folder's last
/// removal, the removals are what they looked like: applied where they can be (optional
/// values, relationships) and shown again, with the reason in the log, where they cannot.
/// Removals by other processes are applied (or refused) at once, elsewhere.
///
/// Threading: one lock; never calls out while holding it.
final class RemovalLog: Sendable {
    enum Removal: Sendable, Equatable {
        /// An attribute's file or a to-one's link.
        case property(String)
        /// A link in a to-many folder.
        case member(relationship: String, ObjectID)
        /// An emptied to-many folder, or a fetched folder, that was removed.
        case folder(String)
    }

    /// Seconds after a folder's last removal before its removals stop waiting for its rmdir:
    /// long enough for `rm -r` of a folder with many links, short enough for a person.
    static let settleTime: Double = 2

    /// Openings remembered at most: `rm -r` empties a folder right after opening it, so only the
    /// latest matter, and a walk of a million folders must not keep a million entries.
    static let openingLimit = 4096

    private struct Hidden {
        var removals: [Removal] = []
        var lastChange = Date()
    }

    private struct State {
        var hidden: [ObjectID: Hidden] = [:]
        var lastOpened: [ObjectID: (sequence: Int, pid: Int32)] = [:]
        /// The folders of `lastOpened`, oldest first (a folder opened again appears again).
        var openingOrder: [(object: ObjectID, sequence: Int)] = []
        var openingOrderStart = 0
        var sequence = 0
    }

    private let state = Mutex(State())

    // MARK: - Who is emptying a folder

    /// Notes that process `pid` opened `object`'s folder.
    func noteOpening(of object: ObjectID, by pid: Int32) {
        state.withLock { state in
            state.sequence += 1
            state.lastOpened[object] = (state.sequence, pid)
            state.openingOrder.append((object, state.sequence))
            while state.openingOrder.count - state.openingOrderStart > Self.openingLimit {
                let oldest = state.openingOrder[state.openingOrderStart]
                state.openingOrderStart += 1
                // Forgotten unless opened again since.
                if state.lastOpened[oldest.object]?.sequence == oldest.sequence {
                    state.lastOpened[oldest.object] = nil
                }
            }
            if state.openingOrderStart >= Self.openingLimit {
                state.openingOrder.removeFirst(state.openingOrderStart)
                state.openingOrderStart = 0
            }
        }
    }

    /// How many folders' last openings are remembered (for tests).
    var rememberedOpenings: Int { state.withLock { $0.lastOpened.count } }

    /// Whether process `pid` opened `object`'s folder last (and so may be emptying it to delete it).
    func isEmptying(_ object: ObjectID, by pid: Int32) -> Bool {
        state.withLock { $0.lastOpened[object]?.pid == pid }
    }

    // MARK: - Hidden removals

    func hide(_ removal: Removal, in object: ObjectID, now: Date = Date()) {
        state.withLock { state in
            state.hidden[object, default: Hidden()].removals.append(removal)
            state.hidden[object]?.lastChange = now
        }
    }

    /// Whether `name` in `object`'s folder (a property or a folder) is hidden.
    func hides(_ name: String, in object: ObjectID) -> Bool {
        state.withLock { state in
            (state.hidden[object]?.removals ?? []).contains {
                switch $0 {
                case .property(let n), .folder(let n): n == name
                case .member: false
                }
            }
        }
    }

    /// `members` of to-many `relationship` of `object` but those whose links are hidden.
    func visibleMembers(_ members: [ObjectID], of relationship: String, in object: ObjectID) -> [ObjectID] {
        state.withLock { state in
            guard let hidden = state.hidden[object] else { return members }
            let gone = Set(
                hidden.removals.compactMap { removal -> ObjectID? in
                    if case .member(relationship, let member) = removal { return member }
                    return nil
                })
            return gone.isEmpty ? members : members.filter { !gone.contains($0) }
        }
    }

    /// Takes back a hidden removal that a new write, link or folder replaces.
    func unhide(_ removal: Removal, in object: ObjectID) {
        state.withLock { state in
            state.hidden[object]?.removals.removeAll { $0 == removal }
            if state.hidden[object]?.removals.isEmpty == true { state.hidden[object] = nil }
        }
    }

    /// The hidden removals of `object`, taken out: its rmdir deletes it, and they go with it.
    @discardableResult
    /// The hidden removals of `object`'s properties that `matches` picks, taken out (the rmdir of
    /// a composite's folder applies those of its elements).
    func takeProperties(of object: ObjectID, where matches: (String) -> Bool) -> [String] {
        state.withLock { state in
            guard var hidden = state.hidden[object] else { return [] }
            var taken: [String] = []
            hidden.removals.removeAll { removal in
                guard case .property(let name) = removal, matches(name) else { return false }
                taken.append(name)
                return true
            }
            state.hidden[object] = hidden.removals.isEmpty ? nil : hidden
            return taken
        }
    }

    func take(of object: ObjectID) -> [Removal] {
        state.withLock { $0.hidden.removeValue(forKey: object)?.removals ?? [] }
    }

    /// The hidden removals of folders quiet for ``settleTime`` (every folder's when `all`), taken
    /// out: no rmdir came for them.
    func takeSettled(all: Bool = false, now: Date = Date()) -> [ObjectID: [Removal]] {
        state.withLock { state in
            var settled: [ObjectID: [Removal]] = [:]
            for (object, hidden) in state.hidden
            where all || now.timeIntervalSince(hidden.lastChange) >= Self.settleTime {
                settled[object] = hidden.removals
            }
            for object in settled.keys { state.hidden[object] = nil }
            if all { state.lastOpened = [:]; state.openingOrder = []; state.openingOrderStart = 0 }
            return settled
        }
    }

    /// Whether some folder's removals are quiet for ``settleTime`` and wait for a commit.
    func hasSettled(now: Date = Date()) -> Bool {
        state.withLock { state in
            state.hidden.values.contains { now.timeIntervalSince($0.lastChange) >= Self.settleTime }
        }
    }
}
