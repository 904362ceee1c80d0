import Synchronization

/// Counts of the requests a ``FuseSession`` served, one atomic counter per kind, so benchmarks can
/// report requests per workload (FAST'17 did this for every workload).
///
/// Threading: safe from any thread; increments are relaxed atomics on libfuse worker threads.
/// ```swift
/// let counters = OperationCounters()
/// // ... mount, run `ls -l` ...
/// print(counters.snapshot())   // ["getattr": 1, "opendir": 1, "readdirplus": 2, ...]
/// ```
public final class OperationCounters: Sendable {
    /// A kind of request (or event) that is counted.
    public enum Operation: String, CaseIterable, Sendable {
        /// LOOKUP.
        case lookup
        /// FORGET.
        case forget
        /// BATCH_FORGET: one per message.
        case batchForget
        /// GETATTR.
        case getattr
        /// SETATTR.
        case setattr
        /// READLINK.
        case readlink
        /// MKNOD.
        case mknod
        /// MKDIR.
        case mkdir
        /// UNLINK.
        case unlink
        /// RMDIR.
        case rmdir
        /// SYMLINK.
        case symlink
        /// RENAME.
        case rename
        /// OPEN.
        case open
        /// READ.
        case read
        /// WRITE.
        case write
        /// FLUSH.
        case flush
        /// RELEASE.
        case release
        /// FSYNC.
        case fsync
        /// OPENDIR.
        case opendir
        /// READDIR.
        case readdir
        /// READDIRPLUS.
        case readdirplus
        /// RELEASEDIR.
        case releasedir
        /// FSYNCDIR.
        case fsyncdir
        /// STATFS.
        case statfs
        /// SETXATTR.
        case setxattr
        /// GETXATTR.
        case getxattr
        /// LISTXATTR.
        case listxattr
        /// REMOVEXATTR.
        case removexattr
        /// CREATE.
        case create
        /// GETLK, SETLK and SETLKW (flock and fcntl locks), on a filesystem that holds them.
        case lock
        /// requests answered with an errno.
        case errors
        /// kernel cache notifications sent.
        case invalidations
        /// kernel cache notifications the kernel refused (ENOENT: nothing was cached, or the file
        /// a preload was for is not known to it).
        case invalidationFailures
        /// files whose content was put into the kernel's page cache before anyone read them (the
        /// kernel refusing one counts as an invalidation failure).
        case preloads
    }

    private let lookupCount = Atomic<Int>(0)
    private let forgetCount = Atomic<Int>(0)
    private let batchForgetCount = Atomic<Int>(0)
    private let getattrCount = Atomic<Int>(0)
    private let setattrCount = Atomic<Int>(0)
    private let readlinkCount = Atomic<Int>(0)
    private let mknodCount = Atomic<Int>(0)
    private let mkdirCount = Atomic<Int>(0)
    private let unlinkCount = Atomic<Int>(0)
    private let rmdirCount = Atomic<Int>(0)
    private let symlinkCount = Atomic<Int>(0)
    private let renameCount = Atomic<Int>(0)
    private let openCount = Atomic<Int>(0)
    private let readCount = Atomic<Int>(0)
    private let writeCount = Atomic<Int>(0)
    private let flushCount = Atomic<Int>(0)
    private let releaseCount = Atomic<Int>(0)
    private let fsyncCount = Atomic<Int>(0)
    private let opendirCount = Atomic<Int>(0)
    private let readdirCount = Atomic<Int>(0)
    private let readdirplusCount = Atomic<Int>(0)
    private let releasedirCount = Atomic<Int>(0)
    private let fsyncdirCount = Atomic<Int>(0)
    private let statfsCount = Atomic<Int>(0)
    private let setxattrCount = Atomic<Int>(0)
    private let getxattrCount = Atomic<Int>(0)
    private let listxattrCount = Atomic<Int>(0)
    private let removexattrCount = Atomic<Int>(0)
    private let createCount = Atomic<Int>(0)
    private let lockCount = Atomic<Int>(0)
    private let errorsCount = Atomic<Int>(0)
    private let invalidationsCount = Atomic<Int>(0)
    private let invalidationFailuresCount = Atomic<Int>(0)
    private let preloadsCount = Atomic<Int>(0)

    /// Durations of requests, when they are measured (a mount with `--metrics`).
    public let timings: RequestTimings?

    public init(timings: RequestTimings? = nil) {
        self.timings = timings
    }

    /// Adds one to the counter of `operation`.
    public func record(_ operation: Operation) {
        _ = counter(operation) { $0.wrappingAdd(1, ordering: .relaxed) }
    }

    /// The current count of `operation`.
    public func count(of operation: Operation) -> Int {
        counter(operation) { $0.load(ordering: .relaxed) }
    }

    /// The counts by ``Operation`` raw value (`"lookup"`, `"readdirplus"`, …); zero counts are
    /// left out unless `includingZeros`, so a printed snapshot shows only what a workload did.
    public func snapshot(includingZeros: Bool = false) -> [String: Int] {
        var counts: [String: Int] = [:]
        for operation in Operation.allCases {
            let value = count(of: operation)
            if value != 0 || includingZeros { counts[operation.rawValue] = value }
        }
        return counts
    }

    /// Sets every counter to zero (between the phases of a benchmark, say). Not atomic as a
    /// whole: requests served meanwhile may be counted or not.
    public func reset() {
        for operation in Operation.allCases {
            counter(operation) { $0.store(0, ordering: .relaxed) }
        }
    }

    // Atomic is ~Copyable, so the counters can't live in an array; this switch is the one map
    // from an operation to its counter.
    private func counter<R>(_ operation: Operation, _ body: (borrowing Atomic<Int>) -> R) -> R {
        switch operation {
        case .lookup: body(lookupCount)
        case .forget: body(forgetCount)
        case .batchForget: body(batchForgetCount)
        case .getattr: body(getattrCount)
        case .setattr: body(setattrCount)
        case .readlink: body(readlinkCount)
        case .mknod: body(mknodCount)
        case .mkdir: body(mkdirCount)
        case .unlink: body(unlinkCount)
        case .rmdir: body(rmdirCount)
        case .symlink: body(symlinkCount)
        case .rename: body(renameCount)
        case .open: body(openCount)
        case .read: body(readCount)
        case .write: body(writeCount)
        case .flush: body(flushCount)
        case .release: body(releaseCount)
        case .fsync: body(fsyncCount)
        case .opendir: body(opendirCount)
        case .readdir: body(readdirCount)
        case .readdirplus: body(readdirplusCount)
        case .releasedir: body(releasedirCount)
        case .fsyncdir: body(fsyncdirCount)
        case .statfs: body(statfsCount)
        case .setxattr: body(setxattrCount)
        case .getxattr: body(getxattrCount)
        case .listxattr: body(listxattrCount)
        case .removexattr: body(removexattrCount)
        case .create: body(createCount)
        case .lock: body(lockCount)
        case .errors: body(errorsCount)
        case .invalidations: body(invalidationsCount)
        case .invalidationFailures: body(invalidationFailuresCount)
        case .preloads: body(preloadsCount)
        }
    }
}
