import Foundation
import FuseKit
import Logging
import ObjectGraph
import Synchronization

/// A folder of stores mounted at once: each store file of the folder is a folder named after the
/// file (`Library.sqlite/`), holding that store's mapping. `cp -a MNT/Library.sqlite
/// MNT/Library.xml` makes `Library.xml` in the folder: a new store of the copy's model, filled by
/// the copy as a migration.
///
/// Each store is served by its own ``StoreFileSystem``; inode numbers carry the store's slot in
/// bits 54–59, which ``Node`` leaves free.
///
/// Threading: as ``StoreFileSystem``; the table of stores has its own lock.
public final class StoreFolderFileSystem: SavingFileSystem {
    public let directory: URL
    let types: [any PersistentStoreType]
    let configuration: StoreFSConfiguration
    let engineConfiguration: EngineConfiguration
    let counters: OperationCounters?
    let logger: Logger
    let mountTime = Date()

    struct Slot {
        var name: String
        var fileSystem: StoreFileSystem
    }

    private struct State {
        var slots: [Int: Slot] = [:]
        var slotsByName: [String: Int] = [:]
        /// The store each process looked up last: the source of its next `cp -a` into a new name.
        var lastLookup: [Int32: Int] = [:]
        /// The store whose folder was looked up or listed last, by anyone.
        var lastTouched: Int?
        var invalidator: (any KernelCacheInvalidator)?
    }

    private let state = Mutex(State())
    private let opening = Mutex(())
    static let maximumStores = 63

    public init(
        directory: URL, types: [any PersistentStoreType], configuration: StoreFSConfiguration = StoreFSConfiguration(),
        engineConfiguration: EngineConfiguration = EngineConfiguration(), counters: OperationCounters? = nil,
        logger: Logger = Logger(label: "storefs")
    ) {
        self.directory = directory
        self.types = types
        self.configuration = configuration
        self.engineConfiguration = engineConfiguration
        self.counters = counters
        self.logger = logger
    }

    public func didMount(invalidator: any KernelCacheInvalidator) {
        let slots = state.withLock { state in
            state.invalidator = invalidator
            return state.slots
        }
        for (index, slot) in slots {
            slot.fileSystem.didMount(invalidator: SlotInvalidator(slot: index, outer: invalidator))
        }
    }

    public func willUnmount() {
        for slot in state.withLock({ Array($0.slots.values) }) {
            slot.fileSystem.willUnmount()
            slot.fileSystem.coordinator.close()
        }
    }

    public var unsavedChanges: UnsavedChanges? {
        UnsavedChanges.combined(state.withLock { Array($0.slots.values) }.compactMap(\.fileSystem.unsavedChanges))
    }

    // MARK: - Slots

    /// Store file names the folder holds, by suffix.
    func storeNames() -> [String] {
        let suffixes = Set(types.flatMap(\.fileExtensions))
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter {
            !$0.hasPrefix(".") && suffixes.contains(URL(fileURLWithPath: $0).pathExtension.lowercased())
        }
        .sorted()
    }

    /// The slot of store `name`, opening the store on first use.
    func slot(named name: String, creating model: ManagedObjectModel? = nil, metadata: StoreMetadata = StoreMetadata())
        throws(FileSystemError) -> Int
    {
        if let index = state.withLock({ $0.slotsByName[name] }) { return index }
        // One store opens at a time: two first lookups of one store would each open it, and the
        // second would find it locked for writing by the first.
        return try opening.withLock { (_) throws(FileSystemError) -> Int in
            try openSlot(named: name, creating: model, metadata: metadata)
        }
    }

