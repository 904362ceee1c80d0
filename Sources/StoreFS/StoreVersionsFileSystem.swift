import Foundation
import FuseKit
import Logging
import ObjectGraph
import Synchronization

/// A store's mount with the versions its write-ahead log holds: `MNT/.wal/c0` (the database file
/// alone), `MNT/.wal/c1`, … (the store right after each commit), each a read-only mount of its own
/// inside the store's (entity folders as at the root; `.history`, `.query` and `.timeline` work
/// inside). Everything else is the store's ``StoreFileSystem``, unchanged.
///
/// A version is made when it is first entered (``RecoveringStore/openVersion(_:)``: the database
/// file with the log's frames up to the commit laid over it, written to a private file) and served
/// by a ``StoreFileSystem`` of its own. Inode numbers say which: a version's folder is
/// ``RecoveredNode/version(_:)`` (its number in the key bits, so listing `.wal` opens nothing),
/// what is inside it carries the version's slot in bits 54–59, which ``Node`` leaves free. At most
/// ``maximumOpen`` versions are open at once (each is a copy of the store); entering another
/// closes the one used least recently, whose inodes then answer ENOENT, and a slot number is used
/// again only after all 63 were, with its generation moved on so the kernel never takes one
/// version's inode for another's.
///
/// Folder mounts serve no versions (their slots are their stores').
///
/// Threading: as ``StoreFileSystem``; the table of versions has its own lock, and a version is
/// made under a lock of its own that nothing else waits on.
public final class StoreVersionsFileSystem: SavingFileSystem {
    public let store: StoreFileSystem
    private let logger: Logger

    /// Versions open at once: each is a copy of the store in the private folder.
    public static let maximumOpen = 4

    private struct Version {
        var number: Int
        var fileSystem: StoreFileSystem
        var generation: UInt64
        var lastUsed: UInt64
    }

    private struct State {
        /// By slot (1–63).
        var open: [Int: Version] = [:]
        var slotOfVersion: [Int: Int] = [:]
        /// How often each slot was given.
        var generations: [Int: UInt64] = [:]
        /// Slots never given, then slots given back, oldest first.
        var free: [Int] = Array(1...63)
        var clock: UInt64 = 0
        var invalidator: (any KernelCacheInvalidator)?
    }

    private let state = Mutex(State())
    private let opening = Mutex(())

    public init(store: StoreFileSystem) {
        self.store = store
        logger = store.mapping.logger
        store.mapping.recovered.servesVersions.store(true, ordering: .relaxed)
    }

    private var mapping: Mapping { store.mapping }
    private var configuration: StoreFSConfiguration { mapping.configuration }

    public func didMount(invalidator: any KernelCacheInvalidator) {
        state.withLock { $0.invalidator = invalidator }
        store.didMount(invalidator: invalidator)
    }

    public func willUnmount() {
        store.willUnmount()
        for version in state.withLock({ Array($0.open.values) }) {
            version.fileSystem.willUnmount()
            version.fileSystem.coordinator.close()
        }
    }

    public var unsavedChanges: UnsavedChanges? { store.unsavedChanges }

    // MARK: - Versions

    /// The versions the store has (c0 … cN); nil when it has none to show.
    private func versions() -> [StoreVersion]? {
        guard mapping.servesVersions, let recovering = mapping.coordinator.store.recovering else { return nil }
        return try? recovering.storeVersions()
    }

    /// Where an inode goes: the store (slot 0), a version's folder, or inside an open version.
    private enum Route {
        case store
        case versionFolder(Int)
        case inside(StoreFileSystem, slot: Int, number: Int, inner: InodeNumber)
    }

    private func route(_ inode: InodeNumber) throws(FileSystemError) -> Route {
        let slot = Int((inode.rawValue & Node.slotMask) >> Node.slotShift)
        guard slot != 0 else {
            if let node = Node(inode), node.kind == .walVersion { return .versionFolder(Int(node.key.rawValue)) }
            return .store
        }
        let found: Version? = state.withLock { state in
            guard var version = state.open[slot] else { return nil }
            state.clock += 1
            version.lastUsed = state.clock
            state.open[slot] = version
            return version
        }
        guard let found else { throw .notFound }
        return .inside(
            found.fileSystem, slot: slot, number: found.number, inner: InodeNumber(inode.rawValue & ~Node.slotMask))
    }

