import CFuse
import Foundation

// The one adapter between libfuse's low-level operations table and ``FileSystem``: every request
// is counted here, answered here exactly once (``send(_:to:_:)`` or the error path of
// ``serve(_:_:_:)``), and every errno goes out through one `fuse_reply_err`.
//
// libfuse slots are `@convention(c)`: the closures below capture nothing and call file-scope
// functions (a static method would capture the metatype).

/// The table handed to `fuse_session_new`. Slots left nil (link, access, locks, ioctl, …) make
/// libfuse answer ENOSYS.
func makeLowLevelOperations() -> fuse_lowlevel_ops {
    var ops = fuse_lowlevel_ops()
    ops.`init` = { userData, connection in
        guard let connection else { return }
        configure(connection, SessionContext.fromUserData(userData))
    }
    ops.lookup = { request, parent, name in
        // Copied now: the name lives in libfuse's buffer, reused once this callback returns.
        let decoded = Result { () throws(FileSystemError) in try FileName.decode(name, for: .existing) }
        let caller = requester(request)
        serve(request, .lookup, mayTakeLong: parent) { context throws(FileSystemError) in
            .entry(try context.fileSystem.lookup(parent: InodeNumber(parent), name: try decoded.get(), context: caller))
        }
    }
    ops.forget = { request, inode, count in
        let context = SessionContext.of(request)
        context.counters.record(.forget)
        context.fileSystem.forget(InodeNumber(inode), count: count)
        fuse_reply_none(request)
    }
    ops.forget_multi = { request, count, forgets in
        let context = SessionContext.of(request)
        context.counters.record(.batchForget)
        for item in UnsafeBufferPointer(start: forgets, count: count) {
            context.fileSystem.forget(InodeNumber(item.ino), count: item.nlookup)
        }
        fuse_reply_none(request)
    }
    ops.getattr = { request, inode, info in
        let handle = info.map { FileHandle($0.pointee.fh) }
        serve(request, .getattr, mayTakeLong: inode) { context throws(FileSystemError) in
            let (attributes, timeout) = try context.fileSystem.attributes(of: InodeNumber(inode), handle: handle)
            return .attributes(attributes, timeout: timeout)
        }
    }
    ops.setattr = { request, inode, attributes, toSet, info in
        serve(request, .setattr) { context throws(FileSystemError) in
            let handle = info.map { FileHandle($0.pointee.fh) }
            let changes = attributeChanges(attributes!.pointee, toSet)
            var (result, timeout) = try context.fileSystem.setAttributes(
                of: InodeNumber(inode), changes, handle: handle, context: requester(request))
            // A truncate or chown the kernel marked (it marks every chown of a file): the bits
            // are cleared after the change, from the attributes it returned, so a file without
            // them (nearly all) costs nothing more.
            let cleared = withoutSetIDBits(result.permissions)
            if toSet & (FUSE_SET_ATTR_KILL_SUID | FUSE_SET_ATTR_KILL_SGID) != 0 && changes.permissions == nil
                && cleared != result.permissions
            {
                (result, timeout) = try context.fileSystem.setAttributes(
                    of: InodeNumber(inode), AttributeChanges(permissions: cleared), handle: handle,
                    context: requester(request))
            }
            return .attributes(result, timeout: timeout)
        }
    }
    ops.readlink = { request, inode in
        serve(request, .readlink) { context throws(FileSystemError) in
            .link(try context.fileSystem.readLink(InodeNumber(inode)))
        }
    }
    ops.mknod = { request, parent, name, mode, _ in
        serve(request, .mknod) { context throws(FileSystemError) in
            // Only regular files: devices, FIFOs and sockets have no place in an object graph.
            guard mode & S_IFMT == S_IFREG || mode & S_IFMT == 0 else { throw .notPermitted }
            return .entry(
                try context.fileSystem.makeNode(
                    parent: InodeNumber(parent), name: try FileName.decode(name, for: .new), permissions: mode & 0o7777,
                    context: requester(request)))
        }
    }
    ops.mkdir = { request, parent, name, mode in
        serve(request, .mkdir) { context throws(FileSystemError) in
            .entry(
                try context.fileSystem.makeDirectory(
                    parent: InodeNumber(parent), name: try FileName.decode(name, for: .new), permissions: mode & 0o7777,
                    context: requester(request)))
        }
    }
    ops.unlink = { request, parent, name in
        serve(request, .unlink) { context throws(FileSystemError) in
            try context.fileSystem.unlink(
                parent: InodeNumber(parent), name: try FileName.decode(name, for: .existing),
                context: requester(request))
            return .ok
        }
    }
    ops.rmdir = { request, parent, name in
        serve(request, .rmdir) { context throws(FileSystemError) in
            try context.fileSystem.removeDirectory(
                parent: InodeNumber(parent), name: try FileName.decode(name, for: .existing),
                context: requester(request))
            return .ok
        }
    }
    ops.symlink = { request, target, parent, name in
        serve(request, .symlink) { context throws(FileSystemError) in
            .entry(
                try context.fileSystem.makeSymbolicLink(
                    parent: InodeNumber(parent), name: try FileName.decode(name, for: .new),
                    target: try FileName.decodeLinkTarget(target),
                    context: requester(request)))
        }
    }
    ops.rename = { request, parent, name, newParent, newName, flags in
        serve(request, .rename) { context throws(FileSystemError) in
            try context.fileSystem.rename(
                parent: InodeNumber(parent), name: try FileName.decode(name, for: .existing),
                newParent: InodeNumber(newParent), newName: try FileName.decode(newName, for: .new),
                flags: RenameFlags(rawValue: flags))
            return .ok
        }
    }
    ops.open = { request, inode, info in
        if declinedOpeningRequest(request, .open) { return }
        let file = FileInfo(info!)
        let caller = requester(request)
        let pending = PendingRequest(request)
        serve(request, .open, mayTakeLong: inode, keeping: file) { context throws(FileSystemError) in
            var result = try context.fileSystem.open(
                InodeNumber(inode), flags: OpenFlags(rawValue: file.pointer.pointee.flags), context: caller)
            if cfuse_file_info_kill_suidgid(file.pointer) != 0 {
                try dropSetIDBits(inode, result.handle, context, pending.request)
            }
            file.pointer.pointee.backing_id = 0
            if let descriptor = result.backingFile {
                file.pointer.pointee.fh = result.handle.rawValue
                if context.passthrough.attach(
                    descriptor, inode: UInt64(inode), to: file.pointer, request: pending.request,
                    logger: context.logger, mountPoint: context.mountPoint)
                {
                    // The kernel reads the backing file: neither direct I/O nor the page cache of
                    // the FUSE inode is involved.
                    result.directIO = false
                    result.keepCache = false
                }
            }
            return .open(result, file.pointer)
        }
    }
    ops.read = { request, inode, size, offset, info in
        let handle = FileHandle(info!.pointee.fh)
        serve(request, .read, mayTakeLong: inode) { context throws(FileSystemError) in
            .data(try context.fileSystem.read(InodeNumber(inode), handle: handle, offset: UInt64(offset), size: size))
        }
    }
    ops.write = { request, inode, bytes, size, offset, info in
        serve(request, .write) { context throws(FileSystemError) in
            if cfuse_file_info_kill_suidgid(info!) != 0 {
                try dropSetIDBits(inode, FileHandle(info!.pointee.fh), context, request)
            }
            let data = Data(bytes: bytes!, count: size)
            return .written(
                try context.fileSystem.write(
                    InodeNumber(inode), handle: FileHandle(info!.pointee.fh), offset: UInt64(offset), data: data))
        }
    }
    ops.flush = { request, inode, info in
        // A process's POSIX locks end at any close of the file by it (its lock owner comes here).
        let context = SessionContext.of(request)
        if context.holdsFileLocks {
            context.fileSystem.releaseLocks(InodeNumber(inode), family: .posix, owner: info!.pointee.lock_owner)
        }
        if declinedOpeningRequest(request, .flush) { return }
        let handle = FileHandle(info!.pointee.fh)
        serveWaiting(request, .flush, InodeNumber(inode), handle) { context throws(FileSystemError) in
            try context.fileSystem.flush(InodeNumber(inode), handle: handle)
            return .ok
        }
    }
    ops.release = { request, inode, info in
        // The last close of an open file description that flock-ed the file.
        if cfuse_file_info_flock_release(info!) != 0 {
            SessionContext.of(request).fileSystem.releaseLocks(
                InodeNumber(inode), family: .flock, owner: info!.pointee.lock_owner)
        }
        let handle = FileHandle(info!.pointee.fh)
        SessionContext.of(request).passthrough.release(handle.rawValue, request: request)
        serveWaiting(request, .release, InodeNumber(inode), handle) { context throws(FileSystemError) in
            try context.fileSystem.release(InodeNumber(inode), handle: handle)
            return .ok
        }
    }
    ops.fsync = { request, inode, dataOnly, info in
        let handle = FileHandle(info!.pointee.fh)
        serveWaiting(request, .fsync, InodeNumber(inode), handle) { context throws(FileSystemError) in
            try context.fileSystem.fsync(InodeNumber(inode), handle: handle, dataOnly: dataOnly != 0)
            return .ok
        }
    }
    ops.opendir = { request, inode, info in
        if declinedOpeningRequest(request, .opendir) { return }
        let file = FileInfo(info!)
        let caller = requester(request)
        serve(request, .opendir, mayTakeLong: inode, keeping: file) { context throws(FileSystemError) in
            .open(
                try context.fileSystem.openDirectory(
                    InodeNumber(inode), flags: OpenFlags(rawValue: file.pointer.pointee.flags), context: caller),
                file.pointer)
        }
    }
    ops.readdir = { request, inode, size, offset, info in
        listDirectory(request, inode, size, offset, info, plus: false)
    }
    ops.readdirplus = { request, inode, size, offset, info in
        listDirectory(request, inode, size, offset, info, plus: true)
    }
    ops.releasedir = { request, inode, info in
        serve(request, .releasedir) { context throws(FileSystemError) in
            context.fileSystem.releaseDirectory(InodeNumber(inode), handle: FileHandle(info!.pointee.fh))
            return .ok
        }
    }
    ops.fsyncdir = { request, inode, dataOnly, info in
        let handle = FileHandle(info!.pointee.fh)
        serveWaiting(request, .fsyncdir, InodeNumber(inode), handle) { context throws(FileSystemError) in
            try context.fileSystem.fsyncDirectory(InodeNumber(inode), handle: handle, dataOnly: dataOnly != 0)
            return .ok
        }
    }
    ops.statfs = { request, inode in
        serve(request, .statfs) { context throws(FileSystemError) in
            .statistics(try context.fileSystem.statistics(of: InodeNumber(inode)))
        }
    }
    ops.setxattr = { request, inode, name, value, size, flags in
        serve(request, .setxattr) { context throws(FileSystemError) in
            let data = size == 0 ? Data() : Data(bytes: value!, count: size)
            try context.fileSystem.setExtendedAttribute(
                try FileName.decodeAttributeName(name, for: .new), of: InodeNumber(inode), value: data,
                flags: ExtendedAttributeFlags(rawValue: flags))
            return .ok
        }
    }
    ops.getxattr = { request, inode, name, size in
        let decoded = Result { () throws(FileSystemError) in try FileName.decodeAttributeName(name, for: .existing) }
        serve(request, .getxattr, mayTakeLong: inode) { context throws(FileSystemError) in
            let name = try decoded.get()
            let value = try context.fileSystem.extendedAttribute(name, of: InodeNumber(inode))
            if size == 0 && context.fileSystem.extendedAttributeChangesBetweenReads(name) {
                return .attributeSize(min(value.count + volatileAttributeHeadroom, largestAttributeValue))
            }
            return try sized(value, for: size)
        }
    }
    ops.listxattr = { request, inode, size in
        serve(request, .listxattr, mayTakeLong: inode) { context throws(FileSystemError) in
            var list = Data()
            for name in try context.fileSystem.extendedAttributeNames(of: InodeNumber(inode)) {
                list.append(contentsOf: Array(name.utf8))
                list.append(0)
            }
            return try sized(list, for: size)
        }
    }
    ops.removexattr = { request, inode, name in
        serve(request, .removexattr) { context throws(FileSystemError) in
            try context.fileSystem.removeExtendedAttribute(
                try FileName.decodeAttributeName(name, for: .existing), of: InodeNumber(inode))
            return .ok
        }
    }
    ops.create = { request, parent, name, mode, info in
        serve(request, .create) { context throws(FileSystemError) in
            let (entry, result) = try context.fileSystem.create(
                parent: InodeNumber(parent), name: try FileName.decode(name, for: .new), permissions: mode & 0o7777,
                flags: OpenFlags(rawValue: info!.pointee.flags), context: requester(request))
            if cfuse_file_info_kill_suidgid(info!) != 0 {
                try dropSetIDBits(fuse_ino_t(entry.attributes.inode.rawValue), result.handle, context, request)
            }
            return .create(entry, result, info!)
        }
    }
    installLockOperations(&ops)
    return ops
}

