import CFuse
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// libfuse's lock operations (GETLK, SETLK, SETLKW, and flock(2), which libfuse hands to its own
// slot) for a filesystem that holds locks (FileLocks.swift). Set in every session's table; a
// filesystem that holds none declines FUSE_POSIX_LOCKS and FUSE_FLOCK_LOCKS at INIT, and the
// kernel then never sends them.

func installLockOperations(_ ops: inout fuse_lowlevel_ops) {
    ops.getlk = { request, inode, info, lock in
        let context = SessionContext.of(request)
        context.counters.record(.lock)
        guard let info, let lock else { return answerLock(request, context, .failure(.invalid)) }
        var answer = lock.pointee
        let outcome = Result { () throws(FileSystemError) -> Void in
            guard isWholeFile(answer) else { throw .noLocks }
            let mode: FileLockMode = answer.l_type == Int16(F_RDLCK) ? .shared : .exclusive
            let holder = try context.fileSystem.conflictingLock(
                InodeNumber(inode), family: .posix, mode: mode, requester: lockRequester(request, info))
            answer.l_whence = Int16(SEEK_SET)
            answer.l_start = 0
            answer.l_len = 0
            answer.l_type = Int16(holder == nil ? F_UNLCK : holder?.mode == .shared ? F_RDLCK : F_WRLCK)
            answer.l_pid = holder?.pid ?? 0
        }
        guard case .success = outcome else { return answerLock(request, context, outcome) }
        fuse_reply_lock(request, &answer)
    }
    ops.setlk = { request, inode, info, lock, sleep in
        let context = SessionContext.of(request)
        context.counters.record(.lock)
        guard let info, let lock else { return answerLock(request, context, .failure(.invalid)) }
        guard isWholeFile(lock.pointee) else { return answerLock(request, context, .failure(.noLocks)) }
        let type = Int32(lock.pointee.l_type)
        let mode: FileLockMode? = type == F_UNLCK ? nil : type == F_RDLCK ? .shared : .exclusive
        setLock(request, context, InodeNumber(inode), .posix, mode, lockRequester(request, info), wait: sleep != 0)
    }
    ops.flock = { request, inode, info, operation in
        let context = SessionContext.of(request)
        context.counters.record(.lock)
        guard let info else { return answerLock(request, context, .failure(.invalid)) }
        let mode: FileLockMode?
        switch operation & ~LOCK_NB {
        case LOCK_SH: mode = .shared
        case LOCK_EX: mode = .exclusive
        case LOCK_UN: mode = nil
        default: return answerLock(request, context, .failure(.invalid))
        }
        setLock(
            request, context, InodeNumber(inode), .flock, mode, lockRequester(request, info),
            wait: operation & LOCK_NB == 0)
    }
}

/// Only whole-file locks (from 0 to the end, growing with the file) are held: a byte range is
/// answered ENOLCK rather than locked wider or narrower than asked (docs/SEMANTICS.md).
private func isWholeFile(_ lock: flock) -> Bool { lock.l_start == 0 && lock.l_len == 0 }

private func lockRequester(_ request: fuse_req_t?, _ info: UnsafeMutablePointer<fuse_file_info>)
    -> FileLockRequester
{
    let pid = fuse_req_ctx(request).map { $0.pointee.pid } ?? 0
    return FileLockRequester(owner: info.pointee.lock_owner, handle: FileHandle(info.pointee.fh), pid: pid)
}

/// Sets the lock; one that may wait does on ``SessionContext/lockWaits``, watched for the kernel's
/// INTERRUPT (a signal to the waiting process, or its death), which ends the wait with EINTR.
private func setLock(
    _ request: fuse_req_t?, _ context: SessionContext, _ inode: InodeNumber, _ family: FileLockFamily,
    _ mode: FileLockMode?, _ requester: FileLockRequester, wait: Bool
) {
    guard wait, mode != nil else {
        let outcome = Result { () throws(FileSystemError) in
            try context.fileSystem.setLock(inode, family: family, mode: mode, requester: requester, wait: false)
        }
        return answerLock(request, context, outcome)
    }
    let interruption = RequestInterruption()
    let kernel = KernelInterrupt(request)
    kernel.watch(interruption)
    let pending = LockRequest(request: request)
    context.lockWaits.submit(interruption) {
        let outcome = RequestInterruption.$current.withValue(interruption) { () -> Result<Void, FileSystemError> in
            guard !interruption.isInterrupted else { return .failure(.interrupted) }
            return Result { () throws(FileSystemError) in
                try context.fileSystem.setLock(inode, family: family, mode: mode, requester: requester, wait: true)
            }
        }
        kernel.stopWatching()
        answerLock(pending.request, context, outcome)
    }
}

private func answerLock(_ request: fuse_req_t?, _ context: SessionContext, _ outcome: Result<Void, FileSystemError>) {
    switch outcome {
    case .success: fuse_reply_err(request, 0)
    case .failure(let error):
        // A lock refused (EAGAIN) or interrupted is an answer, not a failure of the filesystem.
        if error != .wouldBlock && error != .interrupted { context.counters.record(.errors) }
        fuse_reply_err(request, error.rawValue)
    }
}

/// A lock request answered from a wait thread (libfuse allows a reply from any thread).
private struct LockRequest: @unchecked Sendable {
    // @unchecked: only the one thread that answers it touches the pointer.
    let request: fuse_req_t?
}
