import Foundation
import FuseKit
import Logging
import ObjectGraph
import Synchronization

/// flock and POSIX locks of a mount whose store holds locks for every mount of it
/// (``SharedLockingStore``, the PostgreSQL store): which processes of this mount hold what, and
/// the one lock the mount holds in the store for them.
///
/// Within the mount, owners (the kernel's lock owners) exclude each other here; across mounts the
/// store's lock does: it is held while any owner here holds a lock, exclusive while one holds an
/// exclusive lock. A change that needs the store's lock to change asks the store (one round trip);
/// one that does not (a second reader) asks nothing.
///
/// A blocked lock polls: it tries again when an owner of this mount lets go of the name, and
/// otherwise after a backoff from 1 ms up to ``longestBackoff`` (the store never waits, so other
/// mounts' releases are seen by trying), and stops with EINTR as soon as its request is
/// interrupted. No lock is held while it waits; ``state`` is held for one round trip at most.
///
/// When the store's lock session changes (its connection broke and was made again) every lock
/// the old session held is gone: the server let go of them, and other mounts may have taken
/// them. Those owners' locks are dropped here and the loss is logged; nothing can tell the
/// processes, as with NFS locks lost by a server restart.
///
/// Threading: every method may be called from any thread.
final class SharedFileLocks: Sendable {
    struct Name: Hashable {
        var inode: InodeNumber
        var family: FileLockFamily
    }

    struct Holding {
        var mode: FileLockMode
        var pid: Int32
        var handle: FuseKit.FileHandle
    }

    struct Entry {
        var holders: [UInt64: Holding] = [:]
        /// What the mount holds in the store for them.
        var held: SharedLockMode?
    }

    private struct State {
        var entries: [Name: Entry] = [:]
        var session: Int?
        /// Waiters of this mount, woken when an owner here lets go of a name.
        var waiters: [Name: [Int: DispatchSemaphore]] = [:]
        var nextWaiter = 0
    }

    static let longestBackoff = 0.05

    private let store: any SharedLockingStore
    private let logger: Logger
    private let state = Mutex(State())
    /// Forgets what other mounts changed, in this mount and in the kernel, before a lock newly
    /// taken is granted (Mapping+SharedStore.swift).
    private let catchUp: @Sendable (AnnouncedChanges) -> Void

    init(store: any SharedLockingStore, logger: Logger, catchUp: @escaping @Sendable (AnnouncedChanges) -> Void) {
        self.store = store
        self.logger = logger
        self.catchUp = catchUp
    }

    func set(_ name: Name, mode: FileLockMode?, requester: FileLockRequester, wait: Bool) throws(FileSystemError) {
        if try attempt(name, mode, requester) { return }
        guard wait else { throw .wouldBlock }
        let wake = DispatchSemaphore(value: 0)
        let interruption = RequestInterruption.current
        let token = interruption?.onInterrupt { wake.signal() }
        let waiter = state.withLock { state in
            state.nextWaiter += 1
            state.waiters[name, default: [:]][state.nextWaiter] = wake
            return state.nextWaiter
        }
        defer {
            if let token { interruption?.removeAction(token) }
            state.withLock { state in
                state.waiters[name]?[waiter] = nil
                if state.waiters[name]?.isEmpty == true { state.waiters[name] = nil }
            }
        }
        var backoff = 0.001
        while true {
            if interruption?.isInterrupted == true { throw .interrupted }
            _ = wake.wait(timeout: .now() + backoff)
            if interruption?.isInterrupted == true { throw .interrupted }
            if try attempt(name, mode, requester) { return }
            backoff = min(backoff * 2, Self.longestBackoff)
        }
    }

    /// The lock that stands in `requester`'s way: an owner's of this mount, else another mount's.
    func conflict(_ name: Name, mode: FileLockMode, requester: FileLockRequester) throws(FileSystemError)
        -> FileLockHolder?
    {
        let local = state.withLock { state in
            state.entries[name]?.holders.first { owner, holding in
                owner != requester.owner && (mode == .exclusive || holding.mode == .exclusive)
            }?.value
        }
        if let local { return FileLockHolder(mode: local.mode, pid: local.pid) }
        do throws(ObjectGraphError) {
            let elsewhere = try store.lockHeldElsewhere(
                sharedName(name), excluding: mode == .shared ? .shared : .exclusive)
            return elsewhere.map { FileLockHolder(mode: $0 == .shared ? .shared : .exclusive, pid: 0) }
        } catch {
            logger.error("F_GETLK on \(name.inode): \(error)")
            throw .io
        }
    }

    /// Lets go of `owner`'s lock on `name`, if it holds one (no round trip otherwise).
    func release(_ name: Name, owner: UInt64) {
        let holds = state.withLock { $0.entries[name]?.holders[owner] != nil }
        guard holds else { return }
        _ = try? attempt(name, nil, FileLockRequester(owner: owner, handle: .none, pid: 0))
    }

    private func sharedName(_ name: Name) -> SharedLockName {
        SharedLockName(resource: name.inode.rawValue, family: name.family.rawValue)
    }

    /// One try: true when `requester` now holds `mode` (nil: holds nothing).
    private func attempt(_ name: Name, _ mode: FileLockMode?, _ requester: FileLockRequester) throws(FileSystemError)
        -> Bool
    {
        var changes = AnnouncedChanges()
        let (granted, released) = try state.withLock { (state) throws(FileSystemError) -> (Bool, Bool) in
            var entry = state.entries[name] ?? Entry()
            if let mode {
                let excluded = entry.holders.contains { owner, holding in
                    owner != requester.owner && (mode == .exclusive || holding.mode == .exclusive)
                }
                if excluded { return (false, false) }
                entry.holders[requester.owner] = Holding(mode: mode, pid: requester.pid, handle: requester.handle)
            } else {
                guard entry.holders.removeValue(forKey: requester.owner) != nil else { return (true, false) }
            }
            let needed: SharedLockMode? =
                entry.holders.isEmpty
                ? nil : entry.holders.values.contains { $0.mode == .exclusive } ? .exclusive : .shared
            if needed != entry.held {
                let answer: SharedLockAnswer
                do throws(ObjectGraphError) {
                    answer = try store.changeLock(sharedName(name), from: entry.held, to: needed)
                } catch {
                    logger.error("lock \(name.inode) (\(name.family)): \(error)")
                    // Letting go succeeds whatever the store says: a broken connection ended the
                    // session, and the server let go of everything it held.
                    guard mode != nil else {
                        state.entries[name] = entry.holders.isEmpty ? nil : entry
                        return (true, true)
                    }
                    throw .io
                }
                if let session = state.session, session != answer.session {
                    let lost = state.entries.values.reduce(0) { $0 + $1.holders.count }
                    logger.error(
                        "the store's lock session ended (its connection broke): \(lost) file locks of this mount were lost"
                    )
                    state.entries = [:]
                    if !answer.granted { entry = Entry() }
                }
                state.session = answer.session
                changes = answer.changes
                guard answer.granted else { return (false, false) }
                entry.held = needed
            }
            state.entries[name] = entry.holders.isEmpty ? nil : entry
            return (true, mode == nil || mode == .shared)
        }
        if granted && !changes.isEmpty { catchUp(changes) }
        if released {
            state.withLock { state in state.waiters[name]?.values.forEach { $0.signal() } }
        }
        return granted
    }
}
