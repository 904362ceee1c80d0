import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Bytes read at offsets: a file, or a buffer in memory (tests and fuzzing). Every read is
/// checked against the source's size before anything is allocated, so an offset or a length read
/// from a hostile file costs nothing.
///
/// Threading: implementations are safe from several threads (reads share no position).
public protocol ByteSource: Sendable {
    /// The number of bytes there are.
    var size: Int64 { get }
    /// `count` bytes from `offset`; nil when they are not all there (or the read failed).
    func bytes(at offset: Int64, count: Int) -> [UInt8]?
}

/// A file opened read-only and read with `pread`: no position, no lock, nothing written.
public final class FileBytes: ByteSource {
    public let size: Int64
    private let descriptor: Int32

    /// Reads through `descriptor`, a file opened for reading, and closes it with this (a caller
    /// that opened it with flags of its own: no link followed, no access time).
    public init(descriptor: Int32) {
        self.descriptor = descriptor
        var info = stat()
        size = fstat(descriptor, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Opens `path` read-only; nil when it cannot be opened.
    public init?(path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        size = Int64(info.st_size)
    }

    deinit { close(descriptor) }

    public func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        guard count >= 0, offset >= 0, offset <= size, Int64(count) <= size - offset else { return nil }
        if count == 0 { return [] }
        var result = [UInt8](repeating: 0, count: count)
        var done = 0
        let ok = result.withUnsafeMutableBytes { buffer -> Bool in
            while done < count {
                let n = pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                done += n
            }
            return true
        }
        return ok ? result : nil
    }
}

/// Bytes held in memory.
public struct MemoryBytes: ByteSource {
    public let data: [UInt8]
    public var size: Int64 { Int64(data.count) }

    public init(_ data: [UInt8]) { self.data = data }

    public func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        guard count >= 0, offset >= 0, offset <= size, Int64(count) <= size - offset else { return nil }
        let start = Int(offset)
        return Array(data[start..<(start + count)])
    }
}

/// A source with some of its bytes replaced: the pages saved before a private copy was
/// checkpointed, laid back over the copy, give the database file as it was read.
public struct PatchedBytes: ByteSource {
    public let base: any ByteSource
    public let size: Int64
    /// Replaced runs of ``runLength`` bytes, by their offset here: where they are in `patches`.
    private let runs: [Int64: Int64]
    private let patches: any ByteSource
    private let runLength: Int64

    /// `base` with the run of `runLength` bytes at each offset `o` of `runs` (a multiple of
    /// `runLength`) replaced by the bytes of `patches` at `runs[o]`, and cut (or extended with
    /// `base`'s bytes) to `size`. A read must stay within one run (page reads at page offsets do);
    /// one that straddles a replaced run's edge reads nothing.
    public init(base: any ByteSource, size: Int64, patches: any ByteSource, runs: [Int64: Int64], runLength: Int) {
        self.base = base
        self.size = size
        self.patches = patches
        self.runs = runs
        self.runLength = Int64(max(runLength, 1))
    }

    public func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        guard count >= 0, offset >= 0, offset <= size, Int64(count) <= size - offset else { return nil }
        let start = offset - offset % runLength
        let end = offset + Int64(count)
        if let at = runs[start] {
            guard end <= start + runLength else { return nil }
            return patches.bytes(at: at + (offset - start), count: count)
        }
        let last = (end - 1) - (end - 1) % runLength
        if count > 0, last != start, runs[last] != nil { return nil }
        return base.bytes(at: offset, count: count)
    }
}
