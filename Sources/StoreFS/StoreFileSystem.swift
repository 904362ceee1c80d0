import Foundation
import FuseKit
import Logging
import ObjectGraph
import Synchronization

/// The mapping of DESIGN.md: a store's entities as directories, objects as folders, attributes as
/// files, relationships as symlinks and folders of symlinks, metadata as extended attributes.
///
/// It asks the engine for objects in batches and answers with values; FuseKit talks to the
/// kernel. Inode numbers encode what they name (``Node``), so there is no inode table.
///
/// Threading: every method may be called concurrently from FUSE worker threads and blocks on the
/// store where it must. State is in the engine's context (its own lock) and in small
/// `Mutex`-guarded tables here.
public final class StoreFileSystem: SavingFileSystem {
    public let coordinator: PersistentStoreCoordinator
    public let context: ObjectContext
    public let configuration: StoreFSConfiguration
    let counters: OperationCounters?
    let logger: Logger
    let mountTime = Date()
    let directories = DirectoryHandles()
    // The write path's parts, each with its own lock (Writing/).
    let openFiles = OpenFiles()
    let scratch = ScratchFiles()
    let copyIn = CopyInSession()
    let removals = RemovalLog()
    let schedule = CommitSchedule()
    let failures = CommitFailures()
    let invalidator = Mutex<(any KernelCacheInvalidator)?>(nil)
    /// One commit at a time; held across the save.
    let commitLock = Mutex(())
    /// What the last unmount left unsaved (nil: everything was saved).
    let unsaved = Mutex<UnsavedChanges?>(nil)
    let background = BackgroundWork()
    let renderedValues = RenderedValues()
    let preloadedObjects = RecentObjects()
    let freedMemory = FreedMemory()
    let storeToken = Mutex<Int64?>(nil)
    let lastPoll = Mutex(Date())
    /// Entity directories not shown yet: a store made as the target of `cp -a` shows each only
    /// once the copy has made it with mkdir.
    let hiddenEntities = Mutex<Set<String>>([])
    let predicates: Predicates
    let fetchedResults = FetchedResults()
    let cachedStoreUUID = Mutex<String?>(nil)

    public var model: ManagedObjectModel { coordinator.model }

    public init(
        coordinator: PersistentStoreCoordinator, configuration: StoreFSConfiguration = StoreFSConfiguration(),
        counters: OperationCounters? = nil, logger: Logger = Logger(label: "storefs"), startsHidden: Bool = false
    ) {
        self.coordinator = coordinator
        self.context = coordinator.newContext()
        self.configuration = configuration
        self.counters = counters
        self.logger = logger
        self.predicates = Predicates(model: coordinator.model) { logger.error("\($0)") }
        if startsHidden { hiddenEntities.withLock { $0 = Set(coordinator.model.entities.map(\.name)) } }
    }

    public func didMount(invalidator: any KernelCacheInvalidator) {
        self.invalidator.withLock { $0 = invalidator }
        startBackgroundWork()
    }

    public func willUnmount() {
        stopBackgroundWork()
        unsaved.withLock { $0 = saveForUnmount() }
    }

    /// What the unmount could not save, and where it was kept; nil when everything was saved.
    public var unsavedChanges: UnsavedChanges? { unsaved.withLock { $0 } }

    // MARK: - Names

    public func lookup(parent: InodeNumber, name: String, context request: RequestContext) throws(FileSystemError) -> Entry {
        let node = try child(named: name, in: try node(parent))
        return try entry(for: node)
    }

