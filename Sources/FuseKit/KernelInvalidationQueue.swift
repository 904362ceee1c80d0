import CFuse
import Dispatch
import Foundation
import Logging
import Synchronization

/// The ``KernelCacheInvalidator`` a ``FuseSession`` hands to its filesystem: it queues each
/// request and sends the `fuse_lowlevel_notify_*` calls from one serial dispatch queue, in the
/// order they were asked for.
///
/// Notifications are never sent inline: libfuse deadlocks when one is sent while a related request
/// is being handled ("these asynchronous operations SHALL NOT be performed while executing other
/// FUSE requests", doc/README.notifications). So the methods may be called from anywhere, even
/// from inside a request handler; they return at once and the kernel forgets a moment later.
///
/// Requests wait in one list and a dispatch job sends all that are waiting, so a burst (a new
/// object invalidates about seven things) wakes the sending thread once rather than per request.
/// What a FUSE request asks for is sent once the request is answered (``InvalidationBatches``):
/// one wake-up per request that invalidates anything.
///
/// Threading: all methods are safe from any thread. After ``close(waitingUpTo:)`` requests are
/// dropped (the kernel's caches die with the mount anyway).
final class KernelInvalidationQueue: KernelCacheInvalidator {
    private enum Notification {
        case entry(parent: InodeNumber, name: String)
        case inode(InodeNumber)
        case delete(parent: InodeNumber, child: InodeNumber, name: String)
        /// A folder's files, sent together; `bytes` is their size in ``preloadBacklog``.
        case preload([(inode: InodeNumber, data: Data)], bytes: Int)
    }

    private let session: SessionHandle
    private let counters: OperationCounters
    private let logger: Logger
    private let queue = DispatchQueue(label: "storefs.fusekit.invalidation")
    private let closed = Atomic<Bool>(false)
    /// What is waiting to be sent, oldest first. A drain job is queued whenever this goes from
    /// empty to not empty.
    private let waiting = Mutex(Waiting())

    /// The list, and the inodes and names an invalidation waiting in it already covers: asking
    /// again for one not sent yet adds nothing, since it is sent after the change that asks
    /// again. (A burst of changes to one object folder, as `cp -a` makes, asks for the folder's
    /// inode a dozen times.) A preload or a deletion ends that: an invalidation asked after it
    /// must follow it, so the sets start afresh.
    private struct Waiting {
        var list: [Notification] = []
        var inodes: Set<InodeNumber> = []
        var entries: Set<EntryName> = []
        /// A drain job is queued and has not taken the list yet.
        var drainQueued = false
    }

    private struct EntryName: Hashable {
        var parent: InodeNumber
        var name: String
    }
    /// Bytes of preloads queued and not sent yet; beyond ``preloadBacklogLimit`` new ones are
    /// dropped (a preload is only a hint; the files are read on demand instead).
    private let preloadBacklog = Atomic<Int>(0)
    static let preloadBacklogLimit = 16 << 20

    init(session: SessionHandle, counters: OperationCounters, logger: Logger) {
        self.session = session
        self.counters = counters
        self.logger = logger
    }

    func invalidateEntry(parent: InodeNumber, name: String) { enqueue(.entry(parent: parent, name: name)) }

    func invalidateInode(_ inode: InodeNumber) { enqueue(.inode(inode)) }

    func notifyDelete(parent: InodeNumber, child: InodeNumber, name: String) {
        enqueue(.delete(parent: parent, child: child, name: name))
    }

    func preload(_ files: [(inode: InodeNumber, data: Data)]) {
        guard !files.isEmpty, !closed.load(ordering: .relaxed) else { return }
        let bytes = files.reduce(0) { $0 + $1.data.count }
        guard preloadBacklog.wrappingAdd(bytes, ordering: .relaxed).newValue <= Self.preloadBacklogLimit else {
            preloadBacklog.wrappingSubtract(bytes, ordering: .relaxed)
            return
        }
        if !enqueue(.preload(files, bytes: bytes)) { preloadBacklog.wrappingSubtract(bytes, ordering: .relaxed) }
    }

    /// Stops sending: queued requests are dropped, and this waits (at most `timeout` seconds)
    /// for a notification already in the kernel. Returns false if that one is still in flight,
    /// in which case the session must not be destroyed.
    ///
    /// A notification can block in the kernel on a directory lock held by a request the stopped
    /// loop will never answer; unmounting releases it, hence the bounded wait.
    func close(waitingUpTo timeout: Double) -> Bool {
        closed.store(true, ordering: .sequentiallyConsistent)
        let drained = DispatchSemaphore(value: 0)
        queue.async { drained.signal() }
        return drained.wait(timeout: .now() + timeout) == .success
    }