    private func openSlot(named name: String, creating model: ManagedObjectModel?, metadata: StoreMetadata)
        throws(FileSystemError) -> Int
    {
        if let index = state.withLock({ $0.slotsByName[name] }) { return index }
        let url = directory.appendingPathComponent(name)
        let coordinator: PersistentStoreCoordinator
        do {
            coordinator = try PersistentStoreCoordinator.open(
                at: url, types: types, model: model,
                options: StoreOptions(readOnly: configuration.readOnly, createIfMissing: model != nil),
                configuration: engineConfiguration, metadata: metadata)
        } catch {
            throw fileSystemError(error, "open \(name)", logger: logger)
        }
        var fsConfiguration = configuration
        fsConfiguration.mountPoint = configuration.mountPoint.map { $0 + "/" + name }
        let fileSystem = StoreFileSystem(
            coordinator: coordinator, configuration: fsConfiguration, counters: counters, logger: logger,
            startsHidden: model != nil)
        let (index, invalidator): (Int?, (any KernelCacheInvalidator)?) = state.withLock { state in
            if let existing = state.slotsByName[name] { return (existing, nil) }
            guard let free = (1...Self.maximumStores).first(where: { state.slots[$0] == nil }) else {
                return (nil, nil)
            }
            state.slots[free] = Slot(name: name, fileSystem: fileSystem)
            state.slotsByName[name] = free
            return (free, state.invalidator)
        }
        guard let index else {
            coordinator.close()
            logger.error("open \(name): a folder mount serves at most \(Self.maximumStores) stores")
            throw .noSpace
        }
        if let invalidator { fileSystem.didMount(invalidator: SlotInvalidator(slot: index, outer: invalidator)) }
        return index
    }

    private func route(_ inode: InodeNumber) throws(FileSystemError) -> (StoreFileSystem, Int, InodeNumber)? {
        let slot = Int((inode.rawValue & Node.slotMask) >> Node.slotShift)
        guard slot != 0 else { return nil }
        guard let fileSystem = state.withLock({ $0.slots[slot]?.fileSystem }) else { throw .notFound }
        return (fileSystem, slot, InodeNumber(inode.rawValue & ~Node.slotMask))
    }

    static func outer(_ inode: InodeNumber, slot: Int) -> InodeNumber {
        InodeNumber(inode.rawValue | (UInt64(slot) << Node.slotShift))
    }

    private static func outer(_ entry: Entry, slot: Int) -> Entry {
        var entry = entry
        entry.attributes.inode = outer(entry.attributes.inode, slot: slot)
        return entry
    }

    /// The root's modification time is the folder's, and the kernel keeps the root's attributes
    /// only ``rootTimeout``: store files added to or removed from the folder by other processes
    /// change its time, which makes the kernel drop the root's cached listing (it compares the
    /// time when a listing starts). A read-only mount, whose listings are always cached, relies on it.
    private var rootAttributes: FileAttributes {
        let modified = (try? FileManager.default.attributesOfItem(atPath: directory.path)[.modificationDate]) as? Date
        return FileAttributes(
            inode: .root, kind: .directory, permissions: configuration.readOnly ? 0o555 : 0o755, linkCount: 2,
            uid: configuration.uid, gid: configuration.gid, modificationTime: modified ?? mountTime)
    }

    /// Seconds the kernel may keep the root's attributes (see ``rootAttributes``).
    static let rootTimeout = 1.0

    // MARK: - The folder

    /// As the store's own mapping says (``StoreFileSystem/mayTakeLong(_:)``).
    public func mayTakeLong(_ inode: InodeNumber) -> Bool {
        StoreFileSystem.mayTakeLong(InodeNumber(inode.rawValue & ~Node.slotMask))
    }

    public func lookup(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) -> Entry {
        if let (fileSystem, slot, inner) = try route(parent) {
            return Self.outer(try fileSystem.lookup(parent: inner, name: name, context: context), slot: slot)
        }
        guard storeNames().contains(name) || state.withLock({ $0.slotsByName[name] != nil }) else { throw .notFound }
        let index = try slot(named: name)
        state.withLock { state in
            state.lastLookup[context.pid] = index
            state.lastTouched = index
        }
        let fileSystem = state.withLock { $0.slots[index]!.fileSystem }
        return Self.outer(try fileSystem.entry(for: .root), slot: index)
    }

