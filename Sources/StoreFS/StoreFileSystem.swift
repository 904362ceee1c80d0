import Foundation
import FuseKit
import Logging
import ObjectGraph

/// The mapping of a store as a filesystem, as FuseKit serves it: entities as directories, objects
/// as folders, attributes as files, relationships as links and folders of links, metadata as
/// extended attributes (docs/ARCHITECTURE.md).
///
/// This type only routes: each operation finds the kind of the node it concerns (of the folder,
/// for a name in it) and asks it (``NodeType``, one type per kind in Nodes/); what the kinds share
/// is ``Mapping``. What every kind of change has in common (read-only mounts, sizes, names) is
/// checked here once.
///
/// Threading: every method may be called concurrently from FUSE worker threads and blocks on the
/// store where it must (see ``Mapping``).
public final class StoreFileSystem: SavingFileSystem {
    let mapping: Mapping
    /// flock and POSIX locks, when the store holds them for every mount (StoreFileSystem+Locks.swift).
    let fileLocks: SharedFileLocks?

    public var coordinator: PersistentStoreCoordinator { mapping.coordinator }
    public var context: ObjectContext { mapping.context }
    public var configuration: StoreFSConfiguration { mapping.configuration }
    public var model: ManagedObjectModel { mapping.model }
    /// The mount's commits, counted.
    public var commitStatistics: CommitStatistics { mapping.commitStatistics }

    /// `startsHidden`: a store made as the target of `cp -a` shows each entity's directory only
    /// once the copy makes it with mkdir. `commitStatistics`: where commits are counted (one of
    /// its own by default).
    public init(
        coordinator: PersistentStoreCoordinator, configuration: StoreFSConfiguration = StoreFSConfiguration(),
        counters: OperationCounters? = nil, commitStatistics: CommitStatistics? = nil,
        logger: Logger = Logger(label: "storefs"), startsHidden: Bool = false
    ) {
        mapping = Mapping(
            coordinator: coordinator, configuration: configuration, counters: counters,
            commitStatistics: commitStatistics, logger: logger)
        let mapping = mapping
        fileLocks = (coordinator.store as? any SharedLockingStore).map {
            SharedFileLocks(store: $0, logger: logger) { changes in
                mapping.apply(changes)
                _ = mapping.invalidator.withLock { $0 }?.waitUntilSent(timeout: 2)
            }
        }
        // Values in their own files are read from there, not into memory (ValueFiles.swift), on
        // read-only mounts too (no OPEN there: each READ is a pread of the file).
        mapping.fileBackedStore?.keepsValuesInFiles()
        if startsHidden { mapping.hiddenEntities.withLock { $0 = Set(coordinator.model.entities.map(\.name)) } }
    }

    public func didMount(invalidator: any KernelCacheInvalidator) {
        mapping.invalidator.withLock { $0 = invalidator }
        mapping.startBackgroundWork()
    }

    public func willUnmount() {
        mapping.stopBackgroundWork()
        let unsaved = mapping.saveForUnmount()
        mapping.session.unsaved.withLock { $0 = unsaved }
    }

    /// What the unmount could not save, and where it was kept; nil when everything was saved.
    public var unsavedChanges: UnsavedChanges? { mapping.session.unsaved.withLock { $0 } }

    private func node(_ inode: InodeNumber) throws(FileSystemError) -> Node { try mapping.node(inode) }

    /// Computed folders and their files (a query's, a fetched property's, a template's): their
    /// answers are predicates evaluated on request, bounded by ``StoreFSConfiguration/queryLimits``
    /// but still seconds at worst, so FuseKit serves them off the thread that receives requests.
    /// So are `.recovered`, `.wal` and `.timeline`: their first read walks every page of the
    /// store's files, and stops when its request is interrupted.
    public func mayTakeLong(_ inode: InodeNumber) -> Bool { Self.mayTakeLong(inode) }

    static func mayTakeLong(_ inode: InodeNumber) -> Bool {
        guard let node = Node(inode) else { return false }
        switch node.kind {
        case .query: return node.property == QueryFolder.queryPart
        case .queryFile, .fetched, .template: return true
        default:
            return node.kind.code == Node.Kind.recovered.rawValue || node.kind.code == Node.Kind.timeline.rawValue
        }
    }