    /// Waits (at most `timeout` seconds) until everything queued so far was sent: a lock granted
    /// after another machine's change answers only once the kernel forgot what that change made
    /// stale. Never called from the invalidation queue itself.
    func waitUntilSent(timeout: Double) -> Bool {
        let sent = DispatchSemaphore(value: 0)
        // What a request still being served put off is sent now too.
        queue.async { [self] in
            drain()
            sent.signal()
        }
        return sent.wait(timeout: .now() + timeout) == .success
    }

    /// Queues `notification`; false when the queue is closed and it was dropped.
    @discardableResult
    private func enqueue(_ notification: Notification) -> Bool {
        guard !closed.load(ordering: .relaxed) else { return false }
        let undrained = waiting.withLock { waiting -> Bool in
            switch notification {
            case .inode(let inode):
                guard waiting.inodes.insert(inode).inserted else { return false }
            case .entry(let parent, let name):
                guard waiting.entries.insert(EntryName(parent: parent, name: name)).inserted else { return false }
            case .delete, .preload:
                waiting.inodes = []
                waiting.entries = []
            }
            waiting.list.append(notification)
            return !waiting.drainQueued
        }
        if undrained, !InvalidationBatches.putOff(self) { wakeIfWaiting() }
        return true
    }

    /// Queues a drain unless one is queued or nothing waits: at once from a thread that serves no
    /// request, after the answer from one that does.
    func wakeIfWaiting() {
        let wake = waiting.withLock { waiting -> Bool in
            guard !waiting.drainQueued, !waiting.list.isEmpty else { return false }
            waiting.drainQueued = true
            return true
        }
        if wake { queue.async { [self] in drain() } }
    }

    /// Sends what is waiting, in order. Runs on `queue`, so one drain at a time.
    private func drain() {
        let batch = waiting.withLock { waiting in
            defer { waiting = Waiting() }
            return waiting.list
        }
        for notification in batch {
            if !closed.load(ordering: .sequentiallyConsistent) { send(notification) }
            if case .preload(_, let bytes) = notification { preloadBacklog.wrappingSubtract(bytes, ordering: .relaxed) }
        }
    }

    private func send(_ notification: Notification) {
        let session = session.raw
        switch notification {
        case .entry(let parent, let name):
            let result = name.withCString {
                fuse_lowlevel_notify_inval_entry(session, parent.rawValue, $0, name.utf8.count)
            }
            noteInvalidation(result, "inval_entry \(parent) \(name)")
        case .inode(let inode):
            // off 0, len 0: drop attributes and all cached data (a directory's cached listing too).
            noteInvalidation(fuse_lowlevel_notify_inval_inode(session, inode.rawValue, 0, 0), "inval_inode \(inode)")
        case .delete(let parent, let child, let name):
            let result = name.withCString {
                fuse_lowlevel_notify_delete(session, parent.rawValue, child.rawValue, $0, name.utf8.count)
            }
            noteInvalidation(result, "delete \(parent) \(name) \(child)")
        case .preload(let files, _):
            for (inode, data) in files where !data.isEmpty {
                guard !closed.load(ordering: .sequentiallyConsistent) else { return }
                let result = data.withUnsafeBytes { bytes in
                    var buffers = fuse_bufvec(
                        count: 1, idx: 0, off: 0,
                        buf: (fuse_buf(
                            size: bytes.count, flags: fuse_buf_flags(rawValue: 0),
                            mem: UnsafeMutableRawPointer(mutating: bytes.baseAddress), fd: -1, pos: 0,
                            mem_size: bytes.count)))
                    return fuse_lowlevel_notify_store(
                        session, inode.rawValue, 0, &buffers, fuse_buf_copy_flags(rawValue: 0))
                }
                if result == 0 { counters.record(.preloads) } else { noteRefusal(result, "store \(inode)") }
            }
        }
    }

    private func noteInvalidation(_ result: Int32, _ what: @autoclosure () -> String) {
        counters.record(.invalidations)
        if result != 0 { noteRefusal(result, what()) }
    }

    /// A notification the kernel refused. -ENOENT only means it had nothing cached (or does not
    /// know the file a preload was for): not an error, so trace level (storefs -vv), per request.
    private func noteRefusal(_ result: Int32, _ what: @autoclosure () -> String) {
        counters.record(.invalidationFailures)
        logger.trace("notify \(what()) returned \(result)")
    }
}
