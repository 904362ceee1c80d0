import Devices
import Foundation
import FuseKit
import Logging
import ObjectGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A device tree mounted at once (a folder of any depth, an app container, an iOS backup): every
/// Core Data store in it, found by content whatever its name or depth (``DeviceView``), is a
/// folder named after its file (`Library/Notes.sqlite/`) holding that store's mapping; every other
/// folder, file and link is shown as it is, read-only. `cp -a MNT/Library.sqlite MNT/Library.xml`
/// makes `Library.xml` in the folder: a new store of the copy's model, filled by the copy as a
/// migration.
///
/// The tree's own nodes are numbered by ``TreeNodes`` (no slot); a store is opened on the first
/// lookup inside its folder, in a slot of ``StoreSlots`` whose number its inodes carry in bits
/// 54–59, and closed again when the kernel holds none of its inodes and the slot is needed.
///
/// Threading: as ``StoreFileSystem``; the tables have their own locks.
public final class StoreFolderFileSystem: SavingFileSystem {
    public let tree: any DeviceTree
    let view: DeviceView
    let types: [any PersistentStoreType]
    let configuration: StoreFSConfiguration
    let engineConfiguration: EngineConfiguration
    let counters: OperationCounters?
    /// The commits of every store of the folder, counted together.
    public let commitStatistics: CommitStatistics
    let logger: Logger
    let nodes = TreeNodes()
    let slots: StoreSlots
    let mountTime = Date()

    private struct State {
        /// The store each process looked up last: the source of its next `cp -a` into a new name.
        var lastLookup: [Int32: String] = [:]
        /// The store whose folder was looked up or listed last, by anyone.
        var lastTouched: String?
        /// Models of stores made by `mkdir` whose file does not exist yet, by path.
        var made: [String: ManagedObjectModel] = [:]
    }

    private let state = Mutex(State())

    /// Mounts `tree`; a tree that is read-only (a backup) makes the whole mount read-only.
    public init(
        tree: any DeviceTree, types: [any PersistentStoreType],
        configuration: StoreFSConfiguration = StoreFSConfiguration(),
        engineConfiguration: EngineConfiguration = EngineConfiguration(), counters: OperationCounters? = nil,
        commitStatistics: CommitStatistics? = nil, logger: Logger = Logger(label: "storefs")
    ) {
        self.tree = tree
        view = DeviceView(tree: tree, types: types)
        self.types = types
        var configuration = configuration
        if tree.isReadOnly { configuration.readOnly = true }
        self.configuration = configuration
        self.engineConfiguration = engineConfiguration
        self.counters = counters
        self.commitStatistics = commitStatistics ?? CommitStatistics()
        self.logger = logger
        slots = StoreSlots(logger: logger)
    }

    /// Mounts the folder at `directory`.
    public convenience init(
        directory: URL, types: [any PersistentStoreType], configuration: StoreFSConfiguration = StoreFSConfiguration(),
        engineConfiguration: EngineConfiguration = EngineConfiguration(), counters: OperationCounters? = nil,
        commitStatistics: CommitStatistics? = nil, logger: Logger = Logger(label: "storefs")
    ) throws(DeviceError) {
        self.init(
            tree: try DirectoryTree(folder: directory), types: types, configuration: configuration,
            engineConfiguration: engineConfiguration, counters: counters, commitStatistics: commitStatistics,
            logger: logger)
    }

    public var directory: URL { tree.origin }

    public func didMount(invalidator: any KernelCacheInvalidator) { slots.didMount(invalidator: invalidator) }

    public func willUnmount() { slots.closeAll() }

    public var unsavedChanges: UnsavedChanges? { slots.unsavedChanges }

    /// The coordinators of the stores open now (for their caches' statistics).
    public var openCoordinators: [PersistentStoreCoordinator] { slots.openStores.map(\.fileSystem.coordinator) }

    /// Seconds the kernel keeps a tree node's name and attributes: a folder on disk changes under
    /// the mount (files come and go), a backup does not.
    var treeTimeout: Double { tree.isReadOnly ? configuration.attributeTimeout : 1.0 }

