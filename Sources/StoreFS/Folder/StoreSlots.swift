import Foundation
import FuseKit
import Logging
import Synchronization

/// The stores a folder mount has open, each in a slot (1–63) that its inode numbers carry in
/// bits 54–59 (``Node/slotShift``). A device holds hundreds of stores; 63 are open at once, and
/// a slot is given to another store only once the kernel holds no inode of the one in it.
///
/// The kernel says what it holds: every entry the mount gives (lookup, readdirplus, create,
/// mkdir, mknod, symlink) is counted for its slot (``took(_:count:)``) and every FORGET taken
/// off (``forgot(_:count:)``), as libfuse's lookup counts are. A slot whose count is zero, with
/// no folder of its store open and no request inside it, can be closed and given again: no
/// number of it can reach the mount later, so the slot's next store never answers for the last
/// one's inodes. A store's own folder is not numbered in its slot (it is a node of the tree,
/// ``TreeNodes``), so a closed store opens again, in any free slot, on its next use.
///
/// To keep slots free, once more than ``highWater`` are taken the least recently used stores
/// that no process is inside ask the kernel to drop what it keeps of them (an invalidation of
/// each name the kernel looked up at the store's top): the kernel forgets their inodes and their
/// slots come free. A store that needs a slot when all 63 are held waits up to ``patience`` for
/// one, then fails with EMFILE (its message in the log).
///
/// Each slot's generation goes up when it is given again, and entries carry it, as a second
/// guard.
///
/// Threading: one lock guards the table. A store opens outside it, in a slot claimed for it
/// first: other first lookups of that store wait for the one open (``Opening``), lookups of
/// other stores do not wait at all. Stores are closed outside the lock.
final class StoreSlots: Sendable {
    /// Slots there are (bits 54–59, 0 meaning none).
    static let count = 63
    /// Above this many open stores, the least recently used are asked to be released.
    static let highWater = 48
    /// ...down to this many.
    static let lowWater = 40
    /// How long a store that needs a slot waits for the kernel to give one back.
    static let patience: Double = 2

    struct Slot {
        var path: String
        var fileSystem: StoreFileSystem
        /// The store's folder: a node of the tree.
        var folder: InodeNumber
        var generation: UInt64
        /// Entries of this slot the kernel holds.
        var lookups: UInt64 = 0
        /// Requests inside the store now, and its folders open.
        var busy = 0
        var openFolders = 0
        var lastUsed: UInt64 = 0
        /// Names the kernel looked up (or was given by readdirplus) at the store's top.
        var topNames: Set<String> = []
        /// What to do once the store is closed (a backup's store removes its private folder).
        var closed: @Sendable () -> Void
    }

    private struct State {
        var slots: [Int: Slot] = [:]
        var byPath: [String: Int] = [:]
        var generations: [Int: UInt64] = [:]
        var clock: UInt64 = 0
        var invalidator: (any KernelCacheInvalidator)?
        /// What stores closed to free their slots could not save.
        var unsaved: [UnsavedChanges] = []
        /// Stores being opened, by path, and the slots claimed for them.
        var opening: [String: Opening] = [:]
        var claimed: Set<Int> = []
    }

    /// A store being opened in a slot claimed for it: other first lookups of the store wait here
    /// for the one open.
    final class Opening: @unchecked Sendable {
        // NSCondition guards `result`; @unchecked for that reason.
        private let condition = NSCondition()
        private var result: Result<Int, FileSystemError>?

        func finish(_ outcome: Result<Int, FileSystemError>) {
            condition.lock()
            result = outcome
            condition.broadcast()
            condition.unlock()
        }

        /// The slot once the store is open, or why it did not open.
        func wait() throws(FileSystemError) -> Int {
            condition.lock()
            defer { condition.unlock() }
            while true {
                if let result { return try result.get() }
                condition.wait()
            }
        }
    }

    private enum Claim {
        case open(Int)
        case joined(Opening)
        case leads(Opening)
    }

    private let state = Mutex(State())
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func didMount(invalidator: any KernelCacheInvalidator) {
        let slots = state.withLock { state in
            state.invalidator = invalidator
            return state.slots
        }
        for (index, slot) in slots {
            slot.fileSystem.didMount(invalidator: slotInvalidator(index, slot.folder, invalidator))
        }
    }

    private func slotInvalidator(_ index: Int, _ folder: InodeNumber, _ outer: any KernelCacheInvalidator)
        -> SlotInvalidator
    {
        SlotInvalidator(slot: index, folder: folder, outer: outer)
    }

    /// Closes every store (the unmount).
    func closeAll() {
        let slots = state.withLock { state in
            defer { state.slots = [:]; state.byPath = [:] }
            return Array(state.slots.values)
        }
        for slot in slots { close(slot) }
    }