    /// Refuses a change on a read-only mount.
    private func changing() throws(FileSystemError) {
        guard !mapping.configuration.readOnly else { throw .readOnly }
    }

    // MARK: - Names and attributes

    public func lookup(parent: InodeNumber, name: String, context request: RequestContext) throws(FileSystemError)
        -> Entry
    {
        try mapping.entry(for: try mapping.child(named: name, in: try node(parent)))
    }

    func entry(for node: Node) throws(FileSystemError) -> Entry { try mapping.entry(for: node) }

    public func attributes(of inode: InodeNumber, handle: FuseKit.FileHandle?) throws(FileSystemError)
        -> (FileAttributes, timeout: Double)
    {
        let node = try node(inode)
        // fstat by a writer shows what it wrote (also before a new file has a value); everyone
        // else sees the stored value until the writer closes.
        if let handle, let file = mapping.session.openFiles.file(handle), file.node == node, file.dirty,
            let buffer = file.buffer
        {
            return (mapping.writtenFileAttributes(node, size: buffer.count), configuration.attributeTimeout)
        }
        return (try mapping.attributes(of: node), configuration.attributeTimeout)
    }

    public func readLink(_ inode: InodeNumber) throws(FileSystemError) -> String {
        try mapping.linkTarget(of: try node(inode))
    }

    public func setAttributes(
        of inode: InodeNumber, _ changes: AttributeChanges, handle: FuseKit.FileHandle?, context request: RequestContext
    ) throws(FileSystemError) -> (FileAttributes, timeout: Double) {
        let node = try node(inode)
        if let size = changes.size {
            try changing()
            let inFile = handle.map { mapping.session.openFiles.file($0)?.valueFile?.value != nil } ?? false
            let limit = inFile ? configuration.maximumFileValueSize : configuration.maximumValueSize
            guard size <= UInt64(limit) else {
                mapping.logger.error(
                    "truncate \(mapping.describe(node)) to \(size) bytes: more than a value may hold (\(limit) bytes)"
                )
                throw .tooBig
            }
            try node.kind.type.truncate(node, to: Int(size), handle: handle, in: mapping)
        } else {
            // Permissions, owners and times have nowhere to go in a store: accepted so that tools
            // that copy them (cp -a, rsync, vim) work, and not kept.
            try node.kind.type.touch(node, in: mapping)
        }
        return try attributes(of: inode, handle: handle)
    }

    public func statistics(of inode: InodeNumber) throws(FileSystemError) -> FileSystemStatistics {
        var statistics = FileSystemStatistics()
        statistics.blocks = 1 << 20
        statistics.freeBlocks = configuration.readOnly ? 0 : 1 << 19
        statistics.files = UInt64(coordinator.rowCache.statistics.snapshots)
        statistics.freeFiles = configuration.readOnly ? 0 : 1 << 30
        return statistics
    }

    // MARK: - Folders

    public func openDirectory(_ inode: InodeNumber, flags: OpenFlags, context request: RequestContext)
        throws(FileSystemError)
        -> OpenResult
    {
        let node = try node(inode)
        let kind = node.kind.type
        guard kind.isDirectory else { throw .notDirectory }
        _ = try mapping.attributes(of: node)
        kind.opened(node, by: request, in: mapping)
        // The kernel may keep listings (cache_readdir) because storefs invalidates a directory
        // whenever its own changes touch it, and on changes it detects from other processes; not
        // a computed folder's (``NodeType/keepsListings``). (Read-only mounts open directories
        // without asking, so there the kernel keeps every listing, these too: see
        // docs/SEMANTICS.md, Known limits.)
        return OpenResult(handle: mapping.directories.open(), keepCache: true, cacheDirectory: kind.keepsListings)
    }