    // MARK: - Numbers

    static func outer(_ inode: InodeNumber, slot: Int, folder: InodeNumber) -> InodeNumber {
        inode == .root ? folder : InodeNumber(inode.rawValue | (UInt64(slot) << Node.slotShift))
    }

    private func outer(_ entry: Entry, slot: Int, folder: InodeNumber, generation: UInt64) -> Entry {
        var entry = entry
        entry.attributes.inode = Self.outer(entry.attributes.inode, slot: slot, folder: folder)
        if entry.attributes.inode != folder { entry.generation = generation }
        return entry
    }

    /// Where a request for `inode` goes.
    private enum Target {
        /// A node inside an open store: its slot, and its number there.
        case store(slot: Int, inner: InodeNumber)
        /// A store's folder (its store's root).
        case storeFolder(path: String, type: String)
        case tree(path: String, kind: TreeNodes.Kind)
    }

    private func target(_ inode: InodeNumber) throws(FileSystemError) -> Target {
        let slot = Int((inode.rawValue & Node.slotMask) >> Node.slotShift)
        if slot != 0 { return .store(slot: slot, inner: InodeNumber(inode.rawValue & ~Node.slotMask)) }
        guard let record = nodes.record(inode) else { throw .notFound }
        if case .store(let type) = record.kind { return .storeFolder(path: record.path, type: type) }
        return .tree(path: record.path, kind: record.kind)
    }

    /// Runs `body` with the store whose folder is at `path` (`inode`), opening it first.
    private func withStore<T>(
        at path: String, folder: InodeNumber, type: String,
        _ body: (StoreFileSystem, Int, UInt64) throws(FileSystemError) -> T
    ) throws(FileSystemError) -> T {
        try slots.using(
            path: path, folder: folder,
            open: { () throws(FileSystemError) -> (StoreFileSystem, @Sendable () -> Void) in
                try openStore(at: path, folder: folder, type: type)
            }, body)
    }

    private func openStore(at path: String, folder: InodeNumber, type typeName: String)
        throws(FileSystemError) -> (StoreFileSystem, @Sendable () -> Void)
    {
        let made = state.withLock { $0.made[path] }
        let location: StoreLocation
        if made != nil {
            location = StoreLocation(url: tree.origin.appendingPathComponent(path), path: path)
        } else {
            do {
                location = try tree.storeLocation(at: path)
            } catch {
                throw deviceError(error, "open \(path)")
            }
        }
        let coordinator: PersistentStoreCoordinator
        do {
            var metadata = StoreMetadata()
            if made != nil { metadata.storeUUID = StoreMetadata.newStoreUUID() }
            coordinator = try PersistentStoreCoordinator.open(
                at: location.url, types: types, model: made,
                options: StoreOptions(readOnly: configuration.readOnly, createIfMissing: made != nil),
                configuration: engineConfiguration, metadata: metadata,
                forcedType: made == nil ? types.first { $0.name == typeName } : nil)
        } catch {
            location.remove()
            throw fileSystemError(error, "open \(path)", logger: logger)
        }
        state.withLock { _ = $0.made.removeValue(forKey: path) }
        var fsConfiguration = configuration
        fsConfiguration.mountPoint = configuration.mountPoint.map { $0 + "/" + path }
        let fileSystem = StoreFileSystem(
            coordinator: coordinator, configuration: fsConfiguration, counters: counters,
            commitStatistics: commitStatistics, logger: logger, startsHidden: made != nil)
        nodes.pin(folder, 1)
        logger.debug("opened \(path) (\(coordinator.store.storeType)) in \(tree.summary)")
        let nodes = nodes
        return (
            fileSystem,
            {
                location.remove()
                nodes.pin(folder, -1)
            }
        )
    }

    private func deviceError(_ error: DeviceError, _ operation: String) -> FileSystemError {
        switch error.code {
        case .notFound:
            logger.trace("\(operation): \(error.message)")
            return .notFound
        case .notFolder: return .notDirectory
        case .notFile: return .isDirectory
        case .notLink: return .invalid
        case .refused:
            logger.error("\(operation): \(error.message)")
            return .accessDenied
        case .unsupported, .tooLarge, .io:
            logger.error("\(operation): \(error.message)")
            return .io
        }
    }

