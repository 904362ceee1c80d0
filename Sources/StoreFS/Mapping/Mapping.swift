import Foundation
import FuseKit
import Logging
import ObjectGraph
import Synchronization

/// What the node kinds of one mounted store share: the engine, the mount's configuration, what
/// the kernel was told (invalidation), the caches of computed answers, and the write session.
/// Kinds hold no state of their own; this is it.
///
/// Threading: every method may be called concurrently from FUSE worker threads and blocks on the
/// store where it must. State is in the engine's context (its own lock) and in small
/// `Mutex`-guarded tables here and in the write session.
final class Mapping: Sendable {
    let coordinator: PersistentStoreCoordinator
    let context: ObjectContext
    let configuration: StoreFSConfiguration
    let counters: OperationCounters?
    let commitStatistics: CommitStatistics
    let logger: Logger
    let mountTime = Date()
    let directories = DirectoryHandles()
    let invalidator = Mutex<(any KernelCacheInvalidator)?>(nil)
    let renderedValues = RenderedValues()
    let preloadedObjects = RecentObjects()
    /// Entity directories not shown yet: a store made as the target of `cp -a` shows each only
    /// once the copy has made it with mkdir.
    let hiddenEntities = Mutex<Set<String>>([])
    let predicates: Predicates
    let fetchedResults = FetchedResults()
    let history = HistoryCache()
    /// What `.recovered` and `.wal` read (``RecoveredState``).
    let recovered = RecoveredState()
    /// The days and links of `.timeline`, made when it is read (``TimelineIndex``).
    let timeline = TimelineCache()
    let cachedStoreUUID = Mutex<String?>(nil)
    /// The queries asked of `.query` (``QueryFolder``), numbered for inode numbers.
    let queries = QueryTable()
    /// Why computed folders' last evaluations stopped at a limit (``bounded(_:_:)``).
    let queryFailures = QueryFailures()
    /// The write path: open files, scratch files, the copy-in session, removals, commits.
    let session = WriteSession()
    let background = BackgroundWork()
    let freedMemory = FreedMemory()
    /// The store's change token when this mount last looked (or committed), and when it looked.
    let storeToken = Mutex<Int64?>(nil)
    let lastPoll = Mutex(Date())

    var model: ManagedObjectModel { coordinator.model }

    init(
        coordinator: PersistentStoreCoordinator, configuration: StoreFSConfiguration, counters: OperationCounters?,
        commitStatistics: CommitStatistics? = nil, logger: Logger
    ) {
        self.coordinator = coordinator
        self.context = coordinator.newContext()
        self.configuration = configuration
        self.counters = counters
        self.commitStatistics = commitStatistics ?? CommitStatistics()
        self.logger = logger
        self.predicates = Predicates(model: coordinator.model) { logger.error("\($0)") }
    }

    // MARK: - Nodes

    /// The node an inode names.
    func node(_ inode: InodeNumber) throws(FileSystemError) -> Node {
        guard let node = Node(inode) else { throw .notFound }
        // A scratch entry a rename made into a property: the kernel may still name it by its old
        // inode until the invalidation arrives. (Serials are never reused, and a consumed entry is
        // gone from the files before its replacement is recorded.)
        if node.kind == .scratch, let replacement = session.scratch.replacement(of: node.serial) { return replacement }
        return node
    }

    func attributes(of node: Node, known: Snapshot? = nil, listed: Bool = false) throws(FileSystemError)
        -> FileAttributes
    {
        if node.kind == .attribute { session.openFiles.noteAttributesShown(node) }
        return try node.kind.type.attributes(of: node, in: self, known: known, listed: listed)
    }

    func entry(for node: Node, known: Snapshot? = nil, listed: Bool = false) throws(FileSystemError) -> Entry {
        Entry(
            attributes: try attributes(of: node, known: known, listed: listed),
            entryTimeout: configuration.entryTimeout,
            attributeTimeout: configuration.attributeTimeout)
    }

    func child(named name: String, in folder: Node) throws(FileSystemError) -> Node {
        try folder.kind.type.child(named: name, of: folder, in: self)
    }

    func linkTarget(of node: Node, known: Snapshot? = nil) throws(FileSystemError) -> String {
        try node.kind.type.linkTarget(of: node, in: self, known: known)
    }

    /// Attributes of a node of `kind`: the mount's owner, modes by kind and mount (755/644,
    /// 555/444 read-only), the given size and time (the mount's by default).
    func make(_ node: Node, _ kind: NodeKind, permissions: UInt32? = nil, size: Int = 0, time: Date? = nil)
        -> FileAttributes
    {
        let mode: UInt32 =
            permissions
            ?? (kind == .directory
                ? (configuration.readOnly ? 0o555 : 0o755) : (configuration.readOnly ? 0o444 : 0o644))
        return FileAttributes(
            inode: node.inode, kind: kind, permissions: kind == .symbolicLink ? 0o777 : mode,
            size: UInt64(max(size, 0)),
            linkCount: kind == .directory ? 2 : 1, uid: configuration.uid, gid: configuration.gid,
            modificationTime: time ?? mountTime)
    }

