import Foundation

/// A filesystem FuseKit serves: the operations of libfuse's low-level API as Swift calls that
/// return values or throw an errno.
///
/// Threading: every method may be called concurrently from libfuse worker threads (plain
/// pthreads). Methods may block (on a database, say) but must not wait for Swift concurrency.
/// FuseKit makes exactly one reply per request from what a method returns or throws.
///
/// Every method has a default: reads of unknown things fail with ENOENT/ENODATA, changes with
/// EROFS or ENOTSUP, so a read-only filesystem implements only what it shows.
public protocol FileSystem: AnyObject, Sendable {
    /// The session is mounted; `invalidator` lets the filesystem drop kernel caches of things that
    /// changed behind the kernel's back.
    func didMount(invalidator: any KernelCacheInvalidator)
    /// The session is unmounting (called once, before the mount goes away): commit and release.
    func willUnmount()

    func lookup(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) -> Entry
    /// The kernel dropped `count` lookups of `inode`.
    func forget(_ inode: InodeNumber, count: UInt64)
    /// Attributes of `inode` and how long the kernel may cache them.
    func attributes(of inode: InodeNumber, handle: FileHandle?) throws(FileSystemError) -> (
        FileAttributes, timeout: Double
    )
    func setAttributes(of inode: InodeNumber, _ changes: AttributeChanges, handle: FileHandle?, context: RequestContext)
        throws(FileSystemError) -> (FileAttributes, timeout: Double)
    func readLink(_ inode: InodeNumber) throws(FileSystemError) -> String