    // MARK: - Tree nodes

    /// What the tree holds at `path`, as shown, with its attributes (a store's folder without
    /// opening the store, unless it is open).
    private func treeEntry(at path: String, counted: Bool) throws(FileSystemError) -> (Entry, TreeNodes.Kind) {
        let item: DeviceItem
        do {
            item = try tree.item(at: path)
        } catch {
            if let slot = slots.slot(at: path) {
                return try openStoreEntry(path: path, slot: slot, counted: counted)
            }
            throw deviceError(error, "lookup \(path)")
        }
        let kind: TreeNodes.Kind
        switch view.shown(item) {
        case .folder: kind = .folder
        case .file: kind = .file
        case .link: kind = .link
        case .store(let type): kind = .store(type.name)
        }
        let inode = nodes.number(for: path, kind: kind, counted: counted)
        var attributes = attributes(of: item, kind: kind, inode: inode)
        if case .store = kind, let slot = slots.slot(at: path),
            let inner = try? slots.using(
                slot,
                { (fileSystem, _) throws(FileSystemError) in
                    try fileSystem.attributes(of: .root, handle: nil).0
                })
        {
            attributes = inner
            attributes.inode = inode
        }
        return (Entry(attributes: attributes, entryTimeout: treeTimeout, attributeTimeout: treeTimeout), kind)
    }

    /// A store made by `mkdir` that has no file yet.
    private func openStoreEntry(path: String, slot: Int, counted: Bool) throws(FileSystemError) -> (
        Entry, TreeNodes.Kind
    ) {
        let (type, attributes) = try slots.using(slot) {
            (fileSystem, _) throws(FileSystemError) -> (String, FileAttributes) in
            (fileSystem.coordinator.store.storeType, try fileSystem.attributes(of: .root, handle: nil).0)
        }
        let kind = TreeNodes.Kind.store(type)
        var shown = attributes
        shown.inode = nodes.number(for: path, kind: kind, counted: counted)
        return (Entry(attributes: shown, entryTimeout: treeTimeout, attributeTimeout: treeTimeout), kind)
    }

    private func attributes(of item: DeviceItem, kind: TreeNodes.Kind, inode: InodeNumber) -> FileAttributes {
        let nodeKind: NodeKind
        var permissions = item.permissions & 0o7555
        var size = item.size
        switch kind {
        case .folder:
            nodeKind = .directory
        case .file:
            nodeKind = .regularFile
        case .link:
            nodeKind = .symbolicLink
            permissions = 0o777
        case .store:
            nodeKind = .directory
            permissions = configuration.readOnly ? 0o555 : 0o755
            size = 0
        }
        if nodeKind == .directory { permissions |= 0o500 }
        return FileAttributes(
            inode: inode, kind: nodeKind, permissions: permissions, size: size,
            linkCount: nodeKind == .directory ? 2 : 1, uid: configuration.uid, gid: configuration.gid,
            modificationTime: item.modified, changeTime: item.changed, accessTime: item.modified)
    }

