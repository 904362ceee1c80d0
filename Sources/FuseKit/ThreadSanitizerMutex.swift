#if STOREFS_TSAN
    import Locking

    /// In ThreadSanitizer builds, locks ThreadSanitizer can see (Sources/Locking says why);
    /// otherwise Synchronization's `Mutex`.
    typealias Mutex = ThreadSanitizerMutex
#endif
