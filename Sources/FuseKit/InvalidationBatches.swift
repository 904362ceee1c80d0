import Glibc

/// Invalidations a request asks for are sent together once its work is done: one wake-up of the
/// invalidation queue's thread per request instead of one per invalidation (a `cp -a` close asks
/// for the file, its folder and the folder again), and an invalidation asked twice in one request
/// is sent once (``KernelInvalidationQueue``'s sets of what is waiting).
///
/// Per thread: while a thread serves a request inline (``serving(_:)``), a queue that gets its first
/// waiting notification notes itself here instead of waking its thread; when the request's work
/// is done, the thread wakes it. A thread that serves no request (a commit timer, the change
/// poll), or a request handed to a thread that may wait long (fsync), wakes it at once, as does a
/// second queue on the same thread (another session).
enum InvalidationBatches {
    /// The thread's slot: nil outside a request, ``servingMark`` in one that owes no drain, else a
    /// retained ``KernelInvalidationQueue`` to wake when the request ends.
    nonisolated(unsafe) private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
    nonisolated(unsafe) private static let servingMark = UnsafeMutableRawPointer(bitPattern: 1)!

    /// Runs `body` (serving one request) with the invalidations it asks for put off until it
    /// returns: the thread then wakes the queue once, just before the answer is sent (the kernel
    /// gets them about when it did when each woke the queue, so a tool's next call finds them
    /// done rather than racing them).
    static func serving<Result>(_ body: () throws(FileSystemError) -> Result) throws(FileSystemError) -> Result {
        // Not nested in practice; a nested call leaves the outer request's batch to it.
        guard pthread_getspecific(key) == nil else { return try body() }
        pthread_setspecific(key, servingMark)
        defer {
            let owed = pthread_getspecific(key)
            pthread_setspecific(key, nil)
            if let owed, owed != servingMark {
                Unmanaged<KernelInvalidationQueue>.fromOpaque(owed).takeRetainedValue().wakeIfWaiting()
            }
        }
        return try body()
    }

    /// Called by `queue` when a notification is waiting and no drain is queued: true when this
    /// thread serves a request and will wake `queue` when it ends; false when the caller must.
    static func putOff(_ queue: KernelInvalidationQueue) -> Bool {
        guard let slot = pthread_getspecific(key) else { return false }
        if slot == servingMark {
            pthread_setspecific(key, Unmanaged.passRetained(queue).toOpaque())
            return true
        }
        return slot == Unmanaged.passUnretained(queue).toOpaque()
    }
}
