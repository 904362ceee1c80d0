import Foundation
import FuseKit
import Synchronization

/// The least a FUSE filesystem can do for a request: a tree held in memory, every answer a few
/// lookups in an array under one lock, with storefs's cache lifetimes and mount options. The benchmarks run
/// the same workloads on it beside storefs and tmpfs, so what FUSE itself costs on this machine
/// (kernel round trips, libfuse, FuseKit) is measured rather than guessed.
///
/// Not a general filesystem: hard links, xattrs, locks and permissions checks beyond the kernel's
/// `default_permissions` are left out because no benchmark workload uses them. Extended attributes
/// answer as storefs answers them for a file without metadata: user.* names have no value (ENODATA,
/// none listed, setting refused with EOPNOTSUPP), other namespaces are not supported (EOPNOTSUPP,
/// which tells `ls` and `cp -a` to stop asking for ACLs and security labels on this mount; ENODATA
/// would cost `ls -l` three GETXATTR round trips per entry), so the tools make the same requests
/// on both.
///
/// Threading: safe from any thread; all state is under one `Mutex`.
final class FloorFileSystem: FileSystem {
    struct Node {
        var attributes: FileAttributes
        /// A directory's entries by name, each with its slot in `order`.
        var children: [String: (inode: InodeNumber, slot: Int)] = [:]
        /// A directory's names in the order they were added; removed ones leave nil, so a listing's
        /// offsets stay valid while entries are removed under it.
        var order: [String?] = []
        var content = Data()
        var target = ""

        /// Lists `name` for `inode` at the end of this directory.
        mutating func attach(_ name: String, _ inode: InodeNumber, at time: Date) {
            children[name] = (inode, order.count)
            order.append(name)
            attributes.modificationTime = time
            attributes.changeTime = time
        }

        /// Takes `name` out of this directory; its slot in `order` stays, empty.
        mutating func detach(_ name: String, at time: Date) {
            guard let child = children.removeValue(forKey: name) else { return }
            order[child.slot] = nil
            attributes.modificationTime = time
            attributes.changeTime = time
        }
    }

    /// Cache lifetimes as storefs gives them (StoreFSConfiguration), so the kernel asks as often.
    static let timeout: Double = 3600
    /// The largest file a write may make: the benchmarks write a few bytes; this keeps a stray
    /// offset from the kernel from allocating gigabytes.
    static let maximumFileSize = 64 << 20

    /// Nodes by inode number (index 0 unused, 1 the root): inode numbers are dense.
    private let nodes = Mutex<[Node?]>([])

    /// Files opened with direct I/O, as storefs opens attribute files on a read-write mount
    /// (`--direct-io`): the floor then pays what that costs (the kernel asks for
    /// `security.capability` at every O_TRUNC open). Otherwise through the page cache.
    let directIO: Bool

    init(directIO: Bool = false) {
        self.directIO = directIO
        let root = Node(attributes: FileAttributes(inode: .root, kind: .directory, permissions: 0o755, linkCount: 2))
        nodes.withLock { $0 = [nil, root] }
    }

    // MARK: - Filling the tree before mounting

    /// Gives the root the attributes of the copied tree's top.
    func setRootAttributes(_ attributes: FileAttributes) {
        nodes.withLock { nodes in
            var attributes = attributes
            attributes.inode = .root
            nodes[1]?.attributes = attributes
        }
    }

    /// Adds a node under `parent`; returns its attributes with the inode it was given.
    @discardableResult
    func add(
        _ name: String, in parent: InodeNumber, attributes: FileAttributes, content: Data = Data(), target: String = ""
    )
        throws(FileSystemError) -> FileAttributes
    {
        try nodes.withLock { nodes throws(FileSystemError) -> FileAttributes in
            guard let parentIndex = Self.index(parent, nodes), let kind = nodes[parentIndex]?.attributes.kind else {
                throw .notFound
            }
            guard kind == .directory else { throw .notDirectory }
            guard nodes[parentIndex]?.children[name] == nil else { throw .exists }
            var added = attributes
            added.inode = InodeNumber(UInt64(nodes.count))
            nodes.append(Node(attributes: added, content: content, target: target))
            nodes[parentIndex]?.attach(name, added.inode, at: Date())
            return added
        }
    }

    private static func index(_ inode: InodeNumber, _ nodes: [Node?]) -> Int? {
        guard inode.rawValue > 0, inode.rawValue < UInt64(nodes.count) else { return nil }
        return Int(inode.rawValue)
    }

