import Foundation
import FuseKit
import Synchronization

/// A small in-memory tree served through FuseKit by the mount tests: a Mutex-guarded map of
/// inodes, with long cache timeouts so invalidation can be observed.
final class MemoryFileSystem: FileSystem {
    struct Node {
        var attributes: FileAttributes
        var children: [String: InodeNumber] = [:]
        var content = Data()
        var target = ""
        var extendedAttributes: [String: Data] = [:]
    }

    struct State {
        var nodes: [InodeNumber: Node] = [:]
        var nextInode: UInt64 = 2
        var lookups: [InodeNumber: UInt64] = [:]
    }

    let timeout: Double = 3600
    let state = Mutex(State())
    let willUnmountCalls = Atomic<Int>(0)
    let invalidator = Mutex<(any KernelCacheInvalidator)?>(nil)

    init() {
        state.withLock { state in
            state.nodes[.root] = Node(
                attributes: FileAttributes(
                    inode: .root, kind: .directory, permissions: 0o755, linkCount: 2))
        }
    }

    // MARK: - Building the tree (behind the kernel's back)

    @discardableResult
    func add(
        _ name: String, in parent: InodeNumber = .root, kind: NodeKind, content: String = "",
        target: String = "", xattrs: [String: String] = [:]
    ) -> InodeNumber {
        state.withLock { state in
            let inode = InodeNumber(state.nextInode)
            state.nextInode += 1
            var node = Node(
                attributes: FileAttributes(
                    inode: inode, kind: kind, permissions: kind == .directory ? 0o755 : 0o644,
                    linkCount: kind == .directory ? 2 : 1,
                    modificationTime: Date(timeIntervalSince1970: 1_700_000_000.25)))
            node.content = Data(content.utf8)
            node.target = target
            node.attributes.size = UInt64(kind == .symbolicLink ? target.utf8.count : node.content.count)
            node.extendedAttributes = xattrs.mapValues { Data($0.utf8) }
            state.nodes[inode] = node
            state.nodes[parent]!.children[name] = inode
            return inode
        }
    }

    func content(of inode: InodeNumber) -> String? {
        state.withLock { $0.nodes[inode].map { String(decoding: $0.content, as: UTF8.self) } }
    }

    func child(_ name: String, of parent: InodeNumber = .root) -> InodeNumber? {
        state.withLock { $0.nodes[parent]?.children[name] }
    }

    func setContent(_ text: String, of inode: InodeNumber) {
        state.withLock { state in
            state.nodes[inode]!.content = Data(text.utf8)
            state.nodes[inode]!.attributes.size = UInt64(text.utf8.count)
            state.nodes[inode]!.attributes.modificationTime = Date()
        }
    }

    func renameBehindTheKernel(_ name: String, to newName: String, in parent: InodeNumber = .root) {
        state.withLock { state in
            let inode = state.nodes[parent]!.children.removeValue(forKey: name)!
            state.nodes[parent]!.children[newName] = inode
        }
    }

    // MARK: - FileSystem

    func didMount(invalidator: any KernelCacheInvalidator) { self.invalidator.withLock { $0 = invalidator } }
    func willUnmount() { willUnmountCalls.wrappingAdd(1, ordering: .relaxed) }

    private func entry(_ node: Node) -> Entry {
        Entry(attributes: node.attributes, entryTimeout: timeout, attributeTimeout: timeout)
    }

    func lookup(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) -> Entry {
        try state.withLock { state throws(FileSystemError) in
            guard let directory = state.nodes[parent] else { throw .notFound }
            guard let inode = directory.children[name], let node = state.nodes[inode] else { throw .notFound }
            state.lookups[inode, default: 0] += 1
            return entry(node)
        }
    }

    func forget(_ inode: InodeNumber, count: UInt64) {
        state.withLock { $0.lookups[inode, default: 0] -= min(count, $0.lookups[inode, default: 0]) }
    }