    // MARK: - Objects and values

    /// Whether `entity` is one of the model's (an inode can name any number).
    func isValid(_ entity: EntityID) -> Bool { entity.rawValue >= 1 && entity.rawValue <= model.entities.count }

    /// The snapshot of `object`: `known` when it is that object's (read once by the caller for
    /// many entries of one folder), else the context's.
    func snapshot(of object: ObjectID, known: Snapshot? = nil) throws(FileSystemError) -> Snapshot {
        if let known, known.objectID == object { return known }
        guard isValid(object.entity) else { throw .notFound }
        guard
            let snapshot = try engine(
                { () throws(ObjectGraphError) in try context.snapshot(of: object) }, "read \(object)")
        else { throw .notFound }
        return snapshot
    }

    func attributeValue(_ object: ObjectID, _ index: Int, known: Snapshot? = nil) throws(FileSystemError)
        -> (AttributeDescription, AttributeValue)
    {
        guard isValid(object.entity) else { throw .notFound }
        let attributes = model[object.entity].allAttributes
        guard index < attributes.count else { throw .notFound }
        guard let value = try snapshot(of: object, known: known).attributes[attributes[index].name] else {
            throw .notFound
        }
        return (attributes[index], value)
    }

    /// Runs an engine call, mapping its error to an errno (and the log) in one place.
    func engine<T>(_ body: () throws(ObjectGraphError) -> T, _ operation: @autoclosure () -> String)
        throws(FileSystemError) -> T
    {
        do {
            return try body()
        } catch {
            // A change refused at the call for what it would do to other objects: the process
            // gets EEXIST, and the object's folder says why.
            if error.code == .exists, !error.objects.isEmpty {
                session.failures.refuse(error.objects, because: error.message)
            }
            throw fileSystemError(error, operation(), logger: logger)
        }
    }

    /// Whether `name` in `object`'s folder is hidden: by a removal not applied yet, or as an
    /// untouched entry of a folder a copy is filling.
    func isHidden(_ name: String, in object: ObjectID) -> Bool {
        session.copyIn.hides(name, in: object) || session.removals.hides(name, in: object)
    }

    /// The members of a to-many folder it shows: not those a copy has not linked yet in a folder
    /// it is filling, nor those `rm -r` removed (hidden until the folder's object goes).
    func visibleMembers(_ members: [ObjectID], of relationship: String, in object: ObjectID) -> [ObjectID] {
        session.removals.visibleMembers(
            session.copyIn.visibleMembers(members, of: relationship, in: object), of: relationship, in: object)
    }

    /// The store's UUID, read once: it never changes, and `getfattr -d` of every object folder
    /// would otherwise read the store's metadata once per object.
    func storeUUID() throws(FileSystemError) -> String {
        if let known = cachedStoreUUID.withLock({ $0 }) { return known }
        let uuid =
            try engine({ () throws(ObjectGraphError) in try context.metadata() }, "read metadata").storeUUID ?? ""
        cachedStoreUUID.withLock { $0 = uuid }
        return uuid
    }

    /// The extended attributes of a relationship's link or folder: its description, and the
    /// order of an ordered to-many.
    func relationshipAttributes(of object: ObjectID, _ index: Int) -> [String: Data] {
        let relationship = model[object.entity].allRelationships[index]
        var result = [
            "user.relationship.destination": Data(relationship.destinationEntityName.utf8),
            "user.relationship.toMany": Data((relationship.isToMany ? "true" : "false").utf8),
            "user.relationship.deleteRule": Data(relationship.deleteRule.rawValue.utf8),
            "user.relationship.ordered": Data((relationship.isOrdered ? "true" : "false").utf8)
        ]
        if let inverse = relationship.inverseName { result["user.relationship.inverse"] = Data(inverse.utf8) }
        if relationship.isToMany && relationship.isOrdered,
            let members = try? context.destinations(of: relationship.name, for: object)
        {
            result[ToManyFolder.orderName] = Data(members.map(\.key.description).joined(separator: " ").utf8)
        }
        return result
    }

    // MARK: - Names for messages

    /// The object a folder name in an entity directory names.
    func describe(_ object: ObjectID) -> String {
        guard isValid(object.entity) else { return "\(object)" }
        return "\(model[object.entity].name)/\(object.key)"
    }

    /// A folder's path below the mount point, as components.
    func pathComponents(of node: Node) -> [String] {
        guard node.kind == .root || node.kind == .templates || isValid(node.entity) else { return [] }
        return node.kind.type.pathComponents(of: node, in: self)
    }

    /// A node named for messages.
    func describe(_ node: Node) -> String {
        if node.kind == .attribute, isValid(node.entity), node.property < model[node.entity].allAttributes.count {
            return "\(describe(node.object))/\(model[node.entity].allAttributes[node.property].name)"
        }
        if node.kind == .scratch {
            return session.scratch.file(node.serial).map { "scratch file \($0.name)" } ?? "a scratch file"
        }
        return pathComponents(of: node).joined(separator: "/")
    }
}
