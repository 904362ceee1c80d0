import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// What the write path keeps between requests: open files' buffers, editors' scratch files,
/// removals that `rmdir` of their object may still take back, and modification times.
///
/// Threading: one lock; never calls out while holding it.
final class WriteState: Sendable {
    /// An open attribute or scratch file with the content it will have when flushed.
    struct OpenFile {
        var node: Node
        /// The new content, once the file was written or truncated through this handle.
        var buffer: Data?
        var dirty = false
        /// Whether data was written through this handle (not only truncated): a flush of a merely
        /// truncated buffer waits for the writes or the release (the shell's `>` closes a
        /// duplicate descriptor before it writes anything).
        var written = false
    }

    /// A file or symlink a tool made under a name that is not a property (an editor's temporary
    /// file, `ln -sf`'s temporary link), in an object folder or a to-many folder.
    struct ScratchFile {
        var parent: Node
        var name: String
        var content: Data
        var modified: Date
        /// The target, when the scratch entry is a symlink.
        var linkTarget: String?
    }

    /// A change a removal inside an object folder made, kept until the next commit so that
    /// `rmdir` of the object (what `rm -r` does last) can take it back and delete the object by
    /// its delete rules instead.
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

    private struct State {
        var nextHandle: UInt64 = 1
        var nextScratch: UInt64 = 1
        var open: [UInt64: OpenFile] = [:]
        var scratch: [UInt64: ScratchFile] = [:]
        /// The scratch files of each folder by name: lookups in object folders must not scan every
        /// scratch file (a copy in progress holds thousands of waiting links).
        var scratchByFolder: [Node: [String: UInt64]] = [:]
        var removals: [ObjectID: [(sequence: Int, removal: Removal)]] = [:]
        var lastListed: [ObjectID: Int] = [:]
        var sequence = 0
        var fresh: [ObjectID: FreshFolder] = [:]
        var pendingLinks: [LinkTarget: [UInt64]] = [:]
        var modified: [ObjectID: Date] = [:]
        var commits = 0
        var dirty = false
        var lastChange = Date.distantPast
    }

    private let state = Mutex(State())

    // MARK: - Open files

    func open(_ node: Node, buffer: Data?) -> FuseKit.FileHandle {
        state.withLock { state in
            let handle = state.nextHandle
            state.nextHandle += 1
            state.open[handle] = OpenFile(node: node, buffer: buffer, dirty: buffer != nil)
            return FuseKit.FileHandle(handle)
        }
    }

    func openFile(_ handle: FuseKit.FileHandle) -> OpenFile? { state.withLock { $0.open[handle.rawValue] } }

    func update(_ handle: FuseKit.FileHandle, _ change: (inout OpenFile) -> Void) {
        state.withLock { state in
            if state.open[handle.rawValue] != nil { change(&state.open[handle.rawValue]!) }
        }
    }

    func close(_ handle: FuseKit.FileHandle) { _ = state.withLock { $0.open.removeValue(forKey: handle.rawValue) } }

    func bufferedContent(_ handle: FuseKit.FileHandle) -> Data? { state.withLock { $0.open[handle.rawValue]?.buffer } }

    /// The buffered content of `node` in some open handle, if one has written to it: what `stat`
    /// reports while an editor has the file open.
    func dirtyContent(of node: Node) -> Data? {
        state.withLock { state in state.open.values.first { $0.node == node && $0.dirty }?.buffer }
    }

    // MARK: - Scratch files

    func scratchFile(named name: String, in parent: Node) -> UInt64? {
        state.withLock { $0.scratchByFolder[parent]?[name] }
    }

    func scratchFiles(in parent: Node) -> [(name: String, serial: UInt64)] {
        state.withLock { state in
            (state.scratchByFolder[parent] ?? [:]).map { ($0.key, $0.value) }.sorted { $0.name < $1.name }
        }
    }

    func createScratch(named name: String, in parent: Node, content: Data = Data(), linkTarget: String? = nil) -> UInt64 {
        state.withLock { state in
            let serial = state.nextScratch
            state.nextScratch += 1
            if let old = state.scratchByFolder[parent]?[name] { state.scratch[old] = nil }
            state.scratch[serial] = ScratchFile(
                parent: parent, name: name, content: content, modified: Date(), linkTarget: linkTarget)
            state.scratchByFolder[parent, default: [:]][name] = serial
            return serial
        }
    }