// MARK: - Replies

/// What a handler answers with; ``send(_:to:_:)`` turns it into libfuse's one reply.
private enum Reply {
    case entry(Entry)
    case attributes(FileAttributes, timeout: Double)
    case link(String)
    case open(OpenResult, UnsafeMutablePointer<fuse_file_info>)
    case create(Entry, OpenResult, UnsafeMutablePointer<fuse_file_info>)
    case data(Data)
    /// A filled directory buffer; `lookedUp` are the readdirplus entries that took a lookup.
    case directory([UInt8], lookedUp: [InodeNumber])
    case written(Int)
    case attributeSize(Int)
    case statistics(FileSystemStatistics)
    case ok
}

/// Counts `request`, runs `body` and answers with what it returns, or with its errno. The
/// invalidations `body` asks for go out in one batch once it returns, as the answer is sent
/// (``InvalidationBatches``), unless it may wait long (`batchingInvalidations` false: an fsync's
/// commit): those are sent at once, not after the wait.
private func serve(
    _ request: fuse_req_t?, _ operation: OperationCounters.Operation, batchingInvalidations: Bool = true,
    _ body: (SessionContext) throws(FileSystemError) -> Reply
) {
    let context = SessionContext.of(request)
    context.counters.record(operation)
    context.noteTransport(of: request)
    let timings = context.counters.timings
    let started = timings == nil ? 0 : RequestTimings.now()
    defer { timings?.record(operation, since: started) }
    let reply: Reply
    do throws(FileSystemError) {
        if batchingInvalidations {
            reply = try InvalidationBatches.serving { () throws(FileSystemError) in try body(context) }
        } else {
            reply = try body(context)
        }
    } catch {
        context.counters.record(.errors)
        fuse_reply_err(request, error.rawValue)
        return
    }
    send(reply, to: request, context)
}

