#if STOREFS_TSAN
    #if canImport(Glibc)
        import Glibc
    #endif

    /// Synchronization's `Mutex` as ThreadSanitizer can see it, used only in builds made with
    /// `-DSTOREFS_TSAN` (scripts/tsan).
    ///
    /// On Linux, `Mutex` waits on a futex directly, which ThreadSanitizer does not model: every access
    /// to state a `Mutex` guards shows as a race (a ten-line program with two threads and one `Mutex`
    /// reproduces it). This stand-in locks a pthread mutex, which ThreadSanitizer intercepts, so that
    /// what it reports is about state no lock guards. Each module that locks declares
    /// `typealias Mutex = ThreadSanitizerMutex` under the same flag (its ThreadSanitizerMutex.swift),
    /// so its `Mutex` is this one in those builds and Synchronization's otherwise.
    ///
    /// Threading: what a mutex is for.
    public final class ThreadSanitizerMutex<Value>: @unchecked Sendable {
        // @unchecked: `value` is only touched between lock and unlock of `lock`.
        private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        // The value lives outside the object: a stored property of size zero (`Mutex(())`) is reported
        // by ThreadSanitizer at the object's own address, so every other thread's read of the object
        // header showed as a race with the holder.
        private let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)

        public init(_ value: Value) {
            self.value.initialize(to: value)
            pthread_mutex_init(lock, nil)
        }

        deinit {
            pthread_mutex_destroy(lock)
            lock.deallocate()
            value.deinitialize(count: 1)
            value.deallocate()
        }

        public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            return try body(&value.pointee)
        }

        /// `body` with the lock when it is free now; nil when another thread holds it.
        public func withLockIfAvailable<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E)
            -> Result?
        {
            guard pthread_mutex_trylock(lock) == 0 else { return nil }
            defer { pthread_mutex_unlock(lock) }
            return try body(&value.pointee)
        }
    }
#endif