    var unsavedChanges: UnsavedChanges? {
        let (open, closed) = state.withLock { (Array($0.slots.values), $0.unsaved) }
        return UnsavedChanges.combined(closed + open.compactMap(\.fileSystem.unsavedChanges))
    }

    var openStores: [(path: String, fileSystem: StoreFileSystem)] {
        state.withLock { $0.slots.values.map { ($0.path, $0.fileSystem) } }
    }

    /// The slot of the open store at `path`, if it is open.
    func slot(at path: String) -> Int? { state.withLock { $0.byPath[path] } }

    /// The paths of open stores in folder `folder` (a store made by mkdir has no file until it
    /// saves).
    func openNames(in folder: String) -> [String] {
        state.withLock { state in
            state.byPath.keys.filter { Self.parent(of: $0) == folder }.map { Self.name(of: $0) }
        }
    }

    // MARK: - Using a store

    /// Runs `body` with the store in `slot` (ENOENT when no store is there: its numbers are
    /// stale); the slot is not closed meanwhile.
    func using<T>(_ slot: Int, _ body: (StoreFileSystem, UInt64) throws(FileSystemError) -> T) throws(FileSystemError)
        -> T
    {
        guard
            let (fileSystem, generation) = state.withLock({ state -> (StoreFileSystem, UInt64)? in
                guard var found = state.slots[slot] else { return nil }
                state.clock += 1
                found.lastUsed = state.clock
                found.busy += 1
                state.slots[slot] = found
                return (found.fileSystem, found.generation)
            })
        else { throw .notFound }
        defer { state.withLock { $0.slots[slot]?.busy -= 1 } }
        return try body(fileSystem, generation)
    }

    /// Runs `body` with the store at `path`, opening it in a free slot first when it is not open
    /// (`open` makes its filesystem; `closed` runs once it is closed).
    func using<T>(
        path: String, folder: InodeNumber, open: () throws(FileSystemError) -> (StoreFileSystem, @Sendable () -> Void),
        _ body: (StoreFileSystem, Int, UInt64) throws(FileSystemError) -> T
    ) throws(FileSystemError) -> T {
        let index = try slot(for: path, folder: folder, open: open)
        return try using(index) { (fileSystem, generation) throws(FileSystemError) -> T in
            try body(fileSystem, index, generation)
        }
    }

    private func slot(
        for path: String, folder: InodeNumber,
        open: () throws(FileSystemError) -> (StoreFileSystem, @Sendable () -> Void)
    ) throws(FileSystemError) -> Int {
        let claim = state.withLock { state -> Claim in
            if let index = state.byPath[path] { return .open(index) }
            if let opening = state.opening[path] { return .joined(opening) }
            let opening = Opening()
            state.opening[path] = opening
            return .leads(opening)
        }
        switch claim {
        case .open(let index): return index
        case .joined(let opening): return try opening.wait()
        case .leads(let opening):
            let outcome: Result<Int, FileSystemError>
            do throws(FileSystemError) {
                outcome = .success(try openClaimed(path: path, folder: folder, open: open))
            } catch {
                outcome = .failure(error)
            }
            state.withLock { $0.opening[path] = nil }
            opening.finish(outcome)
            releaseLeastUsed()
            return try outcome.get()
        }
    }

    /// Opens the store at `path` in a slot claimed for it (the slot is given back if the open
    /// fails).
    private func openClaimed(
        path: String, folder: InodeNumber, open: () throws(FileSystemError) -> (StoreFileSystem, @Sendable () -> Void)
    ) throws(FileSystemError) -> Int {
        let free = try freeSlot(for: path)
        let opened: (StoreFileSystem, @Sendable () -> Void)
        do throws(FileSystemError) {
            opened = try open()
        } catch {
            state.withLock { _ = $0.claimed.remove(free) }
            throw error
        }
        let (fileSystem, closed) = opened
        let invalidator = state.withLock { state -> (any KernelCacheInvalidator)? in
            let generation = state.generations[free, default: 0] + 1
            state.generations[free] = generation
            state.clock += 1
            state.claimed.remove(free)
            state.slots[free] = Slot(
                path: path, fileSystem: fileSystem, folder: folder, generation: generation, lastUsed: state.clock,
                closed: closed)
            state.byPath[path] = free
            return state.invalidator
        }
        if let invalidator { fileSystem.didMount(invalidator: slotInvalidator(free, folder, invalidator)) }
        return free
    }