/// ``serve(_:_:_:)`` on a thread of its own (``WaitingRequests``) when the request came through
/// io_uring and the file system says it may wait; `body` takes nothing from the request's
/// arguments, which libfuse frees once the callback returns.
private func serveWaiting(
    _ request: fuse_req_t?, _ operation: OperationCounters.Operation, _ inode: InodeNumber, _ handle: FileHandle,
    _ body: @escaping @Sendable (SessionContext) throws(FileSystemError) -> Reply
) {
    let context = SessionContext.of(request)
    let mayWait = context.fileSystem.mayWait(operation, inode: inode, handle: handle)
    if fuse_req_is_uring(request), mayWait {
        let handed = HandedRequest(request: request)
        if context.waitingRequests.start({ serve(handed.request, operation, batchingInvalidations: false, body) }) {
            return
        }
    }
    serve(request, operation, batchingInvalidations: !mayWait, body)
}

/// ``serve(_:_:_:)``, on FuseKit's own threads (``SlowRequests``) when the filesystem says work on
/// `inode` may take long, with ``RequestInterruption/current`` bound and watched; inline
/// otherwise. `body` may run after the libfuse callback returned, so it uses no libfuse buffer:
/// names and handles are copied before, and `keeping` holds a copy of the request's file info
/// for the reply until it is sent.
private func serve(
    _ request: fuse_req_t?, _ operation: OperationCounters.Operation, mayTakeLong inode: fuse_ino_t,
    keeping file: FileInfo? = nil, _ body: @escaping @Sendable (SessionContext) throws(FileSystemError) -> Reply
) {
    let context = SessionContext.of(request)
    guard context.fileSystem.mayTakeLong(InodeNumber(inode)) else {
        serve(request, operation, body)
        return
    }
    context.counters.record(operation)
    context.noteTransport(of: request)
    let interruption = RequestInterruption()
    let kernel = KernelInterrupt(request)
    kernel.watch(interruption)
    let pending = PendingRequest(request)
    context.slowRequests.submit(interruption) {
        let outcome = RequestInterruption.$current.withValue(interruption) { () -> Result<Reply, FileSystemError> in
            guard !interruption.isInterrupted else { return .failure(.interrupted) }
            do throws(FileSystemError) {
                return .success(try body(context))
            } catch {
                return .failure(error)
            }
        }
        kernel.stopWatching()
        switch outcome {
        case .success(let reply):
            send(reply, to: pending.request, context)
        case .failure(let error):
            context.counters.record(.errors)
            fuse_reply_err(pending.request, error.rawValue)
        }
        withExtendedLifetime(file) {}
    }
}