    /// The open version `number`, opened now (closing the least recently used when too many are).
    private func version(_ number: Int) throws(FileSystemError) -> (StoreFileSystem, slot: Int, generation: UInt64) {
        if let found = state.withLock({ state -> Version? in
            guard let slot = state.slotOfVersion[number] else { return nil }
            state.clock += 1
            state.open[slot]?.lastUsed = state.clock
            return state.open[slot]
        }), let slot = state.withLock({ $0.slotOfVersion[number] }) {
            return (found.fileSystem, slot, found.generation)
        }
        return try opening.withLock { (_) throws(FileSystemError) -> (StoreFileSystem, slot: Int, generation: UInt64) in
            if let slot = state.withLock({ $0.slotOfVersion[number] }), let found = state.withLock({ $0.open[slot] }) {
                return (found.fileSystem, slot, found.generation)
            }
            guard let recovering = mapping.coordinator.store.recovering else { throw .notFound }
            let opened = try mapping.engine(
                { () throws(ObjectGraphError) in try recovering.openVersion(number) },
                "open \(RecoveredNode.walName)/c\(number)")
            let coordinator = PersistentStoreCoordinator(
                store: opened, configuration: mapping.coordinator.configuration,
                modelSource: mapping.coordinator.modelSource)
            var versionConfiguration = configuration
            versionConfiguration.readOnly = true
            versionConfiguration.rootAttributes = nil
            versionConfiguration.mountPoint = configuration.mountPoint.map {
                "\($0)/\(RecoveredNode.walName)/c\(number)"
            }
            let fileSystem = StoreFileSystem(
                coordinator: coordinator, configuration: versionConfiguration, counters: mapping.counters,
                logger: logger)
            let (slot, generation, evicted, invalidator) = state.withLock {
                state -> (Int, UInt64, Version?, (any KernelCacheInvalidator)?) in
                var evicted: Version?
                if state.open.count >= Self.maximumOpen,
                    let oldest = state.open.min(by: { $0.value.lastUsed < $1.value.lastUsed })
                {
                    evicted = oldest.value
                    state.open[oldest.key] = nil
                    state.slotOfVersion[oldest.value.number] = nil
                    state.free.append(oldest.key)
                }
                let slot = state.free.removeFirst()
                let generation = state.generations[slot, default: 0] + 1
                state.generations[slot] = generation
                state.clock += 1
                state.open[slot] = Version(
                    number: number, fileSystem: fileSystem, generation: generation, lastUsed: state.clock)
                state.slotOfVersion[number] = slot
                return (slot, generation, evicted, state.invalidator)
            }
            if let evicted {
                logger.info("\(RecoveredNode.walName)/c\(evicted.number) closed to make room for c\(number)")
                invalidator?.invalidateEntry(parent: RecoveredNode.wal.inode, name: "c\(evicted.number)")
                evicted.fileSystem.willUnmount()
                evicted.fileSystem.coordinator.close()
            }
            if let invalidator {
                fileSystem.didMount(invalidator: VersionInvalidator(slot: slot, number: number, outer: invalidator))
            }
            return (fileSystem, slot, generation)
        }
    }

    static func outer(_ inode: InodeNumber, slot: Int, number: Int) -> InodeNumber {
        inode == .root
            ? RecoveredNode.version(number).inode : InodeNumber(inode.rawValue | (UInt64(slot) << Node.slotShift))
    }

    private func outer(_ entry: Entry, slot: Int, number: Int) -> Entry {
        var entry = entry
        entry.attributes.inode = Self.outer(entry.attributes.inode, slot: slot, number: number)
        if entry.attributes.inode.rawValue & Node.slotMask != 0 {
            entry.generation = state.withLock { $0.open[slot]?.generation ?? 0 }
        }
        return entry
    }