    /// A slot for a new store: a free one, or one whose store can be closed now (the least
    /// recently used), waiting up to ``patience`` for the kernel to give one back. The slot is
    /// claimed, so no other store takes it before this one is in it.
    private func freeSlot(for path: String) throws(FileSystemError) -> Int {
        let deadline = Date().addingTimeInterval(Self.patience)
        var asked = false
        while true {
            let (found, evicted) = state.withLock { state -> (Int?, Slot?) in
                if let free = (1...Self.count).first(where: { state.slots[$0] == nil && !state.claimed.contains($0) }) {
                    state.claimed.insert(free)
                    return (free, nil)
                }
                let idle = state.slots.filter {
                    $0.value.lookups == 0 && $0.value.busy == 0 && $0.value.openFolders == 0
                }
                guard let oldest = idle.min(by: { $0.value.lastUsed < $1.value.lastUsed }) else { return (nil, nil) }
                state.slots[oldest.key] = nil
                state.byPath[oldest.value.path] = nil
                state.claimed.insert(oldest.key)
                return (oldest.key, oldest.value)
            }
            if let evicted {
                logger.info("\(evicted.path): closed to make room for \(path) (slot \(found ?? 0))")
                close(evicted)
            }
            if let found { return found }
            if !asked {
                asked = true
                release(count: Self.count - Self.lowWater)
            }
            guard Date() < deadline else {
                logger.error(
                    "open \(path): all \(Self.count) store slots are held by the kernel (processes inside those stores, or files open in them); leave some and try again"
                )
                throw FileSystemError(rawValue: EMFILE)
            }
            usleep(10_000)
        }
    }

    /// Asks the kernel to let go of the least recently used stores beyond ``lowWater`` when
    /// more than ``highWater`` are open.
    private func releaseLeastUsed() {
        let open = state.withLock { $0.slots.count }
        guard open > Self.highWater else { return }
        release(count: open - Self.lowWater)
    }

    /// Asks the kernel to drop what it keeps of the `count` least recently used stores that no
    /// process is in (no folder of theirs open, no request inside).
    private func release(count: Int) {
        let (invalidator, targets) = state.withLock { state -> ((any KernelCacheInvalidator)?, [Slot]) in
            let idle = state.slots.values.filter { $0.busy == 0 && $0.openFolders == 0 && $0.lookups > 0 }
            return (state.invalidator, Array(idle.sorted { $0.lastUsed < $1.lastUsed }.prefix(count)))
        }
        guard let invalidator else { return }
        for slot in targets {
            for name in slot.topNames { invalidator.invalidateEntry(parent: slot.folder, name: name) }
        }
    }

    private func close(_ slot: Slot) {
        slot.fileSystem.willUnmount()
        slot.fileSystem.coordinator.close()
        if let unsaved = slot.fileSystem.unsavedChanges { state.withLock { $0.unsaved.append(unsaved) } }
        slot.closed()
    }

    // MARK: - What the kernel holds

    /// The kernel took `count` entries of `slot` (named `name` at the store's top when given).
    func took(_ slot: Int, count: UInt64 = 1, topName: String? = nil) {
        state.withLock { state in
            state.slots[slot]?.lookups += count
            if let topName { state.slots[slot]?.topNames.insert(topName) }
        }
    }

    /// The kernel forgot `count` lookups of an inode of `slot`.
    func forgot(_ slot: Int, count: UInt64) {
        state.withLock { state in
            guard let lookups = state.slots[slot]?.lookups else { return }
            state.slots[slot]?.lookups = lookups >= count ? lookups - count : 0
        }
    }

    /// A folder of the store in `slot` was opened (`delta` 1) or released (-1).
    func folderOpened(_ slot: Int, _ delta: Int) {
        state.withLock { $0.slots[slot]?.openFolders += delta }
    }

    /// The slot's generation (0 when no store is in it).
    func generation(_ slot: Int) -> UInt64 { state.withLock { $0.slots[slot]?.generation ?? 0 } }

    /// The store folder's node of `slot`.
    func folder(_ slot: Int) -> InodeNumber? { state.withLock { $0.slots[slot]?.folder } }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    static func name(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// Passes a store's invalidations on with its slot in the inode numbers (its top as its folder's
/// node in the tree).
struct SlotInvalidator: KernelCacheInvalidator {
    let slot: Int
    let folder: InodeNumber
    let outer: any KernelCacheInvalidator

    private func map(_ inode: InodeNumber) -> InodeNumber {
        StoreFolderFileSystem.outer(inode, slot: slot, folder: folder)
    }

    func invalidateEntry(parent: InodeNumber, name: String) { outer.invalidateEntry(parent: map(parent), name: name) }
    func invalidateInode(_ inode: InodeNumber) { outer.invalidateInode(map(inode)) }
    func preload(_ files: [(inode: InodeNumber, data: Data)]) { outer.preload(files.map { (map($0.inode), $0.data) }) }
    func notifyDelete(parent: InodeNumber, child: InodeNumber, name: String) {
        outer.notifyDelete(parent: map(parent), child: map(child), name: name)
    }
}