/// A request handed to another thread: libfuse's pointer, answered there exactly once.
private struct PendingRequest: @unchecked Sendable {
    // @unchecked: libfuse allows a reply from any thread; nothing else touches the pointer.
    let request: fuse_req_t?
    init(_ request: fuse_req_t?) { self.request = request }
}

/// A copy of a request's `fuse_file_info` that outlives the libfuse callback (which passes its own
/// on its stack), for a reply sent from another thread.
private final class FileInfo: @unchecked Sendable {
    // @unchecked: written by the one thread serving the request, then read by its reply.
    let pointer: UnsafeMutablePointer<fuse_file_info>

    init(_ original: UnsafeMutablePointer<fuse_file_info>) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: original.pointee)
    }

    deinit { pointer.deallocate() }
}

/// Answers OPEN, FLUSH or OPENDIR with ENOSYS on a session with zero-message opens: the kernel
/// takes that as "never ask again" (success for OPEN and OPENDIR), so it is not counted as an error.
private func declinedOpeningRequest(_ request: fuse_req_t?, _ operation: OperationCounters.Operation) -> Bool {
    let context = SessionContext.of(request)
    let declines =
        operation == .opendir
        ? context.opensDirectoriesWithoutRequests.load(ordering: .relaxed)
        : context.opensWithoutRequests.load(ordering: .relaxed)
    // FLUSH carries the POSIX lock owner whose locks a close ends: a filesystem holding locks needs it.
    guard declines, !(operation == .flush && context.holdsFileLocks) else { return false }
    context.counters.record(operation)
    fuse_reply_err(request, ENOSYS)
    return true
}

