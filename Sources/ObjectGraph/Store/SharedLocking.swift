/// How a lock is held: by any number of holders at once, or by one alone.
public enum SharedLockMode: Sendable, Hashable, Comparable {
    case shared, exclusive
}

/// What a ``SharedLockingStore`` locks: a name the filesystem gives a locked file or folder, the
/// same in every mount of the store (StoreFS gives the node's inode number, which encodes its
/// kind, entity, object key and property), and the family of lock (flock and POSIX record locks
/// do not exclude each other, as on a local filesystem).
public struct SharedLockName: Sendable, Hashable {
    public var resource: UInt64
    public var family: UInt8

    public init(resource: UInt64, family: UInt8) {
        self.resource = resource
        self.family = family
    }
}

/// The answer of ``SharedLockingStore/changeLock(_:from:to:)``: whether the change was made, and
/// in which session of the store's lock connection (a new session means every lock held in the
/// old one is gone: the server let go of them when that session ended).
public struct SharedLockAnswer: Sendable, Hashable {
    public var granted: Bool
    public var session: Int
    /// For a lock newly taken (or made exclusive): the objects other writers committed changes
    /// to since the store last said, read in the same call, so that whoever takes a lock after
    /// another mount's commit and release reads what it committed (as NFS does at a lock).
    public var changes: AnnouncedChanges

    public init(granted: Bool, session: Int, changes: AnnouncedChanges = AnnouncedChanges()) {
        self.granted = granted
        self.session = session
        self.changes = changes
    }
}

/// A store that holds locks where every mount of it sees them (the PostgreSQL store: advisory
/// locks on a connection of their own), so that `flock` and `fcntl` locks taken through one mount
/// exclude processes on other machines. The mount holds at most one lock per name; which of its
/// processes hold it is the filesystem's business. A mount that dies, or whose connection ends,
/// loses every lock it held (the server ends the session).
///
/// Every call answers at once (it never waits for another holder): a blocked lock is the caller's
/// loop, so that it can be interrupted.
///
/// Threading: calls may come from any thread; the store serializes them on its lock connection.
public protocol SharedLockingStore: PersistentStore {
    /// Changes this mount's hold on `name` from `from` (nil: none) to `to` (nil: none). Not granted
    /// when another mount holds a lock that excludes `to`; then the hold stays `from`.
    func changeLock(_ name: SharedLockName, from: SharedLockMode?, to: SharedLockMode?) throws(ObjectGraphError)
        -> SharedLockAnswer
    /// The strongest lock another mount holds on `name` that excludes `mode`; nil when none does.
    func lockHeldElsewhere(_ name: SharedLockName, excluding mode: SharedLockMode) throws(ObjectGraphError)
        -> SharedLockMode?
}