    func scratch(_ serial: UInt64) -> ScratchFile? { state.withLock { $0.scratch[serial] } }
    func scratchContent(_ serial: UInt64) -> Data? { scratch(serial)?.content }
    func scratchSize(_ serial: UInt64) -> Int? { scratch(serial)?.content.count }
    func scratchTime(_ serial: UInt64) -> Date? { scratch(serial)?.modified }

    func setScratch(_ serial: UInt64, content: Data) {
        state.withLock { state in
            state.scratch[serial]?.content = content
            state.scratch[serial]?.modified = Date()
        }
    }

    func renameScratch(_ serial: UInt64, to name: String, in parent: Node) {
        state.withLock { state in
            guard let old = state.scratch[serial] else { return }
            state.scratchByFolder[old.parent]?[old.name] = nil
            if let replaced = state.scratchByFolder[parent]?[name] { state.scratch[replaced] = nil }
            state.scratch[serial]?.name = name
            state.scratch[serial]?.parent = parent
            state.scratchByFolder[parent, default: [:]][name] = serial
        }
    }

    @discardableResult
    func removeScratch(_ serial: UInt64) -> ScratchFile? {
        state.withLock { state in
            guard let removed = state.scratch.removeValue(forKey: serial) else { return nil }
            if state.scratchByFolder[removed.parent]?[removed.name] == serial {
                state.scratchByFolder[removed.parent]?[removed.name] = nil
            }
            return removed
        }
    }

    /// Removes the links a copy put in the fetched folders of `objects` (their folders compute
    /// their own once the copy is done).
    func removeFetchedScratch(of objects: [ObjectID]) {
        let set = Set(objects)
        state.withLock { state in
            for (serial, file) in state.scratch {
                guard case .fetched(let object, _) = file.parent, set.contains(object) else { continue }
                state.scratch[serial] = nil
                state.scratchByFolder[file.parent] = nil
            }
        }
    }

    /// Removes the scratch files of an object's folder and of its to-many folders.
    func removeScratchFiles(of object: ObjectID) {
        state.withLock { state in
            for (serial, file) in state.scratch where file.parent.object == object {
                state.scratch[serial] = nil
                state.scratchByFolder[file.parent] = nil
            }
        }
    }

    // MARK: - Removals

    func recordRemoval(_ removal: Removal, in object: ObjectID) {
        state.withLock { state in
            state.sequence += 1
            state.removals[object, default: []].append((state.sequence, removal))
        }
    }

    /// Notes that `object`'s folder was listed from the start: `rm -r` lists a folder before it
    /// empties it, so only removals made after the last listing belong to an `rm -r`.
    func noteListing(of object: ObjectID) {
        state.withLock { state in
            state.sequence += 1
            state.lastListed[object] = state.sequence
        }
    }

    /// The removals in `object`'s folder made since it was last listed (what an `rm -r` did),
    /// taken out so they are not applied twice; earlier ones stay until the commit.
    func takeRecentRemovals(in object: ObjectID) -> [Removal] {
        state.withLock { state in
            let since = state.lastListed[object] ?? Int.max
            let all = state.removals[object] ?? []
            state.removals[object] = all.filter { $0.sequence < since }
            return all.filter { $0.sequence > since }.map(\.removal)
        }
    }

    func takeAllRemovals() -> [ObjectID: [Removal]] {
        state.withLock { state in
            defer {
                state.removals = [:]
                state.lastListed = [:]
            }
            return state.removals.mapValues { $0.map(\.removal) }
        }
    }

    /// Whether `name` in `object`'s folder is hidden: by a removal not yet committed, or as an
    /// untouched entry of a folder mkdir made.
    func isHidden(_ name: String, in object: ObjectID) -> Bool {
        state.withLock { state in
            if let fresh = state.fresh[object], !fresh.shown.contains(name) { return true }
            return (state.removals[object] ?? []).contains {
                switch $0.removal {
                case .hiddenProperty(let n), .hiddenFolder(let n): n == name
                default: false
                }
            }
        }
    }