    private func node(_ inode: InodeNumber) throws(FileSystemError) -> Node {
        let found = nodes.withLock { nodes in Self.index(inode, nodes).flatMap { nodes[$0] } }
        guard let found else { throw .notFound }
        return found
    }

    private func entry(_ attributes: FileAttributes) -> Entry {
        Entry(attributes: attributes, entryTimeout: Self.timeout, attributeTimeout: Self.timeout)
    }

    // MARK: - Reading

    func lookup(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) -> Entry {
        let attributes = try nodes.withLock { nodes throws(FileSystemError) -> FileAttributes in
            guard let index = Self.index(parent, nodes), let child = nodes[index]?.children[name],
                let childIndex = Self.index(child.inode, nodes), let node = nodes[childIndex]
            else { throw .notFound }
            return node.attributes
        }
        return entry(attributes)
    }

    func attributes(of inode: InodeNumber, handle: FuseKit.FileHandle?) throws(FileSystemError) -> (
        FileAttributes, timeout: Double
    ) {
        (try node(inode).attributes, Self.timeout)
    }

    func readLink(_ inode: InodeNumber) throws(FileSystemError) -> String {
        let node = try node(inode)
        guard node.attributes.kind == .symbolicLink else { throw .invalid }
        return node.target
    }

    func readDirectory(
        _ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, plus: Bool, context: RequestContext,
        add: (DirectoryEntry) -> Bool
    ) throws(FileSystemError) {
        // Offsets: 1 after ".", 2 after "..", 3 + slot after the entry in that slot of `order`.
        let directory = try node(inode)
        guard directory.attributes.kind == .directory else { throw .notDirectory }
        if offset == 0, !add(DirectoryEntry(name: ".", entry: entry(directory.attributes), nextOffset: 1)) { return }
        if offset <= 1, !add(DirectoryEntry(name: "..", entry: entry(directory.attributes), nextOffset: 2)) { return }
        let first = offset <= 2 ? 0 : Int(min(offset - 3 + 1, UInt64(directory.order.count)))
        for slot in first..<directory.order.count {
            guard let name = directory.order[slot], let child = directory.children[name] else { continue }
            guard let attributes = try? node(child.inode).attributes else { continue }
            if !add(DirectoryEntry(name: name, entry: entry(attributes), nextOffset: UInt64(slot) + 3)) { return }
        }
    }

    func open(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError) -> OpenResult {
        if flags.truncates {
            try change(inode) { node in
                node.content = Data()
                node.attributes.modificationTime = Date()
            }
        }
        // As storefs opens files: only a writer's close sends FLUSH.
        return OpenResult(keepCache: !directIO, directIO: directIO, needsFlush: flags.isWriting)
    }

    /// As storefs opens directories: the kernel may keep listings and pages across opens.
    func openDirectory(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        OpenResult(keepCache: true, cacheDirectory: true)
    }

    func read(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, size: Int) throws(FileSystemError)
        -> Data
    {
        let content = try node(inode).content
        guard offset < UInt64(content.count), size > 0 else { return Data() }
        let start = content.startIndex + Int(offset)
        return content[start..<start + min(size, content.endIndex - start)]
    }