    /// The node called `name` in directory `parent`.
    func child(named name: String, in parent: Node) throws(FileSystemError) -> Node {
        switch parent {
        case .root:
            if name == Self.templatesName && !predicates.templates.isEmpty { return .templates }
            guard let id = model.entityID(named: name), !hiddenEntities.withLock({ $0.contains(name) }) else {
                throw .notFound
            }
            return .entity(id)
        case .templates:
            guard let index = model.fetchRequestTemplates.firstIndex(where: { $0.name == name }),
                predicates.templates[index] != nil
            else { throw .notFound }
            return .template(index)
        case .template, .fetched:
            if let serial = scratch.named(name, in: parent) { return .scratch(serial) }
            // While a copy fills a new folder, its fetched folders hold what the copy put there.
            if case .fetched(let object, _) = parent, copyIn.isFresh(object) { throw .notFound }
            guard let key = PrimaryKey(reference: name),
                let member = try fetchedMembers(of: parent).first(where: { $0.key == key })
            else { throw .notFound }
            if case .template = parent { return .templateMember(member) }
            return .member(member)
        case .entity(let entity):
            if let serial = scratch.named(name, in: parent) { return .scratch(serial) }
            // Keys the inode numbers cannot hold are never shown, so never looked for.
            guard let key = PrimaryKey(reference: name), Node.fits(key) else { throw .notFound }
            guard let object = try engine({ () throws(ObjectGraphError) in
                try context.objectID(forKey: key, in: entity)
            }, "lookup \(model[entity].name)/\(name)") else { throw .notFound }
            return object.entity == entity ? .object(object) : .subentityLink(object)
        case .object(let object):
            if let serial = scratch.named(name, in: parent) { return .scratch(serial) }
            if let aliased = scratch.aliased(name, in: parent) { return aliased }
            if isHidden(name, in: object) { throw .notFound }
            let entity = model[object.entity]
            let snapshot = try snapshot(of: object)
            if let index = entity.allAttributes.firstIndex(where: { $0.name == name }) {
                guard snapshot.attributes[name] != nil || openFiles.sizeBeingWritten(.attribute(object, index)) != nil else {
                    throw .notFound
                }
                return .attribute(object, index)
            }
            if let index = entity.allRelationships.firstIndex(where: { $0.name == name }) {
                if entity.allRelationships[index].isToMany { return .toMany(object, index) }
                guard snapshot.toOne[name] != nil else { throw .notFound }
                return .toOne(object, index)
            }
            if let index = entity.allFetchedProperties.firstIndex(where: { $0.name == name }), hasFetchedFolder(object, index) {
                return .fetched(object, index)
            }
            if let rendering = renderingNode(named: name, in: object, snapshot: snapshot) { return rendering }
            throw .notFound
        case .toMany(let object, let index):
            if let serial = scratch.named(name, in: parent) { return .scratch(serial) }
            if let aliased = scratch.aliased(name, in: parent) { return aliased }
            guard let key = PrimaryKey(reference: name), Node.fits(key) else { throw .notFound }
            let relationship = model[object.entity].allRelationships[index]
            let members = try engine({ () throws(ObjectGraphError) in
                try context.destinations(of: relationship.name, for: object)
            }, "lookup \(name)")
            guard let member = members.first(where: { $0.key == key }), Node.fits(member),
                !visibleMembers([member], of: relationship.name, in: object).isEmpty
            else { throw .notFound }
            return .member(member)
        case .attribute, .toOne, .member, .subentityLink, .scratch, .templateMember, .rendering:
            throw .notDirectory
        }
    }

    /// The directory that holds `node` (for `..`).
    func parent(of node: Node) -> Node {
        switch node {
        case .root, .entity: .root
        case .object(let o): .entity(o.entity)
        case .toMany(let o, _), .attribute(let o, _), .toOne(let o, _), .fetched(let o, _), .rendering(let o, _): .object(o)
        case .templates, .template: node == .templates ? .root : .templates
        case .member, .subentityLink, .scratch, .templateMember: .root
        }
    }

    // MARK: - Attributes