    func openDirectory(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    /// Lists `inode` from `offset` (0 or a cookie an earlier entry gave). `add` returns false when
    /// the reply is full; the entry it refused is not part of this reply.
    ///
    /// The filesystem lists `.` and `..` itself (FuseKit adds none; `ls -a` shows what is listed).
    /// With `plus`, the kernel takes one lookup of every entry `add` accepted except `.` and `..`:
    /// count a lookup only when `add` returns true (FuseKit calls ``forget(_:count:)`` for them if
    /// the reply then fails). An error thrown after entries were accepted is not reported: those
    /// entries are sent and the next call, from the last cookie, meets the error again.
    func readDirectory(
        _ inode: InodeNumber, handle: FileHandle, offset: UInt64, plus: Bool, context: RequestContext,
        add: (DirectoryEntry) -> Bool
    ) throws(FileSystemError)
    func releaseDirectory(_ inode: InodeNumber, handle: FileHandle)

    /// Opens a file. `flags` carry O_TRUNC when the file is to be truncated (FuseKit asks the
    /// kernel for atomic O_TRUNC, so truncation on open arrives here, not as a SETATTR).
    func open(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError) -> OpenResult
    func read(_ inode: InodeNumber, handle: FileHandle, offset: UInt64, size: Int) throws(FileSystemError) -> Data
    /// Writes `data` at `offset`; returns the number of bytes taken.
    func write(_ inode: InodeNumber, handle: FileHandle, offset: UInt64, data: Data) throws(FileSystemError) -> Int
    /// A descriptor of `handle` is being closed: the place to report a write's error to close(2).
    /// Not called for opens whose ``OpenResult/needsFlush`` was false.
    func flush(_ inode: InodeNumber, handle: FileHandle) throws(FileSystemError)
    func release(_ inode: InodeNumber, handle: FileHandle) throws(FileSystemError)
    func fsync(_ inode: InodeNumber, handle: FileHandle, dataOnly: Bool) throws(FileSystemError)
    func fsyncDirectory(_ inode: InodeNumber, handle: FileHandle, dataOnly: Bool) throws(FileSystemError)
    /// Whether `operation` (FLUSH, RELEASE, FSYNC or FSYNCDIR) of `inode` through `handle` may
    /// wait long (a commit on a store that does not answer): FuseKit then answers it on a thread
    /// of its own, so it holds up no other request (``WaitingRequests``). Asked on the request's
    /// thread; answer from memory.
    func mayWait(_ operation: OperationCounters.Operation, inode: InodeNumber, handle: FileHandle) -> Bool

    func create(parent: InodeNumber, name: String, permissions: UInt32, flags: OpenFlags, context: RequestContext)
        throws(FileSystemError) -> (Entry, OpenResult)
    func makeDirectory(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    func makeNode(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context: RequestContext)
        throws(FileSystemError) -> Entry
    func unlink(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError)
    func removeDirectory(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError)
    /// Renames, with renameat2's flags.
    func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: RenameFlags)
        throws(FileSystemError)

    /// The value of extended attribute `name`; ENODATA when it has none.
    func extendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) -> Data
    func extendedAttributeNames(of inode: InodeNumber) throws(FileSystemError) -> [String]
    /// FuseKit asks the kernel to leave clearing privileges on write to the server
    /// (HANDLE_KILLPRIV_V2) and clears set-user-ID and set-group-ID bits itself through
    /// ``setAttributes(of:_:handle:context:)``; a filesystem that stores `security.capability`
    /// must drop it on writes itself.
    func setExtendedAttribute(_ name: String, of inode: InodeNumber, value: Data, flags: ExtendedAttributeFlags)
        throws(FileSystemError)
    func removeExtendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError)

    func statistics(of inode: InodeNumber) throws(FileSystemError) -> FileSystemStatistics
    /// Whether reading `inode` (looking a name up in it, its attributes, opening, reading or
    /// listing it, its extended attributes) may take long: computed answers such as a query's,
    /// bounded in time but still seconds. FuseKit then serves those requests on threads of its own
    /// (``MountOptions/slowRequestThreads``), so the thread that receives requests goes on to the
    /// next one (over io_uring one thread serves each CPU's queue: a request held there holds
    /// every request behind it), and binds ``RequestInterruption/current`` for them.
    func mayTakeLong(_ inode: InodeNumber) -> Bool

    /// Whether the value of extended attribute `name` may grow between a reader's two getxattr
    /// calls without anyone writing it (counters that count those very calls). Tools such as
    /// getfattr ask the size, then read with a buffer of that size, and fail on ERANGE: for such
    /// values FuseKit answers the size with 4 KiB of room to grow.
    func extendedAttributeChangesBetweenReads(_ name: String) -> Bool

    /// Whether this filesystem holds flock and POSIX locks itself (FileLocks.swift): asked once,
    /// at INIT. False: the kernel keeps them, on this machine only, and the methods below are
    /// never called.
    var holdsFileLocks: Bool { get }
    /// Sets `requester`'s lock of `family` on `inode` to `mode` (nil: unlocks). When another
    /// holder excludes it: `wait` false throws EWOULDBLOCK (EAGAIN); `wait` true waits until it
    /// can be had, and throws EINTR once ``RequestInterruption/current`` is interrupted. Called
    /// on a thread of its own when `wait` is true.
    func setLock(
        _ inode: InodeNumber, family: FileLockFamily, mode: FileLockMode?, requester: FileLockRequester, wait: Bool
    ) throws(FileSystemError)
    /// The lock another owner holds on `inode` that excludes `mode` for `requester`; nil when none does.
    func conflictingLock(
        _ inode: InodeNumber, family: FileLockFamily, mode: FileLockMode, requester: FileLockRequester
    ) throws(FileSystemError) -> FileLockHolder?
    /// Lets go of every lock of `family` that `owner` holds on `inode`: a POSIX owner's at each
    /// close (FLUSH), a flock owner's at the last close of its open file description (RELEASE).
    func releaseLocks(_ inode: InodeNumber, family: FileLockFamily, owner: UInt64)
}

/// Drops kernel caches. Calls are queued and made from a thread of FuseKit's own, never inline in
/// a request (libfuse deadlocks otherwise), so they may be made from anywhere, even while handling
/// a request.
public protocol KernelCacheInvalidator: Sendable {
    /// Forget the name `name` in directory `parent`.
    func invalidateEntry(parent: InodeNumber, name: String)
    /// Forget the attributes and cached data of `inode` (a directory's cached listing too).
    func invalidateInode(_ inode: InodeNumber)
    /// Tell the kernel (and inotify watchers) that `child` named `name` in `parent` was deleted.
    func notifyDelete(parent: InodeNumber, child: InodeNumber, name: String)
    /// Put each file's `data` into the kernel's page cache as its whole content, so that reading
    /// it asks nothing. Only for files whose pages the kernel keeps across opens (a read-only
    /// mount); the kernel ignores files it does not know.
    func preload(_ files: [(inode: InodeNumber, data: Data)])
    /// Waits (at most `timeout` seconds) until what was asked so far has reached the kernel;
    /// false when it had not by then.
    func waitUntilSent(timeout: Double) -> Bool
}