    /// The names folder `path` shows, with their kinds when the listing says them.
    private func treeListing(of path: String) throws(FileSystemError) -> [String] {
        let names: [DeviceName]
        do {
            names = try tree.listing(of: path)
        } catch {
            throw deviceError(error, "list \(path)")
        }
        var shown = names.filter { !view.isHidden($0.name, in: path) }.map(\.name)
        let made = slots.openNames(in: path).filter { !shown.contains($0) }
        if !made.isEmpty {
            shown = (shown + made).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
        return shown
    }

    // MARK: - The folder

    /// As the store's own mapping says (``StoreFileSystem/mayTakeLong(_:)``).
    public func mayTakeLong(_ inode: InodeNumber) -> Bool {
        StoreFileSystem.mayTakeLong(InodeNumber(inode.rawValue & ~Node.slotMask))
    }

    public func lookup(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) -> Entry {
        switch try target(parent) {
        case .store(let slot, let inner):
            return try slots.using(slot) { (fileSystem, generation) throws(FileSystemError) -> Entry in
                let folder = slots.folder(slot) ?? .root
                let entry = outer(
                    try fileSystem.lookup(parent: inner, name: name, context: context), slot: slot, folder: folder,
                    generation: generation)
                slots.took(slot)
                return entry
            }
        case .storeFolder(let path, let type):
            let folder = parent
            state.withLock { state in
                state.lastLookup[context.pid] = path
                state.lastTouched = path
            }
            return try withStore(at: path, folder: folder, type: type) {
                (fileSystem, slot, generation) throws(FileSystemError) -> Entry in
                let entry = outer(
                    try fileSystem.lookup(parent: .root, name: name, context: context), slot: slot, folder: folder,
                    generation: generation)
                slots.took(slot, topName: name)
                return entry
            }
        case .tree(let path, let kind):
            guard kind == .folder else { throw .notDirectory }
            guard DevicePath.isValidName(name) else {
                throw name.utf8.count > DevicePath.maximumNameBytes ? .nameTooLong : .notFound
            }
            guard !view.isHidden(name, in: path) else { throw .notFound }
            let child = DevicePath.join(path, name)
            let (entry, kind) = try treeEntry(at: child, counted: true)
            if case .store = kind {
                state.withLock { state in
                    state.lastLookup[context.pid] = child
                    state.lastTouched = child
                }
            }
            return entry
        }
    }

    public func forget(_ inode: InodeNumber, count: UInt64) {
        guard let found = try? target(inode) else { return }
        switch found {
        case .store(let slot, _): slots.forgot(slot, count: count)
        case .storeFolder, .tree: nodes.forget(inode, count: count)
        }
    }

    public func attributes(of inode: InodeNumber, handle: FuseKit.FileHandle?) throws(FileSystemError) -> (
        FileAttributes, timeout: Double
    ) {
        switch try target(inode) {
        case .store(let slot, let inner):
            return try slots.using(slot) { (fileSystem, _) throws(FileSystemError) -> (FileAttributes, Double) in
                var (attributes, timeout) = try fileSystem.attributes(of: inner, handle: handle)
                attributes.inode = Self.outer(attributes.inode, slot: slot, folder: slots.folder(slot) ?? .root)
                return (attributes, timeout)
            }
        case .storeFolder(let path, _), .tree(let path, _):
            var (entry, _) = try treeEntry(at: path, counted: false)
            entry.attributes.inode = inode
            if inode == .root { entry.attributes.permissions = configuration.readOnly ? 0o555 : 0o755 }
            return (entry.attributes, entry.attributeTimeout)
        }
    }

    public func openDirectory(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        switch try target(inode) {
        case .store(let slot, let inner):
            return try slots.using(slot) { (fileSystem, _) throws(FileSystemError) -> OpenResult in
                let result = try fileSystem.openDirectory(inner, flags: flags, context: context)
                slots.folderOpened(slot, 1)
                return result
            }
        case .storeFolder(let path, let type):
            state.withLock { $0.lastTouched = path }
            return try withStore(at: path, folder: inode, type: type) {
                (fileSystem, slot, _) throws(FileSystemError) -> OpenResult in
                let result = try fileSystem.openDirectory(.root, flags: flags, context: context)
                slots.folderOpened(slot, 1)
                return result
            }
        case .tree(_, let kind):
            guard kind == .folder else { throw .notDirectory }
            return OpenResult()
        }
    }

    public func releaseDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle) {
        guard let found = try? target(inode) else { return }
        switch found {
        case .store(let slot, let inner):
            try? slots.using(slot) { (fileSystem, _) throws(FileSystemError) in
                fileSystem.releaseDirectory(inner, handle: handle)
            }
            slots.folderOpened(slot, -1)
        case .storeFolder(let path, _):
            guard let slot = slots.slot(at: path) else { return }
            try? slots.using(slot) { (fileSystem, _) throws(FileSystemError) in
                fileSystem.releaseDirectory(.root, handle: handle)
            }
            slots.folderOpened(slot, -1)
        case .tree: return
        }
    }