    func attributes(of inode: InodeNumber, handle: FuseKit.FileHandle?) throws(FileSystemError) -> (
        FileAttributes, timeout: Double
    ) {
        guard let node = state.withLock({ $0.nodes[inode] }) else { throw .notFound }
        return (node.attributes, timeout)
    }

    func setAttributes(
        of inode: InodeNumber, _ changes: AttributeChanges, handle: FuseKit.FileHandle?, context: RequestContext
    )
        throws(FileSystemError) -> (FileAttributes, timeout: Double)
    {
        try state.withLock { state throws(FileSystemError) in
            guard var node = state.nodes[inode] else { throw .notFound }
            if let permissions = changes.permissions { node.attributes.permissions = permissions }
            if let size = changes.size {
                let count = Int(size)
                node.content =
                    node.content.count >= count
                    ? node.content.prefix(count) : node.content + Data(count: count - node.content.count)
                node.attributes.size = size
            }
            if let time = changes.modificationTime { node.attributes.modificationTime = time }
            if let time = changes.accessTime { node.attributes.accessTime = time }
            node.attributes.changeTime = Date()
            state.nodes[inode] = node
            return (node.attributes, timeout)
        }
    }

    func readLink(_ inode: InodeNumber) throws(FileSystemError) -> String {
        guard let node = state.withLock({ $0.nodes[inode] }), node.attributes.kind == .symbolicLink else {
            throw .invalid
        }
        return node.target
    }

    func openDirectory(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        OpenResult()
    }

    func readDirectory(
        _ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, plus: Bool, context: RequestContext,
        add: (DirectoryEntry) -> Bool
    ) throws(FileSystemError) {
        // Snapshot under the lock, then add outside it (add calls back into libfuse).
        let listing: [(String, Node)] = try state.withLock { state throws(FileSystemError) in
            guard let directory = state.nodes[inode], directory.attributes.kind == .directory else {
                throw .notDirectory
            }
            var listing = [(".", directory), ("..", directory)]
            for (name, child) in directory.children.sorted(by: { $0.key < $1.key }) {
                listing.append((name, state.nodes[child]!))
            }
            return listing
        }
        for (index, (name, node)) in listing.enumerated().dropFirst(Int(offset)) {
            let accepted = add(DirectoryEntry(name: name, entry: entry(node), nextOffset: UInt64(index + 1)))
            guard accepted else { break }
            if plus && name != "." && name != ".." {
                state.withLock { $0.lookups[node.attributes.inode, default: 0] += 1 }
            }
        }
    }

    func open(_ inode: InodeNumber, flags: OpenFlags, context: RequestContext) throws(FileSystemError) -> OpenResult {
        // FuseKit asks for atomic O_TRUNC: truncation on open arrives here, not as a SETATTR.
        if flags.truncates {
            state.withLock { state in state.nodes[inode]?.content = Data() }
        }
        // Nothing is buffered per open, so only a writer's close needs a FLUSH (as storefs).
        return OpenResult(keepCache: true, needsFlush: flags.isWriting)
    }

    func read(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, size: Int) throws(FileSystemError)
        -> Data
    {
        guard let node = state.withLock({ $0.nodes[inode] }) else { throw .notFound }
        let start = min(Int(offset), node.content.count)
        return Data(node.content[start..<min(start + size, node.content.count)])
    }

    func write(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, data: Data) throws(FileSystemError)
        -> Int
    {
        try state.withLock { state throws(FileSystemError) in
            guard var node = state.nodes[inode] else { throw .notFound }
            let start = Int(offset)
            if node.content.count < start + data.count {
                node.content.append(Data(count: start + data.count - node.content.count))
            }
            node.content.replaceSubrange(start..<start + data.count, with: data)
            node.attributes.size = UInt64(node.content.count)
            node.attributes.modificationTime = Date()
            state.nodes[inode] = node
            return data.count
        }
    }