    public func attributes(of inode: InodeNumber, handle: FuseKit.FileHandle?) throws(FileSystemError) -> (FileAttributes, timeout: Double) {
        let node = try node(inode)
        // fstat by a writer shows what it wrote (also before a new file has a value); everyone
        // else sees the stored value until the writer closes.
        if let handle, let file = openFiles.file(handle), file.node == node, file.dirty, let buffer = file.buffer {
            return (writtenFileAttributes(node, size: buffer.count), configuration.attributeTimeout)
        }
        return (try attributes(of: node), configuration.attributeTimeout)
    }

    /// The attributes of an attribute file a writer is writing: its buffer's size.
    func writtenFileAttributes(_ node: Node, size: Int) -> FileAttributes {
        FileAttributes(
            inode: node.inode, kind: .regularFile, permissions: configuration.readOnly ? 0o444 : 0o644, size: UInt64(size),
            linkCount: 1, uid: configuration.uid, gid: configuration.gid,
            modificationTime: node.object.flatMap { schedule.modificationTime(of: $0) } ?? mountTime)
    }

    /// `known`: the snapshot of the object whose folder holds `node`, when the caller has it
    /// (a folder listing reads it once for all its entries instead of once per entry).
    /// `listed`: `node` comes from the listing of its folder just read, which says it exists.
    func entry(for node: Node, known: Snapshot? = nil, listed: Bool = false) throws(FileSystemError) -> Entry {
        Entry(
            attributes: try attributes(of: node, known: known, listed: listed), entryTimeout: configuration.entryTimeout,
            attributeTimeout: configuration.attributeTimeout)
    }

    func attributes(of node: Node, known: Snapshot? = nil, listed: Bool = false) throws(FileSystemError) -> FileAttributes {
        let directoryMode: UInt32 = configuration.readOnly ? 0o555 : 0o755
        let fileMode: UInt32 = configuration.readOnly ? 0o444 : 0o644
        func make(_ kind: NodeKind, _ permissions: UInt32, size: Int = 0, time: Date? = nil) -> FileAttributes {
            FileAttributes(
                inode: node.inode, kind: kind, permissions: permissions, size: UInt64(size),
                linkCount: kind == .directory ? 2 : 1, uid: configuration.uid, gid: configuration.gid,
                modificationTime: time ?? mountTime)
        }
        switch node {
        case .root:
            return make(.directory, directoryMode)
        case .entity(let entity):
            guard entity.rawValue >= 1 && entity.rawValue <= model.entities.count else { throw .notFound }
            return make(.directory, directoryMode)
        case .object(let object):
            // Its row says it exists, unless its folder's listing just did.
            if !listed { _ = try snapshot(of: object, known: known) }
            return make(.directory, directoryMode, time: schedule.modificationTime(of: object))
        case .attribute(let object, let index):
            do throws(FileSystemError) {
                let (attribute, value) = try attributeValue(object, index, known: known)
                return make(
                    .regularFile, fileMode, size: ValueText.size(of: value, type: attribute.type),
                    time: schedule.modificationTime(of: object))
            } catch {
                // A file made by create has no value until its writer closes it; it exists meanwhile
                // (tools set its times through the descriptor, which the kernel does by inode).
                guard error == .notFound, let size = openFiles.sizeBeingWritten(node) else { throw error }
                return writtenFileAttributes(node, size: size)
            }
        case .toOne(let object, let index):
            return make(.symbolicLink, 0o777, size: try linkTarget(of: .toOne(object, index), known: known).utf8.count)
        case .toMany(let object, let index):
            guard index < model[object.entity].allRelationships.count else { throw .notFound }
            _ = try snapshot(of: object, known: known)
            return make(.directory, directoryMode, time: schedule.modificationTime(of: object))
        case .member, .subentityLink, .templateMember:
            return make(.symbolicLink, 0o777, size: try linkTarget(of: node).utf8.count)
        case .fetched(let object, let index):
            guard hasFetchedFolder(object, index) else { throw .notFound }
            _ = try snapshot(of: object, known: known)
            return make(.directory, 0o555)
        case .templates:
            guard !predicates.templates.isEmpty else { throw .notFound }
            return make(.directory, 0o555)
        case .template(let index):
            guard predicates.templates[index] != nil else { throw .notFound }
            return make(.directory, 0o555)
        case .scratch(let serial):
            guard let file = scratch.file(serial) else { throw .notFound }
            if let target = file.linkTarget { return make(.symbolicLink, 0o777, size: target.utf8.count) }
            return make(.regularFile, fileMode, size: file.content.count, time: file.modified)
        case .rendering(let object, _):
            return make(.regularFile, 0o444, size: try renderedContent(of: node).count, time: schedule.modificationTime(of: object))
        }
    }

