import Foundation
import FuseKit
import ObjectGraph

/// What one kind of node does: the operations FuseKit asks of an inode, answered for the nodes of
/// one kind. ``StoreFileSystem`` routes each operation to the kind of the node it concerns (of the
/// folder, for an operation on a name in it) and does nothing else, so how a kind of folder or
/// file behaves is read in one file.
///
/// Every method has a default that refuses as the kernel expects of a node that does not support
/// it (ENOTDIR for a name looked up in a file, EISDIR for reading a folder, EPERM for a change the
/// mapping has no place for), so a kind implements what it supports and nothing more. Read-only
/// mounts refuse every change before a kind is asked.
///
/// Threading: kinds hold no state (what they use is the mount's, in ``Mapping``); every method may
/// be called from several FUSE worker threads at once.
protocol NodeType: Sendable {
    /// Whether the nodes of this kind are folders.
    var isDirectory: Bool { get }

    /// The folder that holds `node`, for `..`.
    func parent(of node: Node, in mapping: Mapping) -> Node
    /// A folder's path below the mount point, as components (where links made in it lead from).
    func pathComponents(of node: Node, in mapping: Mapping) -> [String]

    /// `node`'s attributes. `known`: the snapshot of the object whose folder holds `node`, when
    /// the caller has it (a listing reads it once for all its entries); `listed`: `node` comes from
    /// the listing of its folder just read, which says it exists.
    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes

    // MARK: Folders

    /// The node called `name` in folder `node`.
    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node
    /// The entries of folder `node` other than `.` and `..`.
    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    /// What every entry of a listing of `node` is made from, read once per reply instead of once
    /// per entry (an object folder's snapshot); nil when there is no such thing.
    func sharedSnapshot(of node: Node, in mapping: Mapping) throws(FileSystemError) -> Snapshot?
    /// Whether the kernel may keep this kind's listings across opens (not for computed folders,
    /// whose listing evaluated while a change landed must not stay).
    var keepsListings: Bool { get }
    /// Process `request.pid` opened folder `node`.
    func opened(_ node: Node, by request: RequestContext, in mapping: Mapping)

    // MARK: Links

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String

    // MARK: Files

    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult
    /// What reading `node` through `handle` gives now.
    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data
    /// `size` bytes of the content from `offset`.
    func read(_ node: Node, handle: FuseKit.FileHandle, offset: UInt64, size: Int, in mapping: Mapping)
        throws(FileSystemError) -> Data
    /// Writes `data` at `offset` through `handle`; returns the bytes taken.
    func write(_ data: Data, at offset: UInt64, to node: Node, handle: FuseKit.FileHandle, in mapping: Mapping)
        throws(FileSystemError) -> Int
    /// Truncates (or extends with zeros) to `size` bytes, through `handle` when there is one.
    func truncate(_ node: Node, to size: Int, handle: FuseKit.FileHandle?, in mapping: Mapping) throws(FileSystemError)
    /// setattr without a size (`touch`, `chmod`): accepted and not kept unless the kind says.
    func touch(_ node: Node, in mapping: Mapping) throws(FileSystemError)
    /// fsync of a file, once what its handle holds is set: commits, and answers for the file.
    func fsync(_ node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError)

    // MARK: Extended attributes