    public func releaseDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle) {
        mapping.directories.close(handle)
    }

    /// Lists a directory: `.` and `..`, then its entries. Entity directories resume by primary key
    /// (the cookie after the object with key k is k + 3), others by position in the listing kept
    /// for the reader (per open, or per directory on read-only mounts until the store changes), so
    /// a listing that changes between calls neither repeats nor skips what stayed.
    public func readDirectory(
        _ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, plus: Bool, context request: RequestContext,
        add: (DirectoryEntry) -> Bool
    ) throws(FileSystemError) {
        let directory = try node(inode)
        let kind = directory.kind.type
        guard kind.isDirectory else { throw .notDirectory }
        let directories = mapping.directories
        // An opened directory is listed afresh at offset 0 (rewinddir); one read without opendir
        // shares its listing with every reader until the store changes.
        var kept = directories.kept(handle, of: inode)
        let listsAfresh = kept == nil || (offset == 0 && handle != DirectoryHandles.unopened)
        // Read before anything a new listing is made of: a change after it keeps that listing from
        // staying. (Most calls continue a kept listing and need none.)
        let generation = listsAfresh ? directories.generation : 0
        // An object folder's entries all come from its one snapshot: read it once per call, not
        // once per entry.
        let known = try kind.sharedSnapshot(of: directory, in: mapping)
        if offset == 0 {
            guard add(DirectoryEntry(name: ".", entry: try mapping.entry(for: directory, known: known), nextOffset: 1))
            else {
                return
            }
        }
        if offset <= 1 {
            let parent = kind.parent(of: directory, in: mapping)
            guard add(DirectoryEntry(name: "..", entry: try mapping.entry(for: parent), nextOffset: 2)) else { return }
        }
        if listsAfresh {
            kept = directories.keep(
                try kind.listing(of: directory, in: mapping, known: known), for: handle, of: inode, takenIn: generation)
        }
        guard let kept else { return }
        switch kept {
        case .objects(let ids):
            // An entity folder lists its objects from the store's list of keys alone: a folder's
            // attributes need no row, so `ls -l` reads none. What is opened next (a folder, a
            // value) fires its fault then, in a batch read ahead in key order.
            // An offset is one this listing gave (a key + 3) or one lseek set: beyond every key, the
            // listing is at its end.
            guard let resume = Int64(exactly: offset) else { return }
            var index = resume <= 2 ? 0 : ids.firstIndex(afterKey: resume - 3)
            while index < ids.count {
                let id = ids[index]
                let node: Node = id.entity == directory.entity ? .object(id) : .subentityLink(id)
                guard let e = try? mapping.entry(for: node, listed: true) else {
                    index += 1
                    continue
                }
                guard add(DirectoryEntry(name: id.key.description, entry: e, nextOffset: UInt64(id.key.rawValue) + 3))
                else { return }
                index += 1
            }
        case .names(let names):
            guard let resume = Int(exactly: offset) else { return }
            var index = resume <= 2 ? 0 : resume - 2
            while index < names.count {
                let (name, node) = names[index]
                if let e = try? mapping.entry(for: node, known: known) {
                    guard add(DirectoryEntry(name: name, entry: e, nextOffset: UInt64(index) + 3)) else { return }
                }
                index += 1
            }
        }
    }

    // MARK: - Files

    public func open(_ inode: InodeNumber, flags: OpenFlags, context request: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        let node = try node(inode)
        return try node.kind.type.open(node, flags: flags, in: mapping)
    }

    public func read(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, size: Int)
        throws(FileSystemError)
        -> Data
    {
        let node = try node(inode)
        return try node.kind.type.read(node, handle: handle, offset: offset, size: size, in: mapping)
    }

    public func write(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, data: Data)
        throws(FileSystemError)
        -> Int
    {
        try changing()
        let node = try node(inode)
        let (end, overflow) = offset.addingReportingOverflow(UInt64(data.count))
        // A value written into its own file (ValueFiles.swift) is not held in memory: its limit is
        // the filesystem's and ``StoreFSConfiguration/maximumFileValueSize``.
        let inFile =
            end > UInt64(configuration.maximumValueSize)
            && mapping.session.openFiles.file(handle)?.valueFile?.value != nil
        let limit = inFile ? configuration.maximumFileValueSize : configuration.maximumValueSize
        guard !overflow, end <= UInt64(limit) else {
            mapping.logger.error(
                "write \(mapping.describe(node)): \(end) bytes is more than a value may hold (\(limit) bytes)"
            )
            // The value this write belongs to cannot be held whole: none of it is set.
            mapping.session.openFiles.reject(handle, because: .tooBig)
            throw .tooBig
        }
        return try node.kind.type.write(data, at: offset, to: node, handle: handle, in: mapping)
    }

    public func flush(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        try mapping.flush(handle)
    }

    public func release(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        // Errors of a release reach nobody (close(2) returned at flush): they are logged.
        try? mapping.commitBuffer(handle)
        guard let file = mapping.session.openFiles.close(handle) else { return }
        mapping.releaseValueFile(file)
        // A file create made whose value was never set does not exist: the kernel made its name
        // at the create and must forget it.
        if file.node.kind == .attribute, (try? mapping.attributeValue(file.node.object, file.node.property)) == nil {
            mapping.invalidateEntry(
                parent: .object(file.node.object),
                name: mapping.model[file.node.entity].allAttributes[file.node.property].name)
        }
    }

    /// fsync and fsyncdir commit: they may wait as long as the store does. So does a close of a
    /// file written on a store that commits at close (``StoreFSConfiguration/commitsOnClose``),
    /// and a close or release of a value written into its own file (its bytes are read or synced).
    /// A buffered value's close and release on other stores only set the value in the context,
    /// which waits for no save ("Changes go on during a save", docs/ARCHITECTURE.md), as a mkdir
    /// or a write does: they are answered inline, which saves two thread hand-offs per edit
    /// (issue 40: echo's and cp -a's closes). A file only read is let go in memory.
    public func mayWait(_ operation: OperationCounters.Operation, inode: InodeNumber, handle: FuseKit.FileHandle)
        -> Bool
    {
        switch operation {
        case .fsync, .fsyncdir: return true
        case .flush, .release:
            guard let file = mapping.session.openFiles.file(handle) else { return false }
            if file.valueFile?.value != nil { return true }
            return operation == .flush && file.buffer != nil && configuration.commitsOnClose
        default: return false
        }
    }

    /// fsync: the writer asks whether what it wrote is saved. Everything pending is committed and
    /// the kind answers for the file.
    public func fsync(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError) {
        let node = try node(inode)
        // A value refused at write(2) was not set, and fsync must not say it is saved.
        if let rejection = mapping.session.openFiles.file(handle)?.rejection { throw rejection }
        try mapping.commitBuffer(handle)
        try node.kind.type.fsync(node, handle: handle, in: mapping)
    }

    public func fsyncDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError)
    {
        try mapping.fsyncFolder(try node(inode))
    }

    // MARK: - Changes in folders

    public func create(
        parent: InodeNumber, name: String, permissions: UInt32, flags: OpenFlags, context request: RequestContext
    )
        throws(FileSystemError) -> (Entry, OpenResult)
    {
        try changing()
        let folder = try node(parent)
        let node = try folder.kind.type.createFile(named: name, in: folder, in: mapping)
        let isAttribute = node.kind == .attribute
        if isAttribute { mapping.noteCreated(node) }
        let handle = mapping.session.openFiles.open(node, buffer: isAttribute ? Data() : nil)
        do throws(FileSystemError) {
            try mapping.startValueFile(handle, node, truncating: true)
        } catch {
            mapping.session.openFiles.close(handle)
            throw error
        }
        // The kernel renews the folder it made the file in when this answer comes.
        mapping.changed(node.owner, kernelUpdates: folder)
        // A new attribute file has no value until its writer closes it: its entry is the empty
        // file being written.
        let attributes = isAttribute ? mapping.writtenFileAttributes(node, size: 0) : try mapping.attributes(of: node)
        let entry = Entry(
            attributes: attributes, entryTimeout: configuration.entryTimeout,
            attributeTimeout: configuration.attributeTimeout)
        return (entry, OpenResult(handle: handle, keepCache: false, directIO: isAttribute))
    }

    public func makeNode(parent: InodeNumber, name: String, permissions: UInt32, context request: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try changing()
        let folder = try node(parent)
        let node = try folder.kind.type.createFile(named: name, in: folder, in: mapping)
        if node.kind == .attribute { try mapping.setContent(Data(), of: node) }
        return try mapping.entry(for: node)
    }

    public func makeDirectory(parent: InodeNumber, name: String, permissions: UInt32, context request: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try changing()
        let folder = try node(parent)
        return try mapping.entry(for: try folder.kind.type.makeDirectory(named: name, in: folder, in: mapping))
    }

    public func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context request: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try changing()
        let folder = try node(parent)
        let kind = folder.kind.type
        guard kind.isDirectory else { throw .notDirectory }
        return try mapping.entry(for: try kind.makeLink(named: name, to: target, in: folder, in: mapping))
    }

    public func unlink(parent: InodeNumber, name: String, context request: RequestContext) throws(FileSystemError) {
        try changing()
        let folder = try node(parent)
        let target = try mapping.child(named: name, in: folder)
        try target.kind.type.remove(target, named: name, from: folder, by: request, in: mapping)
    }

    public func removeDirectory(parent: InodeNumber, name: String, context request: RequestContext)
        throws(FileSystemError)
    {
        try changing()
        let folder = try node(parent)
        let target = try mapping.child(named: name, in: folder)
        try target.kind.type.removeFolder(target, named: name, from: folder, in: mapping)
    }

    /// Renames happen inside one object folder or one of its to-many folders (how editors save,
    /// `ln -sfn`, an editor's backup), and never onto or from a value's rendering.
    public func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: RenameFlags)
        throws(FileSystemError)
    {
        try changing()
        guard !flags.contains(.exchange), !flags.contains(.whiteout) else { throw .invalid }
        let from = try node(parent)
        let to = try node(newParent)
        guard from.isFolderOfObject, to.isFolderOfObject else {
            mapping.logger.error("mv \(name) \(newName): only files inside object folders can be renamed")
            throw .notPermitted
        }
        guard from == to else { throw .crossDevice }
        let object = from.object
        if RenderingFile.isRenderingName(newName, of: object, mapping)
            || RenderingFile.isRenderingName(name, of: object, mapping)
        {
            mapping.logger.error(
                "mv \(name) \(newName) in \(mapping.describe(object)): a value's rendering is computed and read-only")
            throw .notPermitted
        }
        let source = try mapping.child(named: name, in: from)
        if flags.contains(.noReplace), (try? mapping.child(named: newName, in: to)) != nil { throw .exists }
        try source.kind.type.rename(source, named: name, to: newName, in: from, in: mapping)
    }

    // MARK: - Extended attributes

    // `ls -l` asks for security.selinux and system.posix_acl_* on every entry, and the kernel does
    // not cache the answer. storefs has no security labels and no ACLs: EOPNOTSUPP says so, and ls
    // (gnulib's file_has_acl, getfilecon) then stops asking for the rest of its run. ENODATA would
    // be asked again for every entry.

    public func extendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) -> Data {
        guard name.hasPrefix("user.") else { throw .notSupported }
        let node = try node(inode)
        return try node.kind.type.extendedAttribute(name, of: node, in: mapping)
    }

    public func extendedAttributeNames(of inode: InodeNumber) throws(FileSystemError) -> [String] {
        let node = try node(inode)
        return try node.kind.type.extendedAttributeNames(of: node, in: mapping)
    }

    public func setExtendedAttribute(_ name: String, of inode: InodeNumber, value: Data, flags: ExtendedAttributeFlags)
        throws(FileSystemError)
    {
        guard name.hasPrefix("user.") else { throw .notSupported }
        try changing()
        let node = try node(inode)
        try node.kind.type.setExtendedAttribute(name, to: value, flags: flags, of: node, in: mapping)
    }

    public func removeExtendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) {
        guard name.hasPrefix("user.") else { throw .notSupported }
        try changing()
        let node = try node(inode)
        try node.kind.type.removeExtendedAttribute(name, of: node, in: mapping)
    }
}