    public func readDirectory(
        _ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, plus: Bool, context: RequestContext,
        add: (DirectoryEntry) -> Bool
    ) throws(FileSystemError) {
        let found = try target(inode)
        switch found {
        case .store(let slot, let inner):
            try readStoreDirectory(
                slot: slot, inner: inner, handle: handle, offset: offset, plus: plus, context: context, add: add)
        case .storeFolder(let path, let type):
            state.withLock { $0.lastTouched = path }
            let slot = try withStore(at: path, folder: inode, type: type) {
                (_, slot, _) throws(FileSystemError) -> Int in slot
            }
            try readStoreDirectory(
                slot: slot, inner: .root, handle: handle, offset: offset, plus: plus, context: context, add: add)
        case .tree(let path, let kind):
            guard kind == .folder else { throw .notDirectory }
            var (this, _) = try treeEntry(at: path, counted: false)
            this.attributes.inode = inode
            let names = try treeListing(of: path)
            let total = UInt64(names.count) + 2
            var position = offset
            while position < total {
                if position < 2 {
                    guard add(DirectoryEntry(name: position == 0 ? "." : "..", entry: this, nextOffset: position + 1))
                    else { return }
                } else {
                    let name = names[Int(position - 2)]
                    let child = DevicePath.join(path, name)
                    // A name that went away since the listing was read is left out.
                    guard let (entry, _) = try? treeEntry(at: child, counted: false) else {
                        position += 1
                        continue
                    }
                    guard add(DirectoryEntry(name: name, entry: entry, nextOffset: position + 1)) else { return }
                    if plus { nodes.took(entry.attributes.inode) }
                }
                position += 1
            }
        }
    }

    private func readStoreDirectory(
        slot: Int, inner: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, plus: Bool, context: RequestContext,
        add: (DirectoryEntry) -> Bool
    ) throws(FileSystemError) {
        try slots.using(slot) { (fileSystem, generation) throws(FileSystemError) in
            let folder = slots.folder(slot) ?? .root
            try fileSystem.readDirectory(inner, handle: handle, offset: offset, plus: plus, context: context) {
                entry in
                var entry = entry
                entry.entry = outer(entry.entry, slot: slot, folder: folder, generation: generation)
                guard add(entry) else { return false }
                if plus && entry.name != "." && entry.name != ".." {
                    slots.took(slot, topName: inner == .root ? entry.name : nil)
                }
                return true
            }
        }
    }

    /// `mkdir NAME.ext` in a folder: a new, empty store of that type, with the model of the store
    /// the same process looked up last (the source of its `cp -a`).
    public func makeDirectory(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        let path: String
        switch try target(parent) {
        case .store(let slot, let inner):
            return try slots.using(slot) { (fileSystem, generation) throws(FileSystemError) -> Entry in
                let entry = outer(
                    try fileSystem.makeDirectory(parent: inner, name: name, permissions: permissions, context: context),
                    slot: slot, folder: slots.folder(slot) ?? .root, generation: generation)
                slots.took(slot)
                return entry
            }
        case .storeFolder(let folderPath, let type):
            return try withStore(at: folderPath, folder: parent, type: type) {
                (fileSystem, slot, generation) throws(FileSystemError) -> Entry in
                let entry = outer(
                    try fileSystem.makeDirectory(parent: .root, name: name, permissions: permissions, context: context),
                    slot: slot, folder: parent, generation: generation)
                slots.took(slot, topName: name)
                return entry
            }
        case .tree(let folderPath, let kind):
            guard kind == .folder else { throw .notDirectory }
            path = DevicePath.join(folderPath, name)
        }
        guard !configuration.readOnly else { throw .readOnly }
        guard DevicePath.isValidName(name) else { throw .nameTooLong }
        let url = tree.origin.appendingPathComponent(path)
        guard (try? PersistentStoreCoordinator.storeType(for: url, among: types)) != nil else {
            logger.error(
                "mkdir \(path): only store folders are made here, named after their file with a store suffix (.sqlite, .xml, .binary); the rest of the tree is read-only"
            )
            throw .readOnly
        }
        guard (try? tree.item(at: path)) == nil, slots.slot(at: path) == nil else { throw .exists }
        // The source of the copy: the store this process looked up last, or the store touched
        // last; when the kernel answered those lookups from a listing it cached, the only store
        // in the folder.
        let source =
            state.withLock { state in state.lastLookup[context.pid] ?? state.lastTouched }
            ?? onlyStore(in: DevicePath.parent(of: path))
        guard let source, let model = self.model(ofStoreAt: source) else {
            logger.error(
                "mkdir \(path): a new store here is made by copying a store folder into it (cp -a A.sqlite \(name)); or use storefs migrate"
            )
            throw .notPermitted
        }
        state.withLock { $0.made[path] = model }
        let type = (try? PersistentStoreCoordinator.storeType(for: url, among: types))?.name ?? ""
        let inode = nodes.number(for: path, kind: .store(type), counted: false)
        do {
            try withStore(at: path, folder: inode, type: type) { (_, _, _) throws(FileSystemError) in }
        } catch {
            state.withLock { _ = $0.made.removeValue(forKey: path) }
            nodes.forget(inode, count: 0)
            throw error
        }
        logger.info("mkdir \(path): a new store with the model of \(source), filled by the copy")
        let (entry, _) = try treeEntry(at: path, counted: true)
        return entry
    }