private func send(_ reply: Reply, to request: fuse_req_t?, _ context: SessionContext) {
    switch reply {
    case .entry(let entry):
        var parameters = entryParameters(entry)
        if fuse_reply_entry(request, &parameters) != 0 {
            undoLookup(entry, context)
        }
    case .attributes(let attributes, let timeout):
        var status = fileStatus(attributes)
        fuse_reply_attr(request, &status, timeout)
    case .link(let target):
        fuse_reply_readlink(request, target)
    case .open(let result, let info):
        apply(result, to: info, context)
        if fuse_reply_open(request, info) != 0 && info.pointee.backing_id > 0 {
            // The kernel never saw this open: it will send no RELEASE for it.
            context.passthrough.release(info.pointee.fh, request: request)
        }
    case .create(let entry, let result, let info):
        apply(result, to: info, context)
        var parameters = entryParameters(entry)
        if fuse_reply_create(request, &parameters, info) != 0 {
            undoLookup(entry, context)
        }
    case .data(let data):
        data.withUnsafeBytes { _ = fuse_reply_buf(request, $0.baseAddress, $0.count) }
    case .directory(let buffer, let lookedUp):
        let sent = buffer.withUnsafeBytes { fuse_reply_buf(request, $0.baseAddress, $0.count) }
        if sent != 0 {
            // The kernel never saw these entries, so it will never forget them.
            for inode in lookedUp { context.fileSystem.forget(inode, count: 1) }
        }
    case .written(let count):
        fuse_reply_write(request, count)
    case .attributeSize(let size):
        fuse_reply_xattr(request, size)
    case .statistics(let statistics):
        var result = statvfs()
        result.f_bsize = UInt(statistics.blockSize)
        result.f_frsize = UInt(statistics.blockSize)
        result.f_blocks = fsblkcnt_t(statistics.blocks)
        result.f_bfree = fsblkcnt_t(statistics.freeBlocks)
        result.f_bavail = fsblkcnt_t(statistics.freeBlocks)
        result.f_files = fsfilcnt_t(statistics.files)
        result.f_ffree = fsfilcnt_t(statistics.freeFiles)
        result.f_favail = fsfilcnt_t(statistics.freeFiles)
        result.f_namemax = UInt(statistics.maximumNameLength)
        fuse_reply_statfs(request, &result)
    case .ok:
        fuse_reply_err(request, 0)
    }
}

/// A successful entry reply the kernel did not receive (the request was interrupted) took no
/// lookup, so the one the filesystem counted is given back.
private func undoLookup(_ entry: Entry, _ context: SessionContext) {
    guard entry.attributes.inode.rawValue != 0 else { return }
    context.fileSystem.forget(entry.attributes.inode, count: 1)
}

/// Bytes a value that changes between reads may grow by between a reader's size query and its
/// read (``FileSystem/extendedAttributeChangesBetweenReads(_:)``): the read answers the value's
/// own length, so the room costs the reader a larger buffer, nothing else.
private let volatileAttributeHeadroom = 4096
/// The kernel's XATTR_SIZE_MAX (linux/limits.h, which Glibc's module does not show).
private let largestAttributeValue = 65536

/// The getxattr/listxattr size protocol: size 0 asks for the length; a smaller buffer is ERANGE.
private func sized(_ value: Data, for size: Int) throws(FileSystemError) -> Reply {
    if size == 0 { return .attributeSize(value.count) }
    guard value.count <= size else { throw .range }
    return .data(value)
}

// MARK: - Set-user-ID and set-group-ID bits

// With FUSE_CAP_HANDLE_KILLPRIV_V2 the kernel leaves clearing these bits to the server and marks
// the requests that must (a write, an O_TRUNC open or a truncate of a file that has them, by a
// caller without CAP_FSETID). FuseKit does it for every FileSystem, through setAttributes, as
// chmod(2) would: set-user-ID always, set-group-ID when the group may execute (otherwise the
// bit means mandatory locking, which writes keep).