    // MARK: - Folders made by mkdir

    /// What a folder made by mkdir shows before its first commit: only what was written or linked
    /// through it. Tools that copy a tree in (`cp -a`, `rsync`) create every file of a folder they
    /// made with O_EXCL, every subfolder with mkdir and every link with symlink, and fail on what
    /// exists already: default values, and what inverse relationships set when the other side was
    /// copied first.
    struct FreshFolder {
        var shown: Set<String> = []
        var members: [String: Set<ObjectID>] = [:]
        /// The order links were made in each to-many folder (pending ones included), which an
        /// ordered relationship follows: `cp -a` copies an ordered folder's links in order.
        var linkOrder: [String: [LinkTarget]] = [:]
        var lastChange = Date()
    }

    /// Seconds a fresh folder stays fresh after its last change: long enough that a copy in
    /// progress never sees it turn normal under it, short enough for a person.
    static let freshness: Double = 2

    func markFresh(_ object: ObjectID) { state.withLock { $0.fresh[object] = FreshFolder() } }

    /// Notes that a link to `target` was made in to-many folder `relationship` of a fresh folder.
    func noteLink(to target: LinkTarget, in relationship: String, of object: ObjectID) {
        state.withLock { state in
            guard state.fresh[object] != nil else { return }
            state.fresh[object]!.linkOrder[relationship, default: []].append(target)
            state.fresh[object]!.lastChange = Date()
        }
    }

    /// The order links were made in to-many folder `relationship` of a fresh folder, if it is one.
    func linkOrder(of relationship: String, in object: ObjectID) -> [LinkTarget]? {
        state.withLock { $0.fresh[object]?.linkOrder[relationship] }
    }

    func isFresh(_ object: ObjectID) -> Bool { state.withLock { $0.fresh[object] != nil } }

    /// Shows `name` in a fresh folder (it was written, linked or made).
    func show(_ name: String, in object: ObjectID) {
        state.withLock { state in
            state.fresh[object]?.shown.insert(name)
            state.fresh[object]?.lastChange = Date()
        }
    }

    /// Shows `member` in to-many folder `relationship` of a fresh folder.
    func showMember(_ member: ObjectID, of relationship: String, in object: ObjectID) {
        state.withLock { state in
            state.fresh[object]?.shown.insert(relationship)
            state.fresh[object]?.members[relationship, default: []].insert(member)
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

    /// Ends the fresh state of the folders quiet for ``freshness`` seconds (after a commit);
    /// returns their objects.
    func clearFresh() -> [ObjectID] {
        state.withLock { state in
            let now = Date()
            let quiet = state.fresh.filter { now.timeIntervalSince($0.value.lastChange) >= Self.freshness }.map(\.key)
            for object in quiet { state.fresh[object] = nil }
            return quiet
        }
    }

    var hasFreshFolders: Bool { state.withLock { !$0.fresh.isEmpty } }

    /// Ends the fresh state of `object`'s folder, or of every folder (fsync says the writer is done).
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

    /// An object a link names by its root entity and key.
    struct LinkTarget: Hashable {
        var root: EntityID
        var key: PrimaryKey
    }

    /// Keeps scratch link `serial` until an object with `target` appears (`cp -a` copies a link
    /// before the object it points at).
    func addPendingLink(_ serial: UInt64, to target: LinkTarget) {
        state.withLock { $0.pendingLinks[target, default: []].append(serial) }
    }

    func takePendingLinks(to target: LinkTarget) -> [UInt64] {
        state.withLock { $0.pendingLinks.removeValue(forKey: target) ?? [] }
    }

    func pendingLinkCount() -> Int { state.withLock { $0.pendingLinks.values.reduce(0) { $0 + $1.count } } }

    // MARK: - Changes and commits

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

    /// Whether changes are pending and quiet for `delay` seconds.
    func isDueForCommit(after delay: Double) -> Bool {
        state.withLock { $0.dirty && Date().timeIntervalSince($0.lastChange) >= delay }
    }

    func markCommitted() {
        state.withLock { state in
            state.dirty = false
            state.commits += 1
        }
    }

    var commitCount: Int { state.withLock { $0.commits } }
}
