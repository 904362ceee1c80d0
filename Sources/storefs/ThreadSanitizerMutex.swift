#if STOREFS_TSAN
import ObjectGraph

/// In ThreadSanitizer builds, locks ThreadSanitizer can see (ObjectGraph's ThreadSanitizerMutex
/// says why); otherwise Synchronization's `Mutex`.
typealias Mutex = ThreadSanitizerMutex
#endif
