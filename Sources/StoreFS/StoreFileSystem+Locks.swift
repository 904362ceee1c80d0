import FuseKit
import ObjectGraph

/// flock and POSIX locks: held in the store where it holds locks for every mount of it (the
/// PostgreSQL store), so they exclude processes on other machines; left to the kernel otherwise
/// (SQLite and file stores), where they exclude processes of this machine (docs/SEMANTICS.md).
extension StoreFileSystem {
    public var holdsFileLocks: Bool { fileLocks != nil }

    public func setLock(
        _ inode: InodeNumber, family: FileLockFamily, mode: FileLockMode?, requester: FileLockRequester, wait: Bool
    ) throws(FileSystemError) {
        guard let fileLocks else { throw .notImplemented }
        try fileLocks.set(.init(inode: inode, family: family), mode: mode, requester: requester, wait: wait)
    }

    public func conflictingLock(
        _ inode: InodeNumber, family: FileLockFamily, mode: FileLockMode, requester: FileLockRequester
    ) throws(FileSystemError) -> FileLockHolder? {
        try fileLocks?.conflict(.init(inode: inode, family: family), mode: mode, requester: requester)
    }

    public func releaseLocks(_ inode: InodeNumber, family: FileLockFamily, owner: UInt64) {
        fileLocks?.release(.init(inode: inode, family: family), owner: owner)
    }
}