    private func versionFolderAttributes(_ number: Int) throws(FileSystemError) -> FileAttributes {
        guard let versions = versions(), number >= 0, number < versions.count else { throw .notFound }
        return mapping.make(RecoveredNode.version(number), .directory, permissions: 0o555)
    }

    private func entry(_ attributes: FileAttributes) -> Entry {
        Entry(
            attributes: attributes, entryTimeout: configuration.entryTimeout,
            attributeTimeout: configuration.attributeTimeout)
    }

    // MARK: - Names and attributes

    /// As the store's own mapping says (``StoreFileSystem/mayTakeLong(_:)``), for the store and
    /// every version of it alike.
    public func mayTakeLong(_ inode: InodeNumber) -> Bool {
        StoreFileSystem.mayTakeLong(InodeNumber(inode.rawValue & ~Node.slotMask))
    }

    public func lookup(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) -> Entry {
        switch try route(parent) {
        case .store:
            guard parent == RecoveredNode.wal.inode else {
                return try store.lookup(parent: parent, name: name, context: context)
            }
            guard let number = StoreVersion.number(named: name) else { throw .notFound }
            return entry(try versionFolderAttributes(number))
        case .versionFolder(let number):
            _ = try versionFolderAttributes(number)
            let (fileSystem, slot, _) = try version(number)
            return outer(try fileSystem.lookup(parent: .root, name: name, context: context), slot: slot, number: number)
        case .inside(let fileSystem, let slot, let number, let inner):
            return outer(try fileSystem.lookup(parent: inner, name: name, context: context), slot: slot, number: number)
        }
    }

    public func attributes(of inode: InodeNumber, handle: FuseKit.FileHandle?) throws(FileSystemError) -> (
        FileAttributes, timeout: Double
    ) {
        switch try route(inode) {
        case .store: return try store.attributes(of: inode, handle: handle)
        case .versionFolder(let number): return (try versionFolderAttributes(number), configuration.attributeTimeout)
        case .inside(let fileSystem, let slot, let number, let inner):
            var (attributes, timeout) = try fileSystem.attributes(of: inner, handle: handle)
            attributes.inode = Self.outer(attributes.inode, slot: slot, number: number)
            return (attributes, timeout)
        }
    }

    public func setAttributes(
        of inode: InodeNumber, _ changes: AttributeChanges, handle: FuseKit.FileHandle?, context: RequestContext
    ) throws(FileSystemError) -> (FileAttributes, timeout: Double) {
        switch try route(inode) {
        case .store: return try store.setAttributes(of: inode, changes, handle: handle, context: context)
        case .versionFolder, .inside: throw .readOnly
        }
    }

    public func readLink(_ inode: InodeNumber) throws(FileSystemError) -> String {
        switch try route(inode) {
        case .store: return try store.readLink(inode)
        case .versionFolder: throw .invalid
        case .inside(let fileSystem, _, _, let inner): return try fileSystem.readLink(inner)
        }
    }

    public func statistics(of inode: InodeNumber) throws(FileSystemError) -> FileSystemStatistics {
        try store.statistics(of: .root)
    }

    // MARK: - Folders

    public func openDirectory(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        switch try route(inode) {
        case .store:
            if inode == RecoveredNode.wal.inode {
                guard versions() != nil else { throw .notFound }
                return OpenResult(handle: mapping.directories.open(), keepCache: true, cacheDirectory: true)
            }
            return try store.openDirectory(inode, flags: flags, context: context)
        case .versionFolder(let number):
            _ = try versionFolderAttributes(number)
            return try version(number).0.openDirectory(.root, flags: flags, context: context)
        case .inside(let fileSystem, _, _, let inner):
            return try fileSystem.openDirectory(inner, flags: flags, context: context)
        }
    }