/// `permissions` without the bits a write clears.
private func withoutSetIDBits(_ permissions: UInt32) -> UInt32 {
    var cleared = permissions & ~UInt32(Glibc.S_ISUID)
    if permissions & UInt32(Glibc.S_IXGRP) != 0 { cleared &= ~UInt32(Glibc.S_ISGID) }
    return cleared
}

/// Clears `inode`'s set-user-ID and set-group-ID bits as a write does, if it has them.
private func dropSetIDBits(_ inode: fuse_ino_t, _ handle: FileHandle, _ context: SessionContext, _ request: fuse_req_t?)
    throws(FileSystemError)
{
    let current = try context.fileSystem.attributes(of: InodeNumber(inode), handle: handle).0.permissions
    let cleared = withoutSetIDBits(current)
    guard cleared != current else { return }
    _ = try context.fileSystem.setAttributes(
        of: InodeNumber(inode), AttributeChanges(permissions: cleared), handle: handle, context: requester(request))
    // The reply to a write or open carries no attributes, so the kernel would show the old mode
    // until its attributes expire. Dropping only attributes (offset -1) takes no page lock, so
    // unlike other notifications this one is safe inside the request.
    if let session = context.session.withLock({ $0 }) {
        let result = fuse_lowlevel_notify_inval_inode(session.raw, inode, -1, 0)
        context.counters.record(.invalidations)
        if result != 0 { context.counters.record(.invalidationFailures) }
    }
}

// MARK: - Directories

/// readdir and readdirplus: fills a buffer of the requested size with `fuse_add_direntry(_plus)`
/// until the filesystem's `add` is refused.
///
/// The contract with ``FileSystem/readDirectory(_:handle:offset:plus:add:)``: FuseKit adds no
/// `.` and `..` (the filesystem lists them, so `ls -a` shows them). `add` returns false when the
/// entry does not fit; that entry is not in the reply and the filesystem must stop. With `plus`,
/// the kernel takes one lookup for every *accepted* entry except `.` and `..`, so the filesystem
/// counts a lookup only when `add` returns true. If the reply then fails, FuseKit calls
/// ``FileSystem/forget(_:count:)`` for each of those. An error thrown after some entries were
/// accepted is not reported: the entries so far are sent (an error reply would leave the lookup
/// counts wrong), and the next readdir from the last offset meets the error again.
private func listDirectory(
    _ request: fuse_req_t?, _ inode: fuse_ino_t, _ size: Int, _ offset: off_t,
    _ info: UnsafeMutablePointer<fuse_file_info>?, plus: Bool
) {
    let handle = FileHandle(info?.pointee.fh ?? 0)
    let caller = requester(request)
    let pending = PendingRequest(request)
    serve(request, plus ? .readdirplus : .readdir, mayTakeLong: inode) { context throws(FileSystemError) in
        let request = pending.request
        // Not zeroed first: fuse_add_direntry(_plus) writes every byte of what it adds (padding
        // included) and only the `used` bytes it wrote are sent. The kernel asks for up to
        // max_pages (1 MiB); zeroing that per request showed in profiles of `find`.
        var buffer = [UInt8](unsafeUninitializedCapacity: max(size, 0)) { _, count in count = max(size, 0) }
        var used = 0
        var lookedUp: [InodeNumber] = []
        var failure: FileSystemError?
        buffer.withUnsafeMutableBufferPointer { storage in
            let base = UnsafeMutableRawPointer(storage.baseAddress!).assumingMemoryBound(to: CChar.self)
            do throws(FileSystemError) {
                try context.fileSystem.readDirectory(
                    InodeNumber(inode), handle: handle, offset: UInt64(bitPattern: Int64(offset)), plus: plus,
                    context: caller
                ) { item in
                    let remaining = size - used
                    let needed = item.name.withCString { name in
                        if plus {
                            var parameters = entryParameters(item.entry)
                            return fuse_add_direntry_plus(
                                request, base + used, remaining, name, &parameters,
                                off_t(Int64(bitPattern: item.nextOffset)))
                        } else {
                            var status = fileStatus(item.entry.attributes)
                            return fuse_add_direntry(
                                request, base + used, remaining, name, &status,
                                off_t(Int64(bitPattern: item.nextOffset)))
                        }
                    }
                    guard needed <= remaining else { return false }
                    used += needed
                    if plus && item.name != "." && item.name != ".." && item.entry.attributes.inode.rawValue != 0 {
                        lookedUp.append(item.entry.attributes.inode)
                    }
                    return true
                }
            } catch {
                failure = error
            }
        }
        if let failure, used == 0 { throw failure }
        buffer.removeSubrange(used...)
        return .directory(buffer, lookedUp: lookedUp)
    }
}

// MARK: - Conversions

