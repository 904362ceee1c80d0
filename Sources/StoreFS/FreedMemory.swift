import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Gives the memory of evicted rows back to the system. A walk of a large mount turns the row
/// cache over thousands of times; glibc keeps what the worker threads freed in their arenas, so
/// the server grew with the objects walked although the cache stayed at its limit (1,000,000
/// objects: 356 MB with a 32 MiB cache). `malloc_trim` returns the free pages of every arena, and
/// large blocks are mapped apart from them.
///
/// Threading: called from the background thread only; one lock for its figures.
final class FreedMemory: Sendable {
    /// Seconds between trims at most (a trim of a few hundred MB of heap takes milliseconds).
    static let interval = 2.0

    private struct State {
        /// No count of evictions: the first call trims, after the store was opened (loading an XML
        /// or binary store freed its file and what was read from it: 60 MB of the 1.9 GB a
        /// mounted million-object XML store kept).
        var evictions = -1
        var last = Date.distantPast
    }

    private let state = Mutex(State())

    init() {
        _ = Self.largeBlocksMapped
    }

    /// Trims when rows were evicted since the last trim and `interval` has passed, and the first
    /// time it is called.
    func trimIfRowsWereEvicted(_ evictions: Int) {
        let due = state.withLock { state -> Bool in
            guard evictions != state.evictions, Date().timeIntervalSince(state.last) >= Self.interval else {
                return false
            }
            state.evictions = evictions
            state.last = Date()
            return true
        }
        if due, let trim = Self.mallocTrim { _ = trim(0) }
    }

    /// Blocks of this size and above get pages of their own (mmap), given back when freed.
    static let mappedBlockSize: Int32 = 256 << 10

    /// Fixes glibc's threshold for mapping a block at ``mappedBlockSize``, once per process. Left
    /// to itself glibc raises the threshold to the size of each mapped block freed (up to 32 MiB):
    /// after a walk freed the listing of a large entity, blocks of up to that size came from the
    /// arenas, where they fragmented and stayed; the server walking 1,000,000 objects peaked at
    /// 167 MB instead of 121 MB.
    private static let largeBlocksMapped: Bool = {
        #if canImport(Glibc)
            // M_MMAP_THRESHOLD in malloc.h.
            let mmapThreshold: Int32 = -3
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return false }
            let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
            return mallopt(mmapThreshold, mappedBlockSize) == 1
        #else
            return false
        #endif
    }()

    /// glibc's `malloc_trim` (declared in malloc.h, which no Swift module exports), looked up
    /// once; nil with another C library.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
            return nil
        #endif
    }()
}