    // MARK: - Links

    public func readLink(_ inode: InodeNumber) throws(FileSystemError) -> String {
        try linkTarget(of: try node(inode))
    }

    func linkTarget(of node: Node, known: Snapshot? = nil) throws(FileSystemError) -> String {
        switch node {
        case .toOne(let object, let index):
            let relationships = model[object.entity].allRelationships
            guard index < relationships.count else { throw .notFound }
            guard let destination = try snapshot(of: object, known: known).toOne[relationships[index].name] else { throw .notFound }
            return "../../\(model[destination.entity].name)/\(destination.key)"
        case .member(let destination):
            guard destination.entity.rawValue >= 1 && destination.entity.rawValue <= model.entities.count else {
                throw .notFound
            }
            return "../../../\(model[destination.entity].name)/\(destination.key)"
        case .subentityLink(let object), .templateMember(let object):
            guard object.entity.rawValue >= 1 && object.entity.rawValue <= model.entities.count else {
                throw .notFound
            }
            let up = node == .subentityLink(object) ? "../" : "../../"
            return "\(up)\(model[object.entity].name)/\(object.key)"
        case .scratch(let serial):
            guard let file = scratch.file(serial) else { throw .notFound }  // removed meanwhile
            guard let target = file.linkTarget else { throw .invalid }
            return target
        default:
            throw .invalid
        }
    }

    // MARK: - Reading files

    public func open(_ inode: InodeNumber, flags: OpenFlags, context request: RequestContext) throws(FileSystemError) -> OpenResult {
        let node = try node(inode)
        switch node {
        case .attribute, .scratch:
            return try openFile(node, flags: flags)
        case .rendering:
            // Computed from the value: read-only, like fetched properties.
            if flags.isWriting { throw configuration.readOnly ? .readOnly : .notPermitted }
            return try openFile(node, flags: flags)
        case .root, .entity, .object, .toMany, .fetched, .templates, .template:
            throw .isDirectory
        default:
            throw .invalid
        }
    }

    public func read(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, size: Int) throws(FileSystemError) -> Data {
        let node = try node(inode)
        let content = try currentContent(of: node, handle: handle)
        if case .attribute(let object, let index) = node, offset == 0 { preloadSiblings(of: object, besides: index) }
        guard offset < UInt64(content.count), size > 0 else { return Data() }
        let start = content.startIndex + Int(offset)
        let end = start + min(size, content.endIndex - start)
        return content[start..<end]
    }

    /// What reading `node` through `handle` gives now: the handle's buffered new content, or the
    /// stored value's text (rendered once per handle, so that reading a large value piece by
    /// piece costs what is read).
    func currentContent(of node: Node, handle: FuseKit.FileHandle) throws(FileSystemError) -> Data {
        let file = handle == .none ? nil : openFiles.file(handle)
        if let file, file.node == node {
            if let buffer = file.buffer { return buffer }
            if let rendered = file.rendered { return rendered }
        }
        let content: Data
        switch node {
        case .attribute(let object, let index):
            if let kept = renderedValues.kept(node) {
                content = kept
                break
            }
            let generation = renderedValues.generation
            let (attribute, value) = try attributeValue(object, index)
            content = renderedValues.render(node, generation: generation) { ValueText.content(of: value, type: attribute.type) }
        case .scratch(let serial):
            guard let file = scratch.file(serial), file.linkTarget == nil else { throw .notFound }
            return file.content
        case .rendering:
            content = try renderedContent(of: node)
        default:
            throw .isDirectory
        }
        if let file, file.node == node { openFiles.update(handle) { $0.rendered = content } }
        return content
    }

