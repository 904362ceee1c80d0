import Foundation
import ObjectGraph
import Synchronization

/// What a copy into the mount (`cp -a`, `rsync`) needs while it runs: folders made by mkdir that
/// show only what was written or linked through them until they settle, the order links were
/// made in, and links that wait for objects not copied yet.
///
/// Tools that copy a tree in create every file of a folder they made with O_EXCL, every subfolder
/// with mkdir and every link with symlink, and fail on what exists already: default values, and
/// what inverse relationships set when the other side was copied first. A folder settles
/// ``settleTime`` seconds after its last change (or when fsync says its writer is done); its
/// object is saved only once settled, so its mandatory values are not judged half-copied.
///
/// Threading: one lock; never calls out while holding it.
final class CopyInSession: Sendable {
    /// An object a link names by its root entity and key.
    struct LinkTarget: Hashable {
        var root: EntityID
        var key: PrimaryKey
    }

    struct FreshFolder {
        var shown: Set<String> = []
        var members: [String: Set<ObjectID>] = [:]
        /// The order links were made in each to-many folder (waiting ones included), which an
        /// ordered relationship follows: `cp -a` copies an ordered folder's links in order.
        var linkOrder: [String: [LinkTarget]] = [:]
        var lastChange = Date()
    }

    /// Seconds a folder made by mkdir stays fresh after its last change: long enough that a copy
    /// in progress never sees it turn normal under it, short enough for a person.
    static let settleTime: Double = 2

    private struct State {
        var fresh: [ObjectID: FreshFolder] = [:]
        var waitingLinks: [LinkTarget: [UInt64]] = [:]
    }

    private let state = Mutex(State())

    // MARK: - Composite folders made by mkdir

    /// A composite's folder shows only while the composite has a value; one made by mkdir (a copy
    /// about to fill it) shows empty meanwhile. Bounded: a folder never filled is forgotten.
    private let madeComposites = Mutex(Set<String>())
    static let maximumMadeComposites = 4096

    func madeComposite(_ path: String, in object: ObjectID) {
        madeComposites.withLock { made in
            if made.count >= Self.maximumMadeComposites { made.removeAll() }
            made.insert("\(object)|\(path)")
        }
    }

    func isMadeComposite(_ path: String, in object: ObjectID) -> Bool {
        madeComposites.withLock { $0.contains("\(object)|\(path)") }
    }

    func forgetComposite(_ path: String, in object: ObjectID) {
        _ = madeComposites.withLock { $0.remove("\(object)|\(path)") }
    }

    // MARK: - Fresh folders

    func markFresh(_ object: ObjectID) { state.withLock { $0.fresh[object] = FreshFolder() } }

    func isFresh(_ object: ObjectID) -> Bool { state.withLock { $0.fresh[object] != nil } }

    /// The objects whose folders are fresh: the commit leaves them out.
    var freshObjects: Set<ObjectID> { state.withLock { Set($0.fresh.keys) } }

    var hasFreshFolders: Bool { state.withLock { !$0.fresh.isEmpty } }

    /// Shows `name` in a fresh folder (it was written, linked or made).
    func show(_ name: String, in object: ObjectID) {
        state.withLock { state in
            state.fresh[object]?.shown.insert(name)
            state.fresh[object]?.lastChange = Date()
        }
    }

    /// Whether `name` is hidden as an untouched entry of a fresh folder.
    func hides(_ name: String, in object: ObjectID) -> Bool {
        state.withLock { state in
            guard let fresh = state.fresh[object] else { return false }
            return !fresh.shown.contains(name)
        }
    }

    /// Shows `member` in to-many folder `relationship` of a fresh folder.
    func showMember(_ member: ObjectID, of relationship: String, in object: ObjectID) {
        state.withLock { state in
            state.fresh[object]?.shown.insert(relationship)
            state.fresh[object]?.members[relationship, default: []].insert(member)
            state.fresh[object]?.lastChange = Date()
        }
    }

    /// The members a to-many folder shows: all of them, or in a fresh folder those linked through it.
    func visibleMembers(_ members: [ObjectID], of relationship: String, in object: ObjectID) -> [ObjectID] {
        state.withLock { state in
            guard let fresh = state.fresh[object] else { return members }
            let shown = fresh.members[relationship] ?? []
            return members.filter { shown.contains($0) }
        }
    }

    /// Notes that a link to `target` was made in to-many folder `relationship` of a fresh folder.
    func noteLink(to target: LinkTarget, in relationship: String, of object: ObjectID) {
        state.withLock { state in
            guard state.fresh[object] != nil else { return }
            state.fresh[object]?.linkOrder[relationship, default: []].append(target)
            state.fresh[object]?.lastChange = Date()
        }
    }

    /// The order links were made in to-many folder `relationship` of a fresh folder, if it is one.
    func linkOrder(of relationship: String, in object: ObjectID) -> [LinkTarget]? {
        state.withLock { $0.fresh[object]?.linkOrder[relationship] }
    }

    /// Ends the fresh state of the folders quiet for ``settleTime`` seconds; returns their objects.
    func settle(now: Date = Date()) -> [ObjectID] {
        state.withLock { state in
            let quiet = state.fresh.filter { now.timeIntervalSince($0.value.lastChange) >= Self.settleTime }.map(\.key)
            for object in quiet { state.fresh[object] = nil }
            return quiet
        }
    }

    /// Ends the fresh state of `object`'s folder, or of every folder (fsync, unmount).
    func endFreshness(of object: ObjectID?) -> [ObjectID] {
        state.withLock { state in
            guard let object else {
                defer { state.fresh = [:] }
                return Array(state.fresh.keys)
            }
            return state.fresh.removeValue(forKey: object) == nil ? [] : [object]
        }
    }

    // MARK: - Links to objects that do not exist yet

    /// Keeps scratch link `serial` until an object with `target` appears.
    func addWaitingLink(_ serial: UInt64, to target: LinkTarget) {
        state.withLock { $0.waitingLinks[target, default: []].append(serial) }
    }

    func takeWaitingLinks(to target: LinkTarget) -> [UInt64] {
        state.withLock { $0.waitingLinks.removeValue(forKey: target) ?? [] }
    }

    /// Every link still waiting, taken out (at unmount).
    func takeAllWaitingLinks() -> [UInt64] {
        state.withLock { state in
            defer { state.waitingLinks = [:] }
            return state.waitingLinks.values.flatMap { $0 }
        }
    }

    var waitingLinkCount: Int { state.withLock { $0.waitingLinks.values.reduce(0) { $0 + $1.count } } }
}