    /// Every `user.` attribute of `node` with its value.
    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data]
    /// One `user.` attribute (ENODATA when `node` has none of that name).
    func extendedAttribute(_ name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Data
    /// The names `getfattr -d` lists.
    func extendedAttributeNames(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String]
    func setExtendedAttribute(
        _ name: String, to value: Data, flags: ExtendedAttributeFlags, of node: Node, in mapping: Mapping
    ) throws(FileSystemError)
    func removeExtendedAttribute(_ name: String, of node: Node, in mapping: Mapping) throws(FileSystemError)

    // MARK: Changes in a folder (`node` is the folder)

    /// A new regular file (create, mknod); returns its node.
    func createFile(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node
    func makeDirectory(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node
    func makeLink(named name: String, to target: String, in node: Node, in mapping: Mapping) throws(FileSystemError)
        -> Node
    /// A member of folder `node` (a link to `member`) removed by `rm`.
    func removeMember(
        _ member: ObjectID, named name: String, in node: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    /// Scratch entry `serial` of folder `node` renamed to `newName` (how editors save, `ln -sfn`).
    func renameScratch(_ serial: UInt64, named name: String, to newName: String, in node: Node, in mapping: Mapping)
        throws(FileSystemError)
    /// The object a copy's link named `name` in folder `node` waited for was made: the link
    /// becomes the relationship it names.
    func waitingLinkFound(named name: String, in node: Node, object: ObjectID, in mapping: Mapping)
        throws(FileSystemError)

    // MARK: Changes of the node in its folder

    /// `rm` of `node`, called `name` in `folder`.
    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    /// `rmdir` of `node`, called `name` in `folder`.
    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    /// `mv name newName` of `node` within `folder` (storefs renames nothing across folders).
    func rename(_ node: Node, named name: String, to newName: String, in folder: Node, in mapping: Mapping)
        throws(FileSystemError)
}

extension NodeType {
    var keepsListings: Bool { true }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] { [] }

    func sharedSnapshot(of node: Node, in mapping: Mapping) throws(FileSystemError) -> Snapshot? { nil }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        throw isDirectory ? .notFound : .notDirectory
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        throw .notDirectory
    }

    func opened(_ node: Node, by request: RequestContext, in mapping: Mapping) {}

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        throw .invalid
    }

    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult {
        throw isDirectory ? .isDirectory : .invalid
    }

    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data {
        throw isDirectory ? .isDirectory : .invalid
    }

    func read(_ node: Node, handle: FuseKit.FileHandle, offset: UInt64, size: Int, in mapping: Mapping)
        throws(FileSystemError) -> Data
    {
        let content = try content(of: node, handle: handle, in: mapping)
        guard offset < UInt64(content.count), size > 0 else { return Data() }
        let start = content.startIndex + Int(offset)
        return content[start..<(start + min(size, content.endIndex - start))]
    }

    func write(_ data: Data, at offset: UInt64, to node: Node, handle: FuseKit.FileHandle, in mapping: Mapping)
        throws(FileSystemError) -> Int
    { throw isDirectory ? .isDirectory : .notPermitted }

    func truncate(_ node: Node, to size: Int, handle: FuseKit.FileHandle?, in mapping: Mapping) throws(FileSystemError)
    {
        throw isDirectory ? .isDirectory : .notPermitted
    }

    func touch(_ node: Node, in mapping: Mapping) throws(FileSystemError) {
        guard !mapping.configuration.readOnly else { throw .readOnly }
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
    }

    func fsync(_ node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) {
        mapping.commit(reason: "fsync")
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        return [:]
    }

    func extendedAttribute(_ name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Data {
        guard let value = try extendedAttributes(of: node, in: mapping)[name] else { throw .noAttribute }
        return value
    }

    func extendedAttributeNames(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String] {
        try extendedAttributes(of: node, in: mapping).keys.sorted()
    }

    func setExtendedAttribute(
        _ name: String, to value: Data, flags: ExtendedAttributeFlags, of node: Node, in mapping: Mapping
    ) throws(FileSystemError) { throw .notPermitted }

    func removeExtendedAttribute(_ name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) {
        throw .notPermitted
    }

    func createFile(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        throw isDirectory ? .notPermitted : .notDirectory
    }

    func makeDirectory(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        throw isDirectory ? .notPermitted : .notDirectory
    }

    func makeLink(named name: String, to target: String, in node: Node, in mapping: Mapping) throws(FileSystemError)
        -> Node
    {
        throw isDirectory ? .notPermitted : .notDirectory
    }

    func removeMember(
        _ member: ObjectID, named name: String, in node: Node, by request: RequestContext, in mapping: Mapping
    )
        throws(FileSystemError)
    {
        mapping.logger.error("rm \(mapping.describe(node))/\(name): this folder is computed and read-only")
        throw .notPermitted
    }

    func renameScratch(_ serial: UInt64, named name: String, to newName: String, in node: Node, in mapping: Mapping)
        throws(FileSystemError)
    { throw .notPermitted }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    { throw isDirectory ? .isDirectory : .notPermitted }

    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    {
        throw isDirectory ? .notPermitted : .notDirectory
    }

    func rename(_ node: Node, named name: String, to newName: String, in folder: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error(
            "mv \(name) \(newName) in \(mapping.describe(folder)): relationships are changed with ln -s and rm")
        throw .notPermitted
    }

    func waitingLinkFound(named name: String, in node: Node, object: ObjectID, in mapping: Mapping)
        throws(FileSystemError)
    {}
}

extension Node.Kind {
    /// The type of each kind: the one place that names them all.
    var type: any NodeType {
        switch self {
        case .root: RootFolder()
        case .entity: EntityFolder()
        case .object: ObjectFolder()
        case .attribute: AttributeFile()
        case .compositeFolder: CompositeFolder()
        case .toOne: ToOneLink()
        case .toMany: ToManyFolder()
        case .member: MemberLink()
        case .subentityLink: SubentityLink()
        case .scratch: ScratchEntry()
        case .fetched: FetchedFolder()
        case .templates: TemplatesFolder()
        case .template: TemplateFolder()
        case .templateMember: TemplateMemberLink()
        case .rendering: RenderingFile()
        case .history: HistoryFolder()
        case .historyTransaction: HistoryTransactionFolder()
        case .historyField: HistoryFieldFile()
        case .historyChanges: HistoryChangeFolder()
        case .historyLink: HistoryChangeLink()
        case .historyTombstone: HistoryTombstoneFolder()
        case .historyValue: HistoryValueFile()
        case .query: QueryFolder()
        case .queryFile: QueryResultFile()
        case .recovered: RecoveredFolder()
        case .recoveredEntity: RecoveredEntityFolder()
        case .recoveredRecord: RecoveredRecordFolder()
        case .recoveredAttribute: RecoveredAttributeFile()
        case .recoveredRendering: RecoveredRenderingFile()
        case .recoveredLink: RecoveredLink()
        case .walFolder, .walVersion: WALFolder()
        case .timeline: TimelineFolder()
        case .timelineYear, .timelineMonth, .timelineDay: TimelineDateFolder()
        case .timelineLink: TimelineLink()
        }
    }
}
