import Foundation
import FuseKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A kernel a test drives completely: path-based system calls (`stat`, `open`+`write`+`close`,
/// `mkdir`, `rename`, …) turned into the calls a ``FileSystem`` gets from FuseKit, in the order
/// Linux's FUSE client makes them, without /dev/fuse.
///
/// It keeps the lookup count of every inode the way the kernel does (one per successful LOOKUP,
/// CREATE, MKDIR, SYMLINK, MKNOD and READDIRPLUS entry; ``forgetAll()`` gives them back), records
/// every cache invalidation the filesystem asks for, and checks what the kernel itself checks
/// before it asks (an existing name for `mkdir`/`symlink`/O_EXCL, a directory for `rmdir`).
/// It keeps, as the kernel does for the timeouts the filesystem gives, the names it found in
/// folders and the attributes it was told, and drops them on the invalidations the filesystem
/// sends and on its own changes (unlink, rmdir, rename). It does not answer from them (every call
/// asks the filesystem, so a test sees the filesystem's answer); ``finish()`` compares them with
/// the filesystem's answers at the end, as swift-nio's `EmbeddedChannel.finish()` reports what is
/// left over: a name or size the kernel would still show although the filesystem changed it is a
/// missing invalidation. What it does not model: the page cache, permissions, concurrency.
///
/// Errors are the errno the call that failed would return, with which call it was
/// (``KernelError``), so a test can check "write(2) failed with EINVAL".
///
/// Threading: one test at a time; the recorded invalidations are safe to record from the
/// filesystem's own threads.
public final class EmbeddedKernel: @unchecked Sendable {
    // @unchecked: the lookup counts are only touched by the test thread that drives the kernel;
    // the invalidations the filesystem records from its threads are behind a Mutex.

    /// An invalidation the filesystem asked for.
    public enum Invalidation: Hashable, Sendable {
        case entry(parent: InodeNumber, name: String)
        case inode(InodeNumber)
        case delete(parent: InodeNumber, child: InodeNumber, name: String)
    }

    /// A failed system call: which one, and its errno.
    public struct KernelError: Error, Equatable, CustomStringConvertible {
        public var call: String
        public var errno: Int32
        public var description: String { "\(call): \(String(cString: strerror(errno))) (errno \(errno))" }
    }

    public let fileSystem: any FileSystem
    public private(set) var lookups: [InodeNumber: UInt64] = [:]
    private let recorded = Mutex<[Invalidation]>([])
    /// Invalidations not yet applied to the caches below.
    private let unapplied = Mutex<[Invalidation]>([])
    /// The names found in folders, by folder, and the path each inode was found at (messages).
    private var names: [InodeNumber: [String: InodeNumber]] = [:]
    private var paths: [InodeNumber: String] = [.root: ""]
    /// The attributes the kernel keeps per inode.
    private var cachedAttributes: [InodeNumber: FileAttributes] = [:]
    /// Files a test opened with ``openFile(_:writing:)`` and has not closed.
    private var openedFiles: [UInt64: OpenedFile] = [:]
    private let preloads = Mutex<[InodeNumber: Data]>([:])
    /// The process a call is made by: each call is its own process, as each command a shell runs
    /// is, but for what ``removeRecursively(_:)`` does, which is one process (`rm -r`).
    private var process: Int32?
    private var lastProcess: Int32 = 100
    private var requester: RequestContext {
        if let process { return RequestContext(uid: 0, gid: 0, pid: process) }
        lastProcess += 1
        return RequestContext(uid: 0, gid: 0, pid: lastProcess)
    }

    /// Mounts `fileSystem`: it gets ``FileSystem/didMount(invalidator:)`` with this kernel.
    public init(_ fileSystem: any FileSystem) {
        self.fileSystem = fileSystem
        fileSystem.didMount(invalidator: Invalidator(kernel: self))
    }

    /// Unmounts: the lookups are forgotten and the filesystem gets ``FileSystem/willUnmount()``.
    public func unmount() {
        forgetAll()
        fileSystem.willUnmount()
    }

    // MARK: - Finishing

    /// What ``finish()`` found left over.
    public struct Leftovers: Sendable, CustomStringConvertible {
        /// Names the kernel still keeps that the filesystem no longer gives (or gives for another
        /// inode): an invalidation was missing.
        public var staleNames: [String] = []
        /// Attributes the kernel still keeps that differ from the filesystem's (kind, size,
        /// permissions, a file's modification time): an invalidation was missing, or a time moved
        /// that should not have (an editor that read the file at the kept time and writes it at
        /// the new one takes it for another process's change).
        public var staleAttributes: [String] = []
        /// Files opened with ``openFile(_:writing:)`` and never closed.
        public var openFiles: [String] = []
        public var isEmpty: Bool { staleNames.isEmpty && staleAttributes.isEmpty && openFiles.isEmpty }
        public var description: String {
            (staleNames.map { "stale name " + $0 } + staleAttributes.map { "stale attributes " + $0 }
                + openFiles.map { "open file " + $0 }).joined(separator: "; ")
        }
    }

    /// Ends the test's use of the kernel: every name and attribute it still keeps is checked
    /// against what the filesystem says now, files left open are reported, and the filesystem is
    /// unmounted. Tests end with `#expect(kernel.finish().isEmpty)`.
    public func finish() -> Leftovers {
        var leftovers = stale()
        for file in openedFiles.values { leftovers.openFiles.append(paths[file.inode] ?? "\(file.inode)") }
        for file in openedFiles.values { try? fileSystem.release(file.inode, handle: file.handle) }
        openedFiles = [:]
        unmount()
        return leftovers
    }

    /// What the kernel keeps that the filesystem no longer says, without finishing.
    public func stale() -> Leftovers {
        applyInvalidations()
        var leftovers = Leftovers()
        // Only what can still be reached from the root: invalidating a folder's name drops
        // everything the kernel kept below it (d_invalidate).
        var reachable: Set<InodeNumber> = [.root]
        var queue: [InodeNumber] = [.root]
        while let folder = queue.popLast() {
            for inode in (names[folder] ?? [:]).values where reachable.insert(inode).inserted { queue.append(inode) }
        }
        for (parent, entries) in names where reachable.contains(parent) {
            for (name, inode) in entries.sorted(by: { $0.key < $1.key }) {
                let path = (paths[parent].map { $0.isEmpty ? "" : $0 + "/" } ?? "?/") + name
                do throws(FileSystemError) {
                    let now = try fileSystem.lookup(parent: parent, name: name, context: requester)
                    lookups[now.attributes.inode, default: 0] += 1
                    if now.attributes.inode != inode { leftovers.staleNames.append("\(path): now another node") }
                } catch {
                    leftovers.staleNames.append("\(path): now \(String(cString: strerror(error.rawValue)))")
                }
            }
        }
        for (inode, kept) in cachedAttributes.sorted(by: { $0.key.rawValue < $1.key.rawValue })
        where reachable.contains(inode) {
            guard let now = try? fileSystem.attributes(of: inode, handle: nil).0 else { continue }
            if now.kind != kept.kind || now.size != kept.size || now.permissions != kept.permissions {
                leftovers.staleAttributes.append(
                    "\(paths[inode] ?? "\(inode)"): kept \(kept.kind) size \(kept.size), now \(now.kind) size \(now.size)"
                )
            } else if now.modificationTime != kept.modificationTime {
                leftovers.staleAttributes.append(
                    "\(paths[inode] ?? "\(inode)"): kept modification time \(kept.modificationTime), now \(now.modificationTime)"
                )
            }
        }
        return leftovers
    }

    // MARK: - Files held open

    /// A file a test holds open, as a process holds a descriptor.
    public struct OpenedFile: Sendable {
        public let inode: InodeNumber
        public let handle: FuseKit.FileHandle
    }

    /// `open(2)` of `path`, kept open until ``closeFile(_:)``: for reading and, when `writing`,
    /// writing (`O_RDWR`, or `O_WRONLY` when `reading` is false), `O_TRUNC` when `truncating`,
    /// `O_CREAT` when `creating` (a name the filesystem does not know is made with CREATE).
    public func openFile(
        _ path: String, writing: Bool = false, reading: Bool = true, truncating: Bool = false, creating: Bool = false
    ) throws(KernelError) -> OpenedFile {
        let flags = OpenFlags.make(reading: reading || !writing, writing: writing, truncating: truncating)
        if creating {
            let (directory, name) = try parent(of: path, "open")
            if (try? fileSystem.lookup(parent: directory, name: name, context: requester)).map({
                took($0, name, in: directory)
            }) == nil {
                do throws(FileSystemError) {
                    let (entry, opened) = try fileSystem.create(
                        parent: directory, name: name, permissions: 0o644, flags: flags, context: requester)
                    took(entry, name, in: directory)
                    directoryChanged(directory)
                    let file = OpenedFile(inode: entry.attributes.inode, handle: opened.handle)
                    openedFiles[opened.handle.rawValue] = file
                    return file
                } catch {
                    throw fail("open", error)
                }
            }
        }
        let inode = try walk(path, "open", followLast: true)
        do throws(FileSystemError) {
            let handle = try fileSystem.open(inode, flags: flags, context: requester).handle
            if truncating { cachedAttributes[inode] = nil }
            let file = OpenedFile(inode: inode, handle: handle)
            openedFiles[handle.rawValue] = file
            return file
        } catch {
            throw fail("open", error)
        }
    }

    /// `read(2)` at `offset` from a file held open.
    public func read(_ file: OpenedFile, at offset: UInt64, size: Int) throws(KernelError) -> Data {
        do throws(FileSystemError) {
            return try fileSystem.read(file.inode, handle: file.handle, offset: offset, size: size)
        } catch {
            throw fail("read", error)
        }
    }

    /// `write(2)` at `offset` to a file held open.
    public func write(_ file: OpenedFile, _ data: Data, at offset: UInt64) throws(KernelError) {
        do throws(FileSystemError) {
            _ = try fileSystem.write(file.inode, handle: file.handle, offset: offset, data: data)
        } catch {
            throw fail("write", error)
        }
    }

    /// `fsync(2)` of a file held open.
    public func fsync(_ file: OpenedFile) throws(KernelError) {
        do throws(FileSystemError) {
            try fileSystem.fsync(file.inode, handle: file.handle, dataOnly: false)
        } catch {
            throw fail("fsync", error)
        }
    }

    /// `close(2)` (flush, then release) of a file held open; the flush's error is close's.
    public func closeFile(_ file: OpenedFile) throws(KernelError) {
        openedFiles[file.handle.rawValue] = nil
        cachedAttributes[file.inode] = nil
        defer { try? fileSystem.release(file.inode, handle: file.handle) }
        do throws(FileSystemError) {
            try fileSystem.flush(file.inode, handle: file.handle)
        } catch {
            throw fail("close", error)
        }
    }

    // MARK: - Invalidations

    /// The invalidations recorded since the last call, taken out.
    public func takeInvalidations() -> [Invalidation] {
        recorded.withLock { list in
            defer { list = [] }
            return list
        }
    }

    private struct Invalidator: KernelCacheInvalidator {
        let kernel: EmbeddedKernel
        func record(_ invalidation: Invalidation) {
            kernel.recorded.withLock { $0.append(invalidation) }
            kernel.unapplied.withLock { $0.append(invalidation) }
        }
        func invalidateEntry(parent: InodeNumber, name: String) { record(.entry(parent: parent, name: name)) }
        func invalidateInode(_ inode: InodeNumber) { record(.inode(inode)) }
        func notifyDelete(parent: InodeNumber, child: InodeNumber, name: String) {
            record(.delete(parent: parent, child: child, name: name))
        }
        func preload(_ files: [(inode: InodeNumber, data: Data)]) {
            kernel.preloads.withLock { for file in files { $0[file.inode] = file.data } }
        }
    }

    /// The content the filesystem last preloaded for each file (the page cache it would have
    /// filled; this kernel reads nothing from it).
    public var preloadedContents: [InodeNumber: Data] { preloads.withLock { $0 } }

    // MARK: - Lookups

    /// Gives back every lookup the kernel holds (what it does on unmount or memory pressure).
    public func forgetAll() {
        for (inode, count) in lookups where count > 0 { fileSystem.forget(inode, count: count) }
        lookups = [:]
    }

    /// Counts a lookup the filesystem gave (of `name` in `parent`), and keeps what it said.
    private func took(_ entry: Entry, _ name: String, in parent: InodeNumber) {
        let inode = entry.attributes.inode
        guard inode != .root else { return }
        lookups[inode, default: 0] += 1
        names[parent, default: [:]][name] = inode
        paths[inode] = (paths[parent].map { $0.isEmpty ? "" : $0 + "/" } ?? "?/") + name
        cachedAttributes[inode] = entry.attributes
        // What the filesystem invalidated while answering reaches the kernel after its answer.
        applyInvalidations()
    }

    /// Applies the invalidations the filesystem sent since the last call to the caches.
    private func applyInvalidations() {
        for invalidation in unapplied.withLock({ list in
            defer { list = [] }; return list
        }) {
            switch invalidation {
            case .entry(let parent, let name), .delete(let parent, _, let name): names[parent]?[name] = nil
            case .inode(let inode): cachedAttributes[inode] = nil
            }
        }
    }

    /// The kernel's own change to a name: the entry goes (unlink, rmdir, the source of a rename).
    private func forgetName(_ name: String, in parent: InodeNumber) {
        applyInvalidations()
        if let inode = names[parent]?.removeValue(forKey: name) { cachedAttributes[inode] = nil }
        directoryChanged(parent)
    }

    /// What the kernel does to a folder after a change it made in it succeeded (CREATE, MKDIR,
    /// SYMLINK, UNLINK, RMDIR, RENAME: fuse_dir_changed in fs/fuse/dir.c): it forgets the
    /// folder's attributes (and its cached listing), without the filesystem asking.
    private func directoryChanged(_ directory: InodeNumber) {
        cachedAttributes[directory] = nil
    }

    private func fail(_ call: String, _ error: FileSystemError) -> KernelError {
        KernelError(call: call, errno: error.rawValue)
    }

    private func components(_ path: String) -> [String] {
        path.split(separator: "/").map(String.init).filter { $0 != "." }
    }

    /// The inode of the directory holding the last component of `path`, and that name.
    private func parent(of path: String, _ call: String) throws(KernelError) -> (InodeNumber, String) {
        let parts = components(path)
        guard let name = parts.last else { throw KernelError(call: call, errno: EEXIST) }
        let directory = try walk(parts.dropLast().joined(separator: "/"), call, followLast: true)
        return (directory, name)
    }

    // MARK: - Calls

    /// `stat(2)` (following a final symlink when `follow`).
    public func stat(_ path: String, follow: Bool = false) throws(KernelError) -> FileAttributes {
        let inode = try walk(path, "stat", followLast: follow)
        do throws(FileSystemError) {
            let attributes = try fileSystem.attributes(of: inode, handle: nil).0
            cachedAttributes[inode] = attributes
            return attributes
        } catch {
            throw fail("stat", error)
        }
    }

    /// Whether `path` exists (lstat succeeds).
    public func exists(_ path: String) -> Bool { (try? stat(path)) != nil }

    /// `readlink(2)`.
    public func readlink(_ path: String) throws(KernelError) -> String {
        let inode = try walk(path, "readlink", followLast: false)
        do throws(FileSystemError) {
            return try fileSystem.readLink(inode)
        } catch {
            throw fail("readlink", error)
        }
    }

    /// The names in a directory (without `.` and `..`), as `readdir` over READDIRPLUS returns them.
    public func list(_ path: String) throws(KernelError) -> [String] {
        let inode = try walk(path, "opendir", followLast: true)
        let handle: FuseKit.FileHandle
        do throws(FileSystemError) {
            handle = try fileSystem.openDirectory(inode, flags: .make(), context: requester).handle
        } catch {
            throw fail("opendir", error)
        }
        defer { fileSystem.releaseDirectory(inode, handle: handle) }
        var names: [String] = []
        var offset: UInt64 = 0
        while true {
            var batch: [DirectoryEntry] = []
            do throws(FileSystemError) {
                try fileSystem.readDirectory(inode, handle: handle, offset: offset, plus: true, context: requester) {
                    entry in
                    guard batch.count < 64 else { return false }
                    batch.append(entry)
                    return true
                }
            } catch {
                throw fail("getdents", error)
            }
            guard let last = batch.last else { break }
            for entry in batch where entry.name != "." && entry.name != ".." {
                took(entry.entry, entry.name, in: inode)
                names.append(entry.name)
            }
            offset = last.nextOffset
        }
        return names
    }

    /// The whole content of a file: open, read until a short read, flush, release.
    public func read(_ path: String) throws(KernelError) -> Data {
        let inode = try walk(path, "open", followLast: true)
        let opened: OpenResult
        do throws(FileSystemError) {
            opened = try fileSystem.open(inode, flags: .make(), context: requester)
        } catch {
            throw fail("open", error)
        }
        defer {
            try? fileSystem.flush(inode, handle: opened.handle)
            try? fileSystem.release(inode, handle: opened.handle)
        }
        var content = Data()
        while true {
            let piece: Data
            do throws(FileSystemError) {
                piece = try fileSystem.read(inode, handle: opened.handle, offset: UInt64(content.count), size: 65536)
            } catch {
                throw fail("read", error)
            }
            content.append(piece)
            if piece.count < 65536 { break }
        }
        return content
    }

    /// How a write ends: which calls were made after open.
    public struct WriteOptions: Sendable {
        public var truncate = true
        public var create = true
        public var exclusive = false
        public var append = false
        public var fsync = false
        /// Bytes per write(2); nil writes everything at once.
        public var pieceSize: Int?
        public init(
            truncate: Bool = true, create: Bool = true, exclusive: Bool = false, append: Bool = false,
            fsync: Bool = false,
            pieceSize: Int? = nil
        ) {
            self.truncate = truncate
            self.create = create
            self.exclusive = exclusive
            self.append = append
            self.fsync = fsync
            self.pieceSize = pieceSize
        }
    }

    /// `open(O_WRONLY|O_CREAT|O_TRUNC)` (as `options` says), `write`, optionally `fsync`, `close`
    /// (flush) and release: what `echo … > path` does. The first failing call is the error.
    public func write(_ path: String, _ data: Data, _ options: WriteOptions = WriteOptions()) throws(KernelError) {
        let (directory, name) = try parent(of: path, "open")
        let inode: InodeNumber
        let handle: FuseKit.FileHandle
        var size: UInt64 = 0
        let found: Result<Entry, FileSystemError>
        do throws(FileSystemError) {
            found = .success(try fileSystem.lookup(parent: directory, name: name, context: requester))
        } catch {
            found = .failure(error)
        }
        switch found {
        case .success(let entry):
            took(entry, name, in: directory)
            if options.exclusive && options.create { throw KernelError(call: "open", errno: EEXIST) }
            inode = entry.attributes.inode
            size = entry.attributes.size
            let flags = OpenFlags.make(
                reading: false, writing: true, truncating: options.truncate, appending: options.append)
            do throws(FileSystemError) {
                handle = try fileSystem.open(inode, flags: flags, context: requester).handle
            } catch {
                throw fail("open", error)
            }
            if options.truncate { size = 0 }
        case .failure(let error) where error == .notFound && options.create:
            do throws(FileSystemError) {
                let (entry, opened) = try fileSystem.create(
                    parent: directory, name: name, permissions: 0o644,
                    flags: .make(reading: false, writing: true, truncating: options.truncate), context: requester)
                took(entry, name, in: directory)
                directoryChanged(directory)
                inode = entry.attributes.inode
                handle = opened.handle
            } catch {
                throw fail("open", error)
            }
        case .failure(let error):
            throw fail("open", error)
        }
        var failure: KernelError?
        var offset = options.append ? size : 0
        let piece = max(1, options.pieceSize ?? max(data.count, 1))
        var start = 0
        while failure == nil && start < data.count {
            let chunk = data[data.startIndex + start..<data.startIndex + min(data.count, start + piece)]
            do throws(FileSystemError) {
                let written = try fileSystem.write(inode, handle: handle, offset: offset, data: Data(chunk))
                offset += UInt64(written)
                start += written
            } catch {
                failure = fail("write", error)
            }
        }
        if failure == nil && options.fsync {
            do throws(FileSystemError) {
                try fileSystem.fsync(inode, handle: handle, dataOnly: false)
            } catch {
                failure = fail("fsync", error)
            }
        }
        do throws(FileSystemError) {
            try fileSystem.flush(inode, handle: handle)
        } catch {
            if failure == nil { failure = fail("close", error) }
        }
        try? fileSystem.release(inode, handle: handle)
        // The kernel takes the size its writes made, and asks again after a close.
        cachedAttributes[inode] = nil
        if let failure { throw failure }
    }

    /// `truncate(2)` by path.
    /// `touch PATH` of an existing node: `utimensat(2)` setting both times to now.
    public func touch(_ path: String) throws(KernelError) {
        let inode = try walk(path, "utimensat", followLast: true)
        let now = Date()
        do throws(FileSystemError) {
            cachedAttributes[inode] = try fileSystem.setAttributes(
                of: inode, AttributeChanges(accessTime: now, modificationTime: now), handle: nil, context: requester
            ).0
        } catch {
            throw fail("utimensat", error)
        }
    }

    /// Runs `body`'s calls as one process, as one command given many paths makes them (`rm -r
    /// A/* B/*`); calls are otherwise each their own process.
    public func asOneProcess<T>(_ body: () throws -> T) rethrows -> T {
        let outermost = process == nil
        if outermost {
            lastProcess += 1
            process = lastProcess
        }
        defer { if outermost { process = nil } }
        return try body()
    }

    public func truncate(_ path: String, to size: UInt64) throws(KernelError) {
        let inode = try walk(path, "truncate", followLast: true)
        do throws(FileSystemError) {
            cachedAttributes[inode] = try fileSystem.setAttributes(
                of: inode, AttributeChanges(size: size), handle: nil, context: requester
            ).0
        } catch {
            throw fail("truncate", error)
        }
    }

    /// `fsync(2)` of a file or directory (opened read-only for it).
    public func fsync(_ path: String) throws(KernelError) {
        let inode = try walk(path, "open", followLast: true)
        let attributes: FileAttributes
        do throws(FileSystemError) {
            attributes = try fileSystem.attributes(of: inode, handle: nil).0
        } catch {
            throw fail("open", error)
        }
        if attributes.kind == .directory {
            do throws(FileSystemError) {
                let handle = try fileSystem.openDirectory(inode, flags: .make(), context: requester).handle
                defer { fileSystem.releaseDirectory(inode, handle: handle) }
                try fileSystem.fsyncDirectory(inode, handle: handle, dataOnly: false)
            } catch {
                throw fail("fsync", error)
            }
            return
        }
        let handle: FuseKit.FileHandle
        do throws(FileSystemError) {
            handle = try fileSystem.open(inode, flags: .make(), context: requester).handle
        } catch {
            throw fail("open", error)
        }
        defer {
            try? fileSystem.flush(inode, handle: handle)
            try? fileSystem.release(inode, handle: handle)
        }
        do throws(FileSystemError) {
            try fileSystem.fsync(inode, handle: handle, dataOnly: false)
        } catch {
            throw fail("fsync", error)
        }
    }

    /// `mkdir(2)`: EEXIST for a name that exists, as the kernel answers without asking.
    public func mkdir(_ path: String) throws(KernelError) {
        let (directory, name) = try parent(of: path, "mkdir")
        if (try? fileSystem.lookup(parent: directory, name: name, context: requester)).map({
            took($0, name, in: directory)
        }) != nil {
            throw KernelError(call: "mkdir", errno: EEXIST)
        }
        do throws(FileSystemError) {
            took(
                try fileSystem.makeDirectory(parent: directory, name: name, permissions: 0o755, context: requester),
                name, in: directory)
            directoryChanged(directory)
        } catch {
            throw fail("mkdir", error)
        }
    }

    /// `symlink(2)`: EEXIST for a name that exists.
    public func symlink(_ target: String, _ path: String) throws(KernelError) {
        let (directory, name) = try parent(of: path, "symlink")
        if (try? fileSystem.lookup(parent: directory, name: name, context: requester)).map({
            took($0, name, in: directory)
        }) != nil {
            throw KernelError(call: "symlink", errno: EEXIST)
        }
        do throws(FileSystemError) {
            took(
                try fileSystem.makeSymbolicLink(parent: directory, name: name, target: target, context: requester),
                name, in: directory)
            directoryChanged(directory)
        } catch {
            throw fail("symlink", error)
        }
    }

    /// `unlink(2)`: EISDIR for a directory, as the kernel answers without asking.
    public func unlink(_ path: String) throws(KernelError) {
        let (directory, name) = try parent(of: path, "unlink")
        if let entry = try? fileSystem.lookup(parent: directory, name: name, context: requester) {
            took(entry, name, in: directory)
            if entry.attributes.kind == .directory { throw KernelError(call: "unlink", errno: EISDIR) }
        }
        do throws(FileSystemError) {
            try fileSystem.unlink(parent: directory, name: name, context: requester)
        } catch {
            throw fail("unlink", error)
        }
        forgetName(name, in: directory)
    }

    /// `rmdir(2)`.
    public func rmdir(_ path: String) throws(KernelError) {
        let (directory, name) = try parent(of: path, "rmdir")
        do throws(FileSystemError) {
            try fileSystem.removeDirectory(parent: directory, name: name, context: requester)
        } catch {
            throw fail("rmdir", error)
        }
        forgetName(name, in: directory)
    }

    /// `rm -r`: lists each folder, removes files and links, descends into folders, then removes
    /// the folder (the order coreutils' rm follows). Stops at the first error.
    public func removeRecursively(_ path: String) throws(KernelError) {
        let outermost = process == nil
        if outermost {
            lastProcess += 1
            process = lastProcess
        }
        defer { if outermost { process = nil } }
        let attributes = try stat(path)
        guard attributes.kind == .directory else {
            try unlink(path)
            return
        }
        for name in try list(path) {
            let child = path + "/" + name
            let kind = try stat(child).kind
            if kind == .directory { try removeRecursively(child) } else { try unlink(child) }
        }
        try rmdir(path)
    }

    /// `renameat2(2)`.
    public func rename(_ from: String, _ to: String, flags: RenameFlags = []) throws(KernelError) {
        let (source, name) = try parent(of: from, "rename")
        let (destination, newName) = try parent(of: to, "rename")
        do throws(FileSystemError) {
            try fileSystem.rename(parent: source, name: name, newParent: destination, newName: newName, flags: flags)
        } catch {
            throw fail("rename", error)
        }
        // The kernel moves the entry to its new name (d_move): the inode it names stays cached
        // under the new name, until the invalidations the filesystem sent arrive, after.
        if let inode = names[source]?.removeValue(forKey: name) {
            names[destination, default: [:]][newName] = inode
        } else {
            names[destination]?[newName] = nil
        }
        applyInvalidations()
        directoryChanged(source)
        directoryChanged(destination)
    }

    /// `getxattr(2)`.
    /// `lgetxattr(2)`, or `getxattr(2)` (what `getfattr` calls: a final symlink followed) when
    /// `follow`.
    public func getxattr(_ path: String, _ name: String, follow: Bool = false) throws(KernelError) -> Data {
        let inode = try walk(path, "getxattr", followLast: follow)
        do throws(FileSystemError) {
            return try fileSystem.extendedAttribute(name, of: inode)
        } catch {
            throw fail("getxattr", error)
        }
    }

    /// `listxattr(2)`.
    public func listxattr(_ path: String) throws(KernelError) -> [String] {
        let inode = try walk(path, "listxattr", followLast: false)
        do throws(FileSystemError) {
            return try fileSystem.extendedAttributeNames(of: inode)
        } catch {
            throw fail("listxattr", error)
        }
    }

    /// `setxattr(2)`.
    public func setxattr(_ path: String, _ name: String, _ value: Data, flags: ExtendedAttributeFlags = [])
        throws(KernelError)
    {
        let inode = try walk(path, "setxattr", followLast: false)
        do throws(FileSystemError) {
            try fileSystem.setExtendedAttribute(name, of: inode, value: value, flags: flags)
        } catch {
            throw fail("setxattr", error)
        }
    }

    /// `removexattr(2)`.
    public func removexattr(_ path: String, _ name: String) throws(KernelError) {
        let inode = try walk(path, "removexattr", followLast: false)
        do throws(FileSystemError) {
            try fileSystem.removeExtendedAttribute(name, of: inode)
        } catch {
            throw fail("removexattr", error)
        }
    }

    /// The inode `path` names, following symlinks (relative ones resolve from the link's folder,
    /// as the kernel resolves them) in every component but, unless `followLast`, the last.
    private func walk(_ path: String, _ call: String, followLast: Bool, depth: Int = 0) throws(KernelError)
        -> InodeNumber
    {
        guard depth < 40 else { throw KernelError(call: call, errno: ELOOP) }
        let parts = components(normalized(path))
        var current = InodeNumber.root
        var walked: [String] = []
        for (index, name) in parts.enumerated() {
            let isLast = index == parts.count - 1
            let entry: Entry
            do throws(FileSystemError) {
                entry = try fileSystem.lookup(parent: current, name: name, context: requester)
            } catch {
                throw fail(call, error)
            }
            took(entry, name, in: current)
            if entry.attributes.kind == .symbolicLink && (!isLast || followLast) {
                let target: String
                do throws(FileSystemError) {
                    target = try fileSystem.readLink(entry.attributes.inode)
                } catch {
                    throw fail(call, error)
                }
                guard !target.hasPrefix("/") else { throw KernelError(call: call, errno: EXDEV) }
                let rest = parts[(index + 1)...]
                return try walk(
                    (walked + [target] + rest).joined(separator: "/"), call, followLast: followLast, depth: depth + 1)
            }
            walked.append(name)
            current = entry.attributes.inode
        }
        return current
    }

    /// `a/b/../c` as `a/c`.
    private func normalized(_ path: String) -> String {
        var parts: [String] = []
        for part in components(path) {
            if part == ".." { parts = parts.dropLast() } else { parts.append(part) }
        }
        return parts.joined(separator: "/")
    }
}