private func requester(_ request: fuse_req_t?) -> RequestContext {
    let caller = fuse_req_ctx(request)!.pointee
    return RequestContext(uid: caller.uid, gid: caller.gid, pid: caller.pid)
}

private func configure(_ connection: UnsafeMutablePointer<fuse_conn_info>, _ context: SessionContext) {
    // Flags go through fuse_set_feature_flag/fuse_unset_feature_flag (want_ext): libfuse 3.17+
    // refuses an INIT whose legacy `want` and `want_ext` were both changed.
    let capable = connection.pointee.capable_ext
    // Attributes come with the names (one batched query), so every listing is a READDIRPLUS:
    // `ls -l` then needs no LOOKUP per entry.
    _ = fuse_set_feature_flag(connection, UInt64(FUSE_CAP_READDIRPLUS))
    fuse_unset_feature_flag(connection, UInt64(FUSE_CAP_READDIRPLUS_AUTO))
    // Splice only helps payloads above a page or two; the writeback cache would make the kernel
    // authoritative for size and mtime. Neither fits small object-graph files. ASYNC_READ,
    // PARALLEL_DIROPS and AUTO_INVAL_DATA keep libfuse's defaults.
    for flag in [FUSE_CAP_SPLICE_READ, FUSE_CAP_SPLICE_WRITE, FUSE_CAP_SPLICE_MOVE, FUSE_CAP_WRITEBACK_CACHE] {
        fuse_unset_feature_flag(connection, UInt64(flag))
    }
    // Atomic O_TRUNC: open() gets O_TRUNC in its flags and truncates there. Without it the kernel
    // sends SETATTR(size 0) *without* the file handle (fuse_setattr drops it for ATTR_OPEN), so a
    // filesystem that buffers writes per handle could not tell `> file` from `truncate -s 0 file`.
    _ = fuse_set_feature_flag(connection, UInt64(FUSE_CAP_ATOMIC_O_TRUNC))
    // The server clears set-user-ID and set-group-ID bits itself (FuseKit does, see
    // dropSetIDBits): the kernel then sends no GETXATTR security.capability before each write and
    // no SETATTR to kill privileges, and marks the rare write, open or truncate that must.
    _ = fuse_set_feature_flag(connection, UInt64(FUSE_CAP_HANDLE_KILLPRIV_V2))
    fuse_unset_feature_flag(connection, UInt64(FUSE_CAP_HANDLE_KILLPRIV))
    // No FUSE_CAP_POSIX_ACL: storefs has no ACLs, and says so (EOPNOTSUPP for system.posix_acl_*),
    // which the kernel's ACL handling would take as an error on every permission check.
    fuse_unset_feature_flag(connection, UInt64(FUSE_CAP_POSIX_ACL))
    // Locks: held by the filesystem when it says so (FileLocks.swift), else by the kernel, locally.
    if !context.holdsFileLocks {
        fuse_unset_feature_flag(connection, UInt64(FUSE_CAP_POSIX_LOCKS))
        fuse_unset_feature_flag(connection, UInt64(FUSE_CAP_FLOCK_LOCKS))
    }
    // Link targets in the page cache: READLINK once per link and mount (MountOptions.cachesLinkTargets).
    if context.wantsCachedLinkTargets {
        _ = fuse_set_feature_flag(connection, UInt64(FUSE_CAP_CACHE_SYMLINKS))
    } else {
        fuse_unset_feature_flag(connection, UInt64(FUSE_CAP_CACHE_SYMLINKS))
    }
    // FUSE over io_uring: libfuse asks for it when `-o io_uring` was given (MountOptions.ioUring)
    // and the kernel offers it; remembered to say in the log which way requests came.
    context.kernelOffersIOUring.store(capable & UInt64(FUSE_CAP_OVER_IO_URING) != 0, ordering: .relaxed)
    // FUSE passthrough (PassthroughFiles): the kernel reads values kept in files itself. It
    // excludes the writeback cache, which is off (above).
    if capable & UInt64(FUSE_CAP_PASSTHROUGH) != 0 {
        _ = fuse_set_feature_flag(connection, UInt64(FUSE_CAP_PASSTHROUGH))
        context.passthrough.isOn.store(true, ordering: .relaxed)
    }

    // Zero-message open is not a `want` bit: offered in `capable`, it means the kernel takes ENOSYS
    // from OPEN (OPENDIR) as success and stops sending them. Files opened so are never RELEASEd, and
    // RELEASE is where a flock ends: a filesystem holding file locks keeps file opens.
    if context.wantsOpensWithoutRequests && !context.holdsFileLocks
        && capable & UInt64(FUSE_CAP_NO_OPEN_SUPPORT) != 0
    {
        context.opensWithoutRequests.store(true, ordering: .relaxed)
    }
    if context.wantsOpensWithoutRequests && capable & UInt64(FUSE_CAP_NO_OPENDIR_SUPPORT) != 0 {
        context.opensDirectoriesWithoutRequests.store(true, ordering: .relaxed)
    }
}