    /// The path of the one store folder `folder` shows; nil when it shows none or several.
    private func onlyStore(in folder: String) -> String? {
        guard let names = try? treeListing(of: folder) else { return nil }
        var found: String?
        for name in names {
            let path = DevicePath.join(folder, name)
            guard let (_, kind) = try? treeEntry(at: path, counted: false), case .store = kind else { continue }
            guard found == nil else { return nil }
            found = path
        }
        return found
    }

    /// The model of the store whose folder is at `path`, opening the store (a `cp -a` stats its
    /// source and makes the copy's folder before it looks inside the source).
    private func model(ofStoreAt path: String) -> ManagedObjectModel? {
        guard let (entry, kind) = try? treeEntry(at: path, counted: false), case .store(let type) = kind else {
            return nil
        }
        return try? withStore(at: path, folder: entry.attributes.inode, type: type) {
            (fileSystem, _, _) throws(FileSystemError) in fileSystem.model
        }
    }

    public func statistics(of inode: InodeNumber) throws(FileSystemError) -> FileSystemStatistics {
        var statistics = FileSystemStatistics()
        statistics.blocks = 1 << 20
        statistics.freeBlocks = configuration.readOnly ? 0 : 1 << 19
        statistics.freeFiles = configuration.readOnly ? 0 : 1 << 30
        return statistics
    }

    // MARK: - Files and links of the tree, and everything else goes to the store

    /// Runs `body` with the store `inode` is in (its folder opens it); nil for a tree node.
    private func inStore<T>(
        _ inode: InodeNumber, _ body: (StoreFileSystem, InodeNumber, Int, UInt64) throws(FileSystemError) -> T
    ) throws(FileSystemError) -> T? {
        switch try target(inode) {
        case .store(let slot, let inner):
            return try slots.using(slot) { (fileSystem, generation) throws(FileSystemError) -> T in
                try body(fileSystem, inner, slot, generation)
            }
        case .storeFolder(let path, let type):
            return try withStore(at: path, folder: inode, type: type) {
                (fileSystem, slot, generation) throws(FileSystemError) -> T in
                try body(fileSystem, .root, slot, generation)
            }
        case .tree:
            return nil
        }
    }

    private func treePath(_ inode: InodeNumber) throws(FileSystemError) -> (String, TreeNodes.Kind) {
        guard case .tree(let path, let kind) = try target(inode) else { throw .invalid }
        return (path, kind)
    }