    private func make(_ name: String, in parent: InodeNumber, kind: NodeKind, permissions: UInt32, target: String = "")
        throws(FileSystemError) -> Entry
    {
        try state.withLock { state throws(FileSystemError) in
            guard state.nodes[parent] != nil else { throw .notFound }
            guard state.nodes[parent]!.children[name] == nil else { throw .exists }
            let inode = InodeNumber(state.nextInode)
            state.nextInode += 1
            var node = Node(
                attributes: FileAttributes(
                    inode: inode, kind: kind, permissions: permissions, size: UInt64(target.utf8.count),
                    linkCount: kind == .directory ? 2 : 1, modificationTime: Date()))
            node.target = target
            state.nodes[inode] = node
            state.nodes[parent]!.children[name] = inode
            state.lookups[inode, default: 0] += 1
            return entry(node)
        }
    }

    func create(parent: InodeNumber, name: String, permissions: UInt32, flags: OpenFlags, context: RequestContext)
        throws(FileSystemError) -> (Entry, OpenResult)
    {
        (try make(name, in: parent, kind: .regularFile, permissions: permissions), OpenResult(keepCache: true))
    }

    func makeDirectory(parent: InodeNumber, name: String, permissions: UInt32, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try make(name, in: parent, kind: .directory, permissions: permissions)
    }

    func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context: RequestContext)
        throws(FileSystemError) -> Entry
    {
        try make(name, in: parent, kind: .symbolicLink, permissions: 0o777, target: target)
    }

    func unlink(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        try state.withLock { state throws(FileSystemError) in
            guard let inode = state.nodes[parent]?.children[name] else { throw .notFound }
            guard state.nodes[inode]!.attributes.kind != .directory else { throw .isDirectory }
            state.nodes[parent]!.children[name] = nil
        }
    }

    func removeDirectory(parent: InodeNumber, name: String, context: RequestContext) throws(FileSystemError) {
        try state.withLock { state throws(FileSystemError) in
            guard let inode = state.nodes[parent]?.children[name] else { throw .notFound }
            guard state.nodes[inode]!.attributes.kind == .directory else { throw .notDirectory }
            guard state.nodes[inode]!.children.isEmpty else { throw .notEmpty }
            state.nodes[parent]!.children[name] = nil
        }
    }

    func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: RenameFlags)
        throws(FileSystemError)
    {
        try state.withLock { state throws(FileSystemError) in
            guard let inode = state.nodes[parent]?.children[name] else { throw .notFound }
            guard state.nodes[newParent] != nil else { throw .notFound }
            if flags.contains(.noReplace), state.nodes[newParent]!.children[newName] != nil { throw .exists }
            guard !flags.contains(.exchange) else { throw .invalid }
            state.nodes[parent]!.children[name] = nil
            state.nodes[newParent]!.children[newName] = inode
        }
    }

    func extendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) -> Data {
        guard let value = state.withLock({ $0.nodes[inode]?.extendedAttributes[name] }) else { throw .noAttribute }
        return value
    }

    func extendedAttributeNames(of inode: InodeNumber) throws(FileSystemError) -> [String] {
        guard let node = state.withLock({ $0.nodes[inode] }) else { throw .notFound }
        return node.extendedAttributes.keys.sorted()
    }

    func setExtendedAttribute(_ name: String, of inode: InodeNumber, value: Data, flags: ExtendedAttributeFlags)
        throws(FileSystemError)
    {
        try state.withLock { state throws(FileSystemError) in
            guard state.nodes[inode] != nil else { throw .notFound }
            let exists = state.nodes[inode]!.extendedAttributes[name] != nil
            if flags.contains(.create) && exists { throw .exists }
            if flags.contains(.replace) && !exists { throw .noAttribute }
            state.nodes[inode]!.extendedAttributes[name] = value
        }
    }

    func removeExtendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) {
        try state.withLock { state throws(FileSystemError) in
            guard state.nodes[inode]?.extendedAttributes.removeValue(forKey: name) != nil else { throw .noAttribute }
        }
    }

    func statistics(of inode: InodeNumber) throws(FileSystemError) -> FileSystemStatistics {
        var statistics = FileSystemStatistics()
        statistics.files = UInt64(state.withLock { $0.nodes.count })
        return statistics
    }
}