private func apply(_ result: OpenResult, to info: UnsafeMutablePointer<fuse_file_info>, _ context: SessionContext) {
    info.pointee.fh = result.handle.rawValue
    info.pointee.keep_cache = result.keepCache ? 1 : 0
    info.pointee.direct_io = result.directIO ? 1 : 0
    info.pointee.cache_readdir = result.cacheDirectory ? 1 : 0
    // A filesystem holding POSIX locks hears every close (FLUSH), where they end.
    cfuse_file_info_set_noflush(info, result.needsFlush || context.holdsFileLocks ? 0 : 1)
}

private func entryParameters(_ entry: Entry) -> fuse_entry_param {
    var parameters = fuse_entry_param()
    parameters.ino = fuse_ino_t(entry.attributes.inode.rawValue)
    parameters.generation = entry.generation
    parameters.attr = fileStatus(entry.attributes)
    parameters.attr_timeout = entry.attributeTimeout
    parameters.entry_timeout = entry.entryTimeout
    return parameters
}

/// `struct stat` for `attributes`: kind bits | permissions, 512-byte blocks, 4 KiB I/O size.
private func fileStatus(_ attributes: FileAttributes) -> stat {
    var status = stat()
    status.st_ino = numericCast(attributes.inode.rawValue)
    let kindBits: mode_t
    switch attributes.kind {
    case .directory: kindBits = S_IFDIR
    case .regularFile: kindBits = S_IFREG
    case .symbolicLink: kindBits = S_IFLNK
    }
    status.st_mode = kindBits | mode_t(attributes.permissions & 0o7777)
    status.st_nlink = numericCast(attributes.linkCount)
    status.st_size = off_t(clamping: attributes.size)
    status.st_blocks = blkcnt_t(clamping: (attributes.size + 511) / 512)
    status.st_blksize = 4096
    status.st_uid = attributes.uid
    status.st_gid = attributes.gid
    status.st_atim = timeSpec(attributes.accessTime)
    status.st_mtim = timeSpec(attributes.modificationTime)
    status.st_ctim = timeSpec(attributes.changeTime)
    return status
}

/// A time for the kernel. A time no `timespec` holds (infinite, NaN, beyond ±2^63 s: a damaged
/// value that reached a node's time) is clamped to the nearest one it does: a filesystem's number
/// never ends the server.
private func timeSpec(_ date: Date) -> timespec {
    let interval = date.timeIntervalSince1970
    guard interval.isFinite else {
        return timespec(tv_sec: interval > 0 ? Int.max : interval < 0 ? Int.min : 0, tv_nsec: 0)
    }
    let seconds = interval.rounded(.down)
    guard let whole = Int(exactly: seconds) else {
        return timespec(tv_sec: seconds > 0 ? Int.max : Int.min, tv_nsec: 0)
    }
    let nanoseconds = min(999_999_999, max(0, Int(((interval - seconds) * 1e9).rounded())))
    return timespec(tv_sec: whole, tv_nsec: nanoseconds)
}

private func date(_ time: timespec) -> Date {
    Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
}

/// The FUSE_SET_ATTR_* bits of a setattr as ``AttributeChanges``; the *_NOW bits (utimensat's
/// UTIME_NOW, `touch`) become the current time.
private func attributeChanges(_ attributes: stat, _ toSet: Int32) -> AttributeChanges {
    var changes = AttributeChanges()
    if toSet & FUSE_SET_ATTR_MODE != 0 { changes.permissions = UInt32(attributes.st_mode) & 0o7777 }
    if toSet & FUSE_SET_ATTR_UID != 0 { changes.uid = attributes.st_uid }
    if toSet & FUSE_SET_ATTR_GID != 0 { changes.gid = attributes.st_gid }
    if toSet & FUSE_SET_ATTR_SIZE != 0 { changes.size = UInt64(max(0, attributes.st_size)) }
    if toSet & FUSE_SET_ATTR_ATIME_NOW != 0 {
        changes.accessTime = Date()
    } else if toSet & FUSE_SET_ATTR_ATIME != 0 {
        changes.accessTime = date(attributes.st_atim)
    }
    if toSet & FUSE_SET_ATTR_MTIME_NOW != 0 {
        changes.modificationTime = Date()
    } else if toSet & FUSE_SET_ATTR_MTIME != 0 {
        changes.modificationTime = date(attributes.st_mtim)
    }
    return changes
}