extension KernelCacheInvalidator {
    public func waitUntilSent(timeout: Double) -> Bool { true }
}

extension FileSystem {
    public func mayTakeLong(_ inode: InodeNumber) -> Bool { false }
    public func extendedAttributeChangesBetweenReads(_ name: String) -> Bool { false }
    public var holdsFileLocks: Bool { false }
    public func setLock(
        _ inode: InodeNumber, family: FileLockFamily, mode: FileLockMode?, requester: FileLockRequester, wait: Bool
    ) throws(FileSystemError) { throw .notImplemented }
    public func conflictingLock(
        _ inode: InodeNumber, family: FileLockFamily, mode: FileLockMode, requester: FileLockRequester
    ) throws(FileSystemError) -> FileLockHolder? { nil }
    public func releaseLocks(_ inode: InodeNumber, family: FileLockFamily, owner: UInt64) {}
    public func didMount(invalidator: any KernelCacheInvalidator) {}
    public func willUnmount() {}
    public func forget(_ inode: InodeNumber, count: UInt64) {}
    public func setAttributes(
        of inode: InodeNumber, _ changes: AttributeChanges, handle: FileHandle?, context: RequestContext
    )
        throws(FileSystemError) -> (FileAttributes, timeout: Double)
    { throw .readOnly }
    public func readLink(_ inode: InodeNumber) throws(FileSystemError) -> String { throw .invalid }
    public func openDirectory(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    { OpenResult() }
    public func releaseDirectory(_ inode: InodeNumber, handle: FileHandle) {}
    public func open(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        OpenResult()
    }
    public func write(_ inode: InodeNumber, handle: FileHandle, offset: UInt64, data: Data) throws(FileSystemError)
        -> Int
    {
        throw .readOnly
    }
    public func flush(_ inode: InodeNumber, handle: FileHandle) throws(FileSystemError) {}
    public func release(_ inode: InodeNumber, handle: FileHandle) throws(FileSystemError) {}
    public func fsync(_ inode: InodeNumber, handle: FileHandle, dataOnly: Bool) throws(FileSystemError) {}
    public func fsyncDirectory(_ inode: InodeNumber, handle: FileHandle, dataOnly: Bool) throws(FileSystemError) {}
    /// A file system that says nothing never waits long.
    public func mayWait(_ operation: OperationCounters.Operation, inode: InodeNumber, handle: FileHandle) -> Bool {
        false
    }
    public func create(
        parent: InodeNumber, name: String, permissions: UInt32, flags: OpenFlags, context: RequestContext
    )
        throws(FileSystemError) -> (Entry, OpenResult)
    { throw .readOnly }
    public func makeDirectory(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    { throw .readOnly }
    public func makeNode(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    { throw .readOnly }
    public func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context: RequestContext)
        throws(FileSystemError) -> Entry
    { throw .readOnly }
    public func unlink(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        throw .readOnly
    }
    public func removeDirectory(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        throw .readOnly
    }
    public func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: RenameFlags)
        throws(FileSystemError)
    { throw .readOnly }
    public func extendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) -> Data {
        throw .noAttribute
    }
    public func extendedAttributeNames(of inode: InodeNumber) throws(FileSystemError) -> [String] { [] }
    public func setExtendedAttribute(_ name: String, of inode: InodeNumber, value: Data, flags: ExtendedAttributeFlags)
        throws(FileSystemError)
    {
        throw .notSupported
    }
    public func removeExtendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) {
        throw .notSupported
    }
    public func statistics(of inode: InodeNumber) throws(FileSystemError) -> FileSystemStatistics {
        FileSystemStatistics()
    }
}