    public func attributes(of inode: InodeNumber, handle: FuseKit.FileHandle?) throws(FileSystemError) -> (
        FileAttributes, timeout: Double
    ) {
        guard let (fileSystem, slot, inner) = try route(inode) else { return (rootAttributes, Self.rootTimeout) }
        var (attributes, timeout) = try fileSystem.attributes(of: inner, handle: handle)
        attributes.inode = Self.outer(attributes.inode, slot: slot)
        return (attributes, timeout)
    }

    public func openDirectory(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        guard let (fileSystem, _, inner) = try route(inode) else { return OpenResult() }
        return try fileSystem.openDirectory(inner, flags: flags, context: context)
    }

    public func releaseDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle) {
        guard let (fileSystem, _, inner) = try? route(inode) else { return }
        fileSystem.releaseDirectory(inner, handle: handle)
    }

    public func readDirectory(
        _ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, plus: Bool, context: RequestContext,
        add: (DirectoryEntry) -> Bool
    ) throws(FileSystemError) {
        if let (fileSystem, slot, inner) = try route(inode) {
            if inner == .root { state.withLock { $0.lastTouched = slot } }
            try fileSystem.readDirectory(inner, handle: handle, offset: offset, plus: plus, context: context) { entry in
                var entry = entry
                entry.entry = Self.outer(entry.entry, slot: slot)
                return add(entry)
            }
            return
        }
        let root = Entry(
            attributes: rootAttributes, entryTimeout: configuration.entryTimeout, attributeTimeout: Self.rootTimeout)
        var entries: [(String, Entry)] = [(".", root), ("..", root)]
        let opened = state.withLock { Set($0.slotsByName.keys) }
        for name in Set(storeNames()).union(opened).sorted() {
            guard let index = try? slot(named: name),
                let fileSystem = state.withLock({ $0.slots[index]?.fileSystem }),
                let (attributes, _) = try? fileSystem.attributes(of: .root, handle: nil)
            else { continue }
            var outer = attributes
            outer.inode = Self.outer(.root, slot: index)
            entries.append(
                (
                    name,
                    Entry(
                        attributes: outer, entryTimeout: configuration.entryTimeout,
                        attributeTimeout: configuration.attributeTimeout)
                ))
        }
        for (position, (name, entry)) in entries.enumerated() where UInt64(position) >= offset {
            guard add(DirectoryEntry(name: name, entry: entry, nextOffset: UInt64(position) + 1)) else { return }
        }
    }

    /// `mkdir NAME.ext` at the top: a new, empty store of that type, with the model of the store
    /// the same process looked up last (the source of its `cp -a`).
    public func makeDirectory(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        if let (fileSystem, slot, inner) = try route(parent) {
            return Self.outer(
                try fileSystem.makeDirectory(parent: inner, name: name, permissions: permissions, context: context),
                slot: slot)
        }
        guard !configuration.readOnly else { throw .readOnly }
        let url = directory.appendingPathComponent(name)
        guard (try? PersistentStoreCoordinator.storeType(for: url, among: types)) != nil else {
            logger.error(
                "mkdir \(name): store folders are named after their file, with a store suffix (.sqlite, .xml, .binary)")
            throw .notPermitted
        }
        guard !FileManager.default.fileExists(atPath: url.path) else { throw .exists }
        // The source of the copy: the store this process looked up last; or, when the kernel
        // answered that lookup from its cache, the only model open here, or the store touched last.
        let source: Slot? = state.withLock { state in
            if let slot = state.lastLookup[context.pid], let source = state.slots[slot] { return source }
            let models = Set(state.slots.values.map(\.fileSystem.model))
            if models.count == 1 { return state.slots.values.first }
            return state.lastTouched.flatMap { state.slots[$0] }
        }
        guard let source else {
            logger.error(
                "mkdir \(name): a new store here is made by copying a store folder into it (cp -a A.sqlite \(name)); or use storefs migrate"
            )
            throw .notPermitted
        }
        var metadata = StoreMetadata()
        metadata.storeUUID = StoreMetadata.newStoreUUID()
        let index = try slot(named: name, creating: source.fileSystem.model, metadata: metadata)
        logger.info("mkdir \(name): a new store with the model of \(source.name), filled by the copy")
        state.withLock { $0.invalidator }?.invalidateInode(.root)
        let fileSystem = state.withLock { $0.slots[index]!.fileSystem }
        let (attributes, _) = try fileSystem.attributes(of: .root, handle: nil)
        var outer = attributes
        outer.inode = Self.outer(.root, slot: index)
        return Entry(
            attributes: outer, entryTimeout: configuration.entryTimeout,
            attributeTimeout: configuration.attributeTimeout)
    }

    public func statistics(of inode: InodeNumber) throws(FileSystemError) -> FileSystemStatistics {
        var statistics = FileSystemStatistics()
        statistics.blocks = 1 << 20
        statistics.freeBlocks = configuration.readOnly ? 0 : 1 << 19
        statistics.freeFiles = configuration.readOnly ? 0 : 1 << 30
        return statistics
    }

    // MARK: - Everything else goes to the store

    public func forget(_ inode: InodeNumber, count: UInt64) {}

    public func setAttributes(
        of inode: InodeNumber, _ changes: AttributeChanges, handle: FuseKit.FileHandle?, context: RequestContext
    )
        throws(FileSystemError) -> (FileAttributes, timeout: Double)
    {
        guard let (fileSystem, slot, inner) = try route(inode) else { return (rootAttributes, Self.rootTimeout) }
        var (attributes, timeout) = try fileSystem.setAttributes(of: inner, changes, handle: handle, context: context)
        attributes.inode = Self.outer(attributes.inode, slot: slot)
        return (attributes, timeout)
    }

    public func readLink(_ inode: InodeNumber) throws(FileSystemError) -> String {
        guard let (fileSystem, _, inner) = try route(inode) else { throw .invalid }
        return try fileSystem.readLink(inner)
    }

    public func open(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        guard let (fileSystem, _, inner) = try route(inode) else { throw .isDirectory }
        return try fileSystem.open(inner, flags: flags, context: context)
    }

    public func read(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, size: Int)
        throws(FileSystemError) -> Data
    {
        guard let (fileSystem, _, inner) = try route(inode) else { throw .isDirectory }
        return try fileSystem.read(inner, handle: handle, offset: offset, size: size)
    }

    public func write(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, data: Data)
        throws(FileSystemError) -> Int
    {
        guard let (fileSystem, _, inner) = try route(inode) else { throw .isDirectory }
        return try fileSystem.write(inner, handle: handle, offset: offset, data: data)
    }

    public func flush(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard let (fileSystem, _, inner) = try route(inode) else { return }
        try fileSystem.flush(inner, handle: handle)
    }

    public func release(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard let (fileSystem, _, inner) = try route(inode) else { return }
        try fileSystem.release(inner, handle: handle)
    }

    public func fsync(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError) {
        guard let (fileSystem, _, inner) = try route(inode) else { return }
        try fileSystem.fsync(inner, handle: handle, dataOnly: dataOnly)
    }

    public func fsyncDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError)
    {
        guard let (fileSystem, _, inner) = try route(inode) else { return }
        try fileSystem.fsyncDirectory(inner, handle: handle, dataOnly: dataOnly)
    }

    public func mayWait(_ operation: OperationCounters.Operation, inode: InodeNumber, handle: FuseKit.FileHandle)
        -> Bool
    {
        // The folder's own nodes never wait; a store's answer for its own.
        guard let (fileSystem, _, inner) = try? route(inode) else { return false }
        return fileSystem.mayWait(operation, inode: inner, handle: handle)
    }

    public func create(
        parent: InodeNumber, name: String, permissions: UInt32, flags: OpenFlags, context: RequestContext
    )
        throws(FileSystemError) -> (Entry, OpenResult)
    {
        guard let (fileSystem, slot, inner) = try route(parent) else { throw .notPermitted }
        let (entry, result) = try fileSystem.create(
            parent: inner, name: name, permissions: permissions, flags: flags, context: context)
        return (Self.outer(entry, slot: slot), result)
    }

    public func makeNode(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        guard let (fileSystem, slot, inner) = try route(parent) else { throw .notPermitted }
        return Self.outer(
            try fileSystem.makeNode(parent: inner, name: name, permissions: permissions, context: context), slot: slot)
    }

    public func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        guard let (fileSystem, slot, inner) = try route(parent) else { throw .notPermitted }
        return Self.outer(
            try fileSystem.makeSymbolicLink(parent: inner, name: name, target: target, context: context), slot: slot)
    }

    public func unlink(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        guard let (fileSystem, _, inner) = try route(parent) else { throw .isDirectory }
        try fileSystem.unlink(parent: inner, name: name, context: context)
    }

    public func removeDirectory(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        guard let (fileSystem, _, inner) = try route(parent) else {
            logger.error("rmdir \(name): stores are not deleted through the mount; remove the file")
            throw .notPermitted
        }
        try fileSystem.removeDirectory(parent: inner, name: name, context: context)
    }

    public func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: RenameFlags)
        throws(FileSystemError)
    {
        guard let (fileSystem, slot, inner) = try route(parent), let (_, newSlot, newInner) = try route(newParent)
        else {
            throw .notPermitted
        }
        guard slot == newSlot else { throw .crossDevice }
        try fileSystem.rename(parent: inner, name: name, newParent: newInner, newName: newName, flags: flags)
    }

    public func extendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) -> Data {
        // No security labels or ACLs here either (see StoreFileSystem.extendedAttribute).
        guard name.hasPrefix("user.") else { throw .notSupported }
        guard let (fileSystem, _, inner) = try route(inode) else { throw .noAttribute }
        return try fileSystem.extendedAttribute(name, of: inner)
    }

    public func extendedAttributeNames(of inode: InodeNumber) throws(FileSystemError) -> [String] {
        guard let (fileSystem, _, inner) = try route(inode) else { return [] }
        return try fileSystem.extendedAttributeNames(of: inner)
    }

    public func setExtendedAttribute(_ name: String, of inode: InodeNumber, value: Data, flags: ExtendedAttributeFlags)
        throws(FileSystemError)
    {
        guard let (fileSystem, _, inner) = try route(inode) else { throw .notPermitted }
        try fileSystem.setExtendedAttribute(name, of: inner, value: value, flags: flags)
    }

    public func removeExtendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) {
        guard let (fileSystem, _, inner) = try route(inode) else { throw .notPermitted }
        try fileSystem.removeExtendedAttribute(name, of: inner)
    }
}

/// Passes a store's invalidations on with its slot in the inode numbers.
struct SlotInvalidator: KernelCacheInvalidator {
    let slot: Int
    let outer: any KernelCacheInvalidator

    func invalidateEntry(parent: InodeNumber, name: String) {
        outer.invalidateEntry(parent: StoreFolderFileSystem.outer(parent, slot: slot), name: name)
    }

    func invalidateInode(_ inode: InodeNumber) {
        outer.invalidateInode(StoreFolderFileSystem.outer(inode, slot: slot))
    }

    func preload(_ files: [(inode: InodeNumber, data: Data)]) {
        outer.preload(files.map { (StoreFolderFileSystem.outer($0.inode, slot: slot), $0.data) })
    }

    func notifyDelete(parent: InodeNumber, child: InodeNumber, name: String) {
        outer.notifyDelete(
            parent: StoreFolderFileSystem.outer(parent, slot: slot),
            child: StoreFolderFileSystem.outer(child, slot: slot), name: name)
    }
}