    func extendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) -> Data {
        guard name.hasPrefix("user.") else { throw .notSupported }
        throw .noAttribute
    }

    func statistics(of inode: InodeNumber) throws(FileSystemError) -> FileSystemStatistics {
        var statistics = FileSystemStatistics()
        statistics.files = UInt64(nodes.withLock { $0.count })
        return statistics
    }

    // MARK: - Changing

    /// Applies `body` to the node of `inode` and sets its change time.
    @discardableResult
    private func change(_ inode: InodeNumber, _ body: (inout Node) throws(FileSystemError) -> Void)
        throws(FileSystemError) -> FileAttributes
    {
        try nodes.withLock { nodes throws(FileSystemError) -> FileAttributes in
            guard let index = Self.index(inode, nodes), var node = nodes[index] else { throw .notFound }
            try body(&node)
            if node.attributes.kind == .regularFile { node.attributes.size = UInt64(node.content.count) }
            node.attributes.changeTime = Date()
            nodes[index] = node
            return node.attributes
        }
    }

    func setAttributes(
        of inode: InodeNumber, _ changes: AttributeChanges, handle: FuseKit.FileHandle?, context: RequestContext
    )
        throws(FileSystemError) -> (FileAttributes, timeout: Double)
    {
        let attributes = try change(inode) { node throws(FileSystemError) in
            if let permissions = changes.permissions { node.attributes.permissions = permissions & 0o7777 }
            if let uid = changes.uid { node.attributes.uid = uid }
            if let gid = changes.gid { node.attributes.gid = gid }
            if let time = changes.modificationTime { node.attributes.modificationTime = time }
            if let time = changes.accessTime { node.attributes.accessTime = time }
            if let size = changes.size {
                guard node.attributes.kind == .regularFile else { throw .isDirectory }
                guard size <= UInt64(Self.maximumFileSize) else { throw .tooBig }
                let count = Int(size)
                if count <= node.content.count {
                    node.content = node.content.prefix(count)
                } else {
                    node.content.append(Data(count: count - node.content.count))
                }
                node.attributes.modificationTime = Date()
            }
        }
        return (attributes, Self.timeout)
    }

    func write(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, data: Data) throws(FileSystemError)
        -> Int
    {
        guard data.count <= Self.maximumFileSize, offset <= UInt64(Self.maximumFileSize - data.count) else {
            throw .tooBig
        }
        try change(inode) { node throws(FileSystemError) in
            guard node.attributes.kind == .regularFile else { throw .isDirectory }
            let start = Int(offset)
            if node.content.count < start + data.count {
                node.content.append(Data(count: start + data.count - node.content.count))
            }
            let base = node.content.startIndex
            node.content.replaceSubrange(base + start..<base + start + data.count, with: data)
            node.attributes.modificationTime = Date()
        }
        return data.count
    }

    private func make(
        _ name: String, in parent: InodeNumber, kind: NodeKind, permissions: UInt32, target: String = "",
        context: RequestContext
    ) throws(FileSystemError) -> Entry {
        let attributes = FileAttributes(
            inode: .root, kind: kind, permissions: permissions & 0o7777, size: UInt64(target.utf8.count),
            linkCount: kind == .directory ? 2 : 1, uid: context.uid, gid: context.gid, modificationTime: Date())
        return entry(try add(name, in: parent, attributes: attributes, target: target))
    }

    func create(parent: InodeNumber, name: String, permissions: UInt32, flags: OpenFlags, context: RequestContext)
        throws(FileSystemError) -> (Entry, OpenResult)
    {
        (
            try make(name, in: parent, kind: .regularFile, permissions: permissions, context: context),
            OpenResult(keepCache: !directIO, directIO: directIO, needsFlush: flags.isWriting)
        )
    }

    func makeDirectory(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try make(name, in: parent, kind: .directory, permissions: permissions, context: context)
    }

    func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try make(name, in: parent, kind: .symbolicLink, permissions: 0o777, target: target, context: context)
    }

    /// Takes `name` out of `parent` (the node stays: the kernel may still hold it open).
    private func remove(_ name: String, from parent: InodeNumber, directory wantsDirectory: Bool)
        throws(FileSystemError)
    {
        try nodes.withLock { nodes throws(FileSystemError) in
            guard let index = Self.index(parent, nodes), let child = nodes[index]?.children[name],
                let childIndex = Self.index(child.inode, nodes), let node = nodes[childIndex]
            else { throw .notFound }
            let isDirectory = node.attributes.kind == .directory
            if wantsDirectory {
                guard isDirectory else { throw .notDirectory }
                guard node.children.isEmpty else { throw .notEmpty }
            } else if isDirectory {
                throw .isDirectory
            }
            nodes[index]?.detach(name, at: Date())
        }
    }

    func unlink(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        try remove(name, from: parent, directory: false)
    }

    func removeDirectory(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        try remove(name, from: parent, directory: true)
    }

    func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: RenameFlags)
        throws(FileSystemError)
    {
        guard flags.subtracting(.noReplace).isEmpty else { throw .invalid }
        try nodes.withLock { nodes throws(FileSystemError) in
            guard let from = Self.index(parent, nodes), let to = Self.index(newParent, nodes),
                let moved = nodes[from]?.children[name], nodes[to]?.attributes.kind == .directory
            else { throw .notFound }
            if let replaced = nodes[to]?.children[newName] {
                guard !flags.contains(.noReplace) else { throw .exists }
                guard let replacedIndex = Self.index(replaced.inode, nodes),
                    nodes[replacedIndex]?.attributes.kind != .directory
                        || nodes[replacedIndex]?.children.isEmpty == true
                else { throw .notEmpty }
            }
            let now = Date()
            nodes[to]?.detach(newName, at: now)
            nodes[from]?.detach(name, at: now)
            nodes[to]?.attach(newName, moved.inode, at: now)
        }
    }
}