    public func setAttributes(
        of inode: InodeNumber, _ changes: AttributeChanges, handle: FuseKit.FileHandle?, context: RequestContext
    )
        throws(FileSystemError) -> (FileAttributes, timeout: Double)
    {
        let result = try inStore(inode) {
            (fileSystem, inner, slot, _) throws(FileSystemError) -> (FileAttributes, Double) in
            var (attributes, timeout) = try fileSystem.setAttributes(
                of: inner, changes, handle: handle, context: context)
            attributes.inode = Self.outer(attributes.inode, slot: slot, folder: slots.folder(slot) ?? .root)
            return (attributes, timeout)
        }
        if let result { return result }
        throw .readOnly
    }

    public func readLink(_ inode: InodeNumber) throws(FileSystemError) -> String {
        if let target = try inStore(
            inode,
            { (fileSystem, inner, _, _) throws(FileSystemError) in
                try fileSystem.readLink(inner)
            })
        {
            return target
        }
        let (path, kind) = try treePath(inode)
        guard kind == .link else { throw .invalid }
        do {
            return try tree.linkTarget(at: path)
        } catch {
            throw deviceError(error, "readlink \(path)")
        }
    }

    public func open(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        if let result = try inStore(
            inode,
            { (fileSystem, inner, _, _) throws(FileSystemError) in
                try fileSystem.open(inner, flags: flags, context: context)
            })
        {
            return result
        }
        let (path, kind) = try treePath(inode)
        guard kind == .file else { throw kind == .folder ? .isDirectory : .invalid }
        guard !flags.isWriting, !flags.truncates else { throw .readOnly }
        let fd: Int32
        do {
            fd = try tree.openFile(at: path)
        } catch {
            throw deviceError(error, "open \(path)")
        }
        return OpenResult(handle: FuseKit.FileHandle(UInt64(fd)), keepCache: tree.isReadOnly, needsFlush: false)
    }