    public func releaseDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle) {
        switch try? route(inode) {
        case .store?:
            if inode == RecoveredNode.wal.inode {
                mapping.directories.close(handle)
            } else {
                store.releaseDirectory(inode, handle: handle)
            }
        case .versionFolder(let number)?:
            if let slot = state.withLock({ $0.slotOfVersion[number] }), let version = state.withLock({ $0.open[slot] })
            {
                version.fileSystem.releaseDirectory(.root, handle: handle)
            }
        case .inside(let fileSystem, _, _, let inner)?: fileSystem.releaseDirectory(inner, handle: handle)
        case nil: break
        }
    }

    public func readDirectory(
        _ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, plus: Bool, context: RequestContext,
        add: (DirectoryEntry) -> Bool
    ) throws(FileSystemError) {
        switch try route(inode) {
        case .store:
            guard inode == RecoveredNode.wal.inode else {
                return try store.readDirectory(
                    inode, handle: handle, offset: offset, plus: plus, context: context, add: add)
            }
            guard let versions = versions() else { throw .notFound }
            let folder = try store.attributes(of: inode, handle: nil).0
            var entries: [(String, FileAttributes)] = [
                (".", folder), ("..", try store.attributes(of: .root, handle: nil).0)
            ]
            for version in versions {
                entries.append(
                    (version.name, mapping.make(RecoveredNode.version(version.number), .directory, permissions: 0o555)))
            }
            for (position, (name, attributes)) in entries.enumerated() where UInt64(position) >= offset {
                guard add(DirectoryEntry(name: name, entry: entry(attributes), nextOffset: UInt64(position) + 1)) else {
                    return
                }
            }
        case .versionFolder(let number):
            _ = try versionFolderAttributes(number)
            let (fileSystem, slot, _) = try version(number)
            try fileSystem.readDirectory(.root, handle: handle, offset: offset, plus: plus, context: context) {
                var entry = $0
                if entry.name == ".." {
                    entry.entry = self.entry(self.mapping.make(RecoveredNode.wal, .directory, permissions: 0o555))
                } else {
                    entry.entry = outer(entry.entry, slot: slot, number: number)
                }
                return add(entry)
            }
        case .inside(let fileSystem, let slot, let number, let inner):
            try fileSystem.readDirectory(inner, handle: handle, offset: offset, plus: plus, context: context) {
                var entry = $0
                entry.entry = outer(entry.entry, slot: slot, number: number)
                return add(entry)
            }
        }
    }

    // MARK: - Files

    public func open(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        switch try route(inode) {
        case .store: return try store.open(inode, flags: flags, context: context)
        case .versionFolder: throw .isDirectory
        case .inside(let fileSystem, _, _, let inner):
            if flags.isWriting { throw .readOnly }
            return try fileSystem.open(inner, flags: flags, context: context)
        }
    }

    public func read(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, size: Int)
        throws(FileSystemError) -> Data
    {
        switch try route(inode) {
        case .store: return try store.read(inode, handle: handle, offset: offset, size: size)
        case .versionFolder: throw .isDirectory
        case .inside(let fileSystem, _, _, let inner):
            return try fileSystem.read(inner, handle: handle, offset: offset, size: size)
        }
    }

    public func write(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, data: Data)
        throws(FileSystemError) -> Int
    {
        guard case .store = try route(inode) else { throw .readOnly }
        return try store.write(inode, handle: handle, offset: offset, data: data)
    }

    public func flush(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        switch try route(inode) {
        case .store: try store.flush(inode, handle: handle)
        case .versionFolder: break
        case .inside(let fileSystem, _, _, let inner): try fileSystem.flush(inner, handle: handle)
        }
    }

    public func release(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        switch try? route(inode) {
        case .store?: try store.release(inode, handle: handle)
        case .inside(let fileSystem, _, _, let inner)?: try fileSystem.release(inner, handle: handle)
        default: break
        }
    }

    public func fsync(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError) {
        if case .store = try route(inode) { try store.fsync(inode, handle: handle, dataOnly: dataOnly) }
    }

    public func fsyncDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError)
    {
        if case .store = try route(inode) { try store.fsyncDirectory(inode, handle: handle, dataOnly: dataOnly) }
    }

    // MARK: - Changes: the store's only; versions are read-only

    private func changing(_ parent: InodeNumber) throws(FileSystemError) {
        guard case .store = try route(parent), parent != RecoveredNode.wal.inode else { throw .readOnly }
    }

    public func create(
        parent: InodeNumber, name: String, permissions: UInt32, flags: OpenFlags, context: RequestContext
    ) throws(FileSystemError) -> (Entry, OpenResult) {
        try changing(parent)
        return try store.create(parent: parent, name: name, permissions: permissions, flags: flags, context: context)
    }

    public func makeDirectory(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try changing(parent)
        return try store.makeDirectory(parent: parent, name: name, permissions: permissions, context: context)
    }

    public func makeNode(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try changing(parent)
        return try store.makeNode(parent: parent, name: name, permissions: permissions, context: context)
    }

    public func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try changing(parent)
        return try store.makeSymbolicLink(parent: parent, name: name, target: target, context: context)
    }

    public func unlink(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        try changing(parent)
        try store.unlink(parent: parent, name: name, context: context)
    }

    public func removeDirectory(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        try changing(parent)
        try store.removeDirectory(parent: parent, name: name, context: context)
    }

    public func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: RenameFlags)
        throws(FileSystemError)
    {
        try changing(parent)
        try changing(newParent)
        try store.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: flags)
    }

    // MARK: - Extended attributes

    public func extendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) -> Data {
        switch try route(inode) {
        case .store: return try store.extendedAttribute(name, of: inode)
        case .versionFolder(let number):
            guard name.hasPrefix("user.") else { throw .notSupported }
            if let value = try versionAttributes(number)[name] { return value }
            return try version(number).0.extendedAttribute(name, of: .root)
        case .inside(let fileSystem, _, _, let inner): return try fileSystem.extendedAttribute(name, of: inner)
        }
    }

    public func extendedAttributeNames(of inode: InodeNumber) throws(FileSystemError) -> [String] {
        switch try route(inode) {
        case .store: return try store.extendedAttributeNames(of: inode)
        case .versionFolder(let number): return try versionAttributes(number).keys.sorted()
        case .inside(let fileSystem, _, _, let inner): return try fileSystem.extendedAttributeNames(of: inner)
        }
    }

    /// A version folder's own attributes: which frames and commit it is, and its page count.
    private func versionAttributes(_ number: Int) throws(FileSystemError) -> [String: Data] {
        guard let versions = versions(), number >= 0, number < versions.count else { throw .notFound }
        let version = versions[number]
        var result = ["user.version.pages": Data(String(version.pageCount).utf8)]
        if let frames = version.frames {
            result["user.version.frames"] = Data("\(frames.lowerBound)-\(frames.upperBound)".utf8)
            result["user.version.commit"] = Data(String(number).utf8)
        } else {
            result["user.version.commit"] = Data("none: the database file without its WAL".utf8)
        }
        return result
    }

    public func setExtendedAttribute(_ name: String, of inode: InodeNumber, value: Data, flags: ExtendedAttributeFlags)
        throws(FileSystemError)
    {
        guard case .store = try route(inode) else { throw .readOnly }
        try store.setExtendedAttribute(name, of: inode, value: value, flags: flags)
    }

    public func removeExtendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) {
        guard case .store = try route(inode) else { throw .readOnly }
        try store.removeExtendedAttribute(name, of: inode)
    }
}

/// Passes a version's invalidations on with its slot (its root as its folder's inode).
struct VersionInvalidator: KernelCacheInvalidator {
    let slot: Int
    let number: Int
    let outer: any KernelCacheInvalidator

    private func map(_ inode: InodeNumber) -> InodeNumber {
        StoreVersionsFileSystem.outer(inode, slot: slot, number: number)
    }

    func invalidateEntry(parent: InodeNumber, name: String) { outer.invalidateEntry(parent: map(parent), name: name) }
    func invalidateInode(_ inode: InodeNumber) { outer.invalidateInode(map(inode)) }
    func preload(_ files: [(inode: InodeNumber, data: Data)]) { outer.preload(files.map { (map($0.inode), $0.data) }) }
    func notifyDelete(parent: InodeNumber, child: InodeNumber, name: String) {
        outer.notifyDelete(parent: map(parent), child: map(child), name: name)
    }
}
