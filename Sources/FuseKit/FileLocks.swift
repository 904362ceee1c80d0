/// flock(2) and POSIX record locks (fcntl F_SETLK, F_SETLKW, F_GETLK) held by the filesystem
/// instead of the kernel, for filesystems whose locks must exclude processes on other machines
/// (``FileSystem/holdsFileLocks``). A filesystem that does not hold them leaves them to the
/// kernel, which keeps them on this machine only (FuseKit then declines FUSE_POSIX_LOCKS and
/// FUSE_FLOCK_LOCKS at INIT).

/// The two families of lock a process takes; they do not exclude each other (as on Linux).
public enum FileLockFamily: UInt8, Sendable, Hashable {
    /// fcntl(2) record locks, owned by a process (the kernel's lock owner: its file table),
    /// released by any close of the file by that process.
    case posix = 0
    /// flock(2) locks, owned by an open file description, released when its last descriptor closes.
    case flock = 1
}

/// A lock's mode: F_RDLCK / LOCK_SH, F_WRLCK / LOCK_EX.
public enum FileLockMode: Sendable, Hashable {
    case shared, exclusive
}

/// A lock that stands in the way of another, as F_GETLK reports it.
public struct FileLockHolder: Sendable, Hashable {
    public var mode: FileLockMode
    /// The holding process on this machine; 0 for a holder elsewhere (another mount).
    public var pid: Int32

    public init(mode: FileLockMode, pid: Int32) {
        self.mode = mode
        self.pid = pid
    }
}

/// Who asks for a lock: the kernel's lock owner, the handle it came through and the process.
public struct FileLockRequester: Sendable, Hashable {
    public var owner: UInt64
    public var handle: FileHandle
    public var pid: Int32

    public init(owner: UInt64, handle: FileHandle, pid: Int32) {
        self.owner = owner
        self.handle = handle
        self.pid = pid
    }
}