    public func read(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, size: Int)
        throws(FileSystemError) -> Data
    {
        if let data = try inStore(
            inode,
            { (fileSystem, inner, _, _) throws(FileSystemError) in
                try fileSystem.read(inner, handle: handle, offset: offset, size: size)
            })
        {
            return data
        }
        _ = try treePath(inode)
        guard size >= 0, offset <= UInt64(Int64.max), handle.rawValue <= UInt64(Int32.max) else { throw .invalid }
        let fd = Int32(handle.rawValue)
        var data = Data(count: min(size, 1 << 20))
        let count = data.withUnsafeMutableBytes { buffer -> Int in
            var done = 0
            while done < buffer.count {
                let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return -1 }
                if n == 0 { break }
                done += n
            }
            return done
        }
        guard count >= 0 else { throw .io }
        return data.prefix(count)
    }

    public func write(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, data: Data)
        throws(FileSystemError) -> Int
    {
        if let written = try inStore(
            inode,
            { (fileSystem, inner, _, _) throws(FileSystemError) in
                try fileSystem.write(inner, handle: handle, offset: offset, data: data)
            })
        {
            return written
        }
        throw .readOnly
    }

    public func flush(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        _ = try inStore(inode) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.flush(inner, handle: handle)
        }
    }

    public func release(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        if case .tree = try target(inode) {
            if handle.rawValue <= UInt64(Int32.max) { close(Int32(handle.rawValue)) }
            return
        }
        _ = try inStore(inode) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.release(inner, handle: handle)
        }
    }

    public func fsync(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError) {
        _ = try inStore(inode) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.fsync(inner, handle: handle, dataOnly: dataOnly)
        }
    }

    public func fsyncDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError)
    {
        _ = try inStore(inode) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.fsyncDirectory(inner, handle: handle, dataOnly: dataOnly)
        }
    }

    public func create(
        parent: InodeNumber, name: String, permissions: UInt32, flags: OpenFlags, context: RequestContext
    )
        throws(FileSystemError) -> (Entry, OpenResult)
    {
        let result = try inStore(parent) {
            (fileSystem, inner, slot, generation) throws(FileSystemError) -> (Entry, OpenResult) in
            let (entry, result) = try fileSystem.create(
                parent: inner, name: name, permissions: permissions, flags: flags, context: context)
            slots.took(slot, topName: inner == .root ? name : nil)
            return (outer(entry, slot: slot, folder: slots.folder(slot) ?? .root, generation: generation), result)
        }
        if let result { return result }
        throw .readOnly
    }

    public func makeNode(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        let result = try inStore(parent) { (fileSystem, inner, slot, generation) throws(FileSystemError) -> Entry in
            let entry = try fileSystem.makeNode(parent: inner, name: name, permissions: permissions, context: context)
            slots.took(slot, topName: inner == .root ? name : nil)
            return outer(entry, slot: slot, folder: slots.folder(slot) ?? .root, generation: generation)
        }
        if let result { return result }
        throw .readOnly
    }

    public func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        let result = try inStore(parent) { (fileSystem, inner, slot, generation) throws(FileSystemError) -> Entry in
            let entry = try fileSystem.makeSymbolicLink(parent: inner, name: name, target: target, context: context)
            slots.took(slot, topName: inner == .root ? name : nil)
            return outer(entry, slot: slot, folder: slots.folder(slot) ?? .root, generation: generation)
        }
        if let result { return result }
        throw .readOnly
    }

    public func unlink(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        let done = try inStore(parent) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.unlink(parent: inner, name: name, context: context)
        }
        if done == nil { throw .readOnly }
    }

    public func removeDirectory(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        let done = try inStore(parent) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.removeDirectory(parent: inner, name: name, context: context)
        }
        guard done == nil else { return }
        guard !configuration.readOnly else { throw .readOnly }
        logger.error("rmdir \(name): stores and folders are not deleted through a folder mount; remove the file")
        throw .notPermitted
    }

    public func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: RenameFlags)
        throws(FileSystemError)
    {
        guard let slot = try storeSlot(parent), let newSlot = try storeSlot(newParent) else { throw .readOnly }
        guard slot == newSlot else { throw .crossDevice }
        let newInner =
            newParent.rawValue & Node.slotMask == 0
            ? InodeNumber.root : InodeNumber(newParent.rawValue & ~Node.slotMask)
        _ = try inStore(parent) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.rename(parent: inner, name: name, newParent: newInner, newName: newName, flags: flags)
        }
    }

    /// The slot of the store `inode` is in (opening it when `inode` is its folder); nil for a tree node.
    private func storeSlot(_ inode: InodeNumber) throws(FileSystemError) -> Int? {
        try inStore(inode) { (_, _, slot, _) throws(FileSystemError) in slot }
    }

    public func extendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) -> Data {
        // No security labels or ACLs here either (see StoreFileSystem.extendedAttribute).
        guard name.hasPrefix("user.") else { throw .notSupported }
        if let value = treeFacts(of: inode).first(where: { $0.name == name }) { return Data(value.value.utf8) }
        if let value = try inStore(
            inode,
            { (fileSystem, inner, _, _) throws(FileSystemError) in
                try fileSystem.extendedAttribute(name, of: inner)
            })
        {
            return value
        }
        throw .noAttribute
    }

    public func extendedAttributeNames(of inode: InodeNumber) throws(FileSystemError) -> [String] {
        let facts = treeFacts(of: inode).map(\.name)
        let inner = try inStore(inode) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.extendedAttributeNames(of: inner)
        }
        return facts + (inner ?? [])
    }

    /// What the tree records about a node of its own (a backup's `user.backup.*`).
    private func treeFacts(of inode: InodeNumber) -> [(name: String, value: String)] {
        guard let found = try? target(inode) else { return [] }
        switch found {
        case .store: return []
        case .storeFolder(let path, _), .tree(let path, _): return path.isEmpty ? tree.rootFacts : tree.facts(of: path)
        }
    }

    public func setExtendedAttribute(_ name: String, of inode: InodeNumber, value: Data, flags: ExtendedAttributeFlags)
        throws(FileSystemError)
    {
        let done = try inStore(inode) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.setExtendedAttribute(name, of: inner, value: value, flags: flags)
        }
        if done == nil { throw .readOnly }
    }

    public func removeExtendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) {
        let done = try inStore(inode) { (fileSystem, inner, _, _) throws(FileSystemError) in
            try fileSystem.removeExtendedAttribute(name, of: inner)
        }
        if done == nil { throw .readOnly }
    }
}