    // MARK: - Statistics

    public func statistics(of inode: InodeNumber) throws(FileSystemError) -> FileSystemStatistics {
        var statistics = FileSystemStatistics()
        statistics.blocks = 1 << 20
        statistics.freeBlocks = configuration.readOnly ? 0 : 1 << 19
        statistics.files = UInt64(coordinator.rowCache.statistics.snapshots)
        statistics.freeFiles = configuration.readOnly ? 0 : 1 << 30
        return statistics
    }

    // MARK: - Helpers

    /// Whether `name` in `object`'s folder is hidden: by a removal not yet committed, or as an
    /// untouched entry of a folder a copy is filling.
    func isHidden(_ name: String, in object: ObjectID) -> Bool {
        copyIn.hides(name, in: object) || removals.hides(name, in: object)
    }

    /// The members of a to-many folder it shows: not those a copy has not linked yet in a folder
    /// it is filling, nor those `rm -r` removed (hidden until the folder's object goes).
    func visibleMembers(_ members: [ObjectID], of relationship: String, in object: ObjectID) -> [ObjectID] {
        removals.visibleMembers(copyIn.visibleMembers(members, of: relationship, in: object), of: relationship, in: object)
    }

    func node(_ inode: InodeNumber) throws(FileSystemError) -> Node {
        guard let node = Node(inode) else { throw .notFound }
        // A scratch entry a rename made into a property: the kernel may still name it by its old
        // inode until the invalidation arrives. (Serials are never reused, and a consumed entry is
        // gone from the files before its replacement is recorded.)
        if case .scratch(let serial) = node, let replacement = scratch.replacement(of: serial) {
            return replacement
        }
        return node
    }

    /// The snapshot of `object`: `known` when it is that object's (read once by the caller for
    /// many entries of one folder), else the context's.
    func snapshot(of object: ObjectID, known: Snapshot?) throws(FileSystemError) -> Snapshot {
        if let known, known.objectID == object { return known }
        return try snapshot(of: object)
    }

    func snapshot(of object: ObjectID) throws(FileSystemError) -> Snapshot {
        guard object.entity.rawValue >= 1 && object.entity.rawValue <= model.entities.count else { throw .notFound }
        guard let snapshot = try engine({ () throws(ObjectGraphError) in try context.snapshot(of: object) }, "read \(object)")
        else { throw .notFound }
        return snapshot
    }

    func attributeValue(_ object: ObjectID, _ index: Int, known: Snapshot? = nil) throws(FileSystemError)
        -> (AttributeDescription, AttributeValue)
    {
        let attributes = model[object.entity].allAttributes
        guard index < attributes.count else { throw .notFound }
        guard let value = try snapshot(of: object, known: known).attributes[attributes[index].name] else { throw .notFound }
        return (attributes[index], value)
    }

    /// Runs an engine call, mapping its error to an errno (and the log) in one place.
    func engine<T>(_ body: () throws(ObjectGraphError) -> T, _ operation: @autoclosure () -> String) throws(FileSystemError) -> T {
        do {
            return try body()
        } catch {
            throw fileSystemError(error, operation(), logger: logger)
        }
    }

    /// The object a folder name in an entity directory names, for messages.
    func describe(_ object: ObjectID) -> String {
        guard object.entity.rawValue >= 1 && object.entity.rawValue <= model.entities.count else { return "\(object)" }
        return "\(model[object.entity].name)/\(object.key)"
    }
}
