import Foundation

/// A persistent store: one store type's way of keeping objects, as the engine sees it.
///
/// Every method that reads answers in a bounded number of store requests, whatever the number of
/// objects asked for (one query per call, or per batch inside the call), and counts each request
/// in ``requestCount``; tests hold the engine's batching to that count.
///
/// Threading: implementations are safe to call from several threads at once; calls may block on
/// I/O, so they are made from plain threads (FUSE workers, the CLI), never from a Swift
/// concurrency pool thread.
public protocol PersistentStore: AnyObject, Sendable {
    /// The type name Core Data records in metadata: "SQLite", "XML", "Binary", "InMemory".
    var storeType: String { get }
    /// Where the store lives; nil for an in-memory store.
    var url: URL? { get }
    /// The model the store was opened with (or inferred from its file).
    var model: ManagedObjectModel { get }
    /// Where ``model`` came from.
    var modelSource: ModelSource { get }
    var isReadOnly: Bool { get }
    /// Whether the store is atomic, as Core Data's atomic stores are: it holds the whole graph and
    /// every save writes all of it (a copy of the graph, and the whole file). Bulk writers make one
    /// save of such a store rather than many, whose cost would grow with the square of the objects.
    var isAtomic: Bool { get }
    /// Store requests made so far (queries, for SQLite).
    var requestCount: Int { get }

    /// The store's metadata, including `NSStoreType` and `NSStoreUUID`.
    func metadata() throws(ObjectGraphError) -> StoreMetadata

    /// The IDs of the objects whose entity is exactly `entity` (not its subentities), by key.
    func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID]

    /// The number of objects whose entity is exactly `entity`.
    func count(of entity: EntityID) throws(ObjectGraphError) -> Int

    /// The snapshots of the given objects, in one store request per call. Objects that do not
    /// exist are left out of the result.
    func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot]

    /// The destinations of to-many `relationship` (declared on `entity` or an ancestor) for each of
    /// `sources`, in one store request per call; ordered relationships in their order. Every source
    /// has an entry, empty when it has no destinations.
    func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]

    /// ``toManyDestinations(of:in:for:)`` as one list per source, in the order of `sources`: for
    /// readers of many objects (an export), which then look nothing up.
    func toManyDestinationLists(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [[ObjectID]]

    /// Reserves `count` new primary keys in the tree of root entity `root` (Core Data's Z_MAX).
    func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey]

    /// Claims a specific key in the tree of `root` when no object has it and it was never handed
    /// out; returns false otherwise.
    func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool

    /// Applies a save as one transaction (see ``SaveRequest`` for what it writes and when it
    /// conflicts). Errors about particular objects name them (``ObjectGraphError/objects``).
    func save(_ request: SaveRequest) throws(ObjectGraphError)

    /// Applies a save as ``save(_:)`` does and says what the store changed on its own meanwhile
    /// (triggers, relationship clean-up), for the engine to read those objects again.
    func saveReportingEffects(_ request: SaveRequest) throws(ObjectGraphError) -> SaveEffects

    /// Refuses a value this store type cannot hold for `attribute` of `entity` (SQLite has no NaN),
    /// so the write that sets it fails instead of the save.
    func check(_ value: AttributeValue, for attribute: AttributeDescription, of entity: EntityID)
        throws(ObjectGraphError)

    /// Refuses setting `attribute` of `entity` to nil where the store computes its values itself
    /// (a derived attribute Core Data's triggers keep), so the removal fails instead of the save.
    func checkRemoval(of attribute: AttributeDescription, of entity: EntityID) throws(ObjectGraphError)

    /// A token that changes whenever another process commits to the store; nil where the store
    /// type cannot tell.
    func externalChangeToken() throws(ObjectGraphError) -> Int64?

    /// Releases the store's files and connections. Later calls fail.
    func close()

    /// The files the store read when it opened (the store file, an SQLite store's -wal and
    /// -journal, its external data when asked to hash them), with their SHA-256 when it was opened
    /// with ``StoreOptions/hashesInputs``; empty for a store opened for writing or held in memory.
    var inputFiles: [InputFile] { get }

    /// The highest primary key handed out in the tree of root entity `root` (Core Data's Z_MAX,
    /// or the highest key an object has where that is higher): keys above it were never used. It
    /// may be above every key the store holds (objects deleted since); a migration carries it to
    /// the new store (``SaveRequest/keyCounters``).
    func highestKey(in root: EntityID) throws(ObjectGraphError) -> Int64

    /// The objects of `entity` (and its subentities when asked) that match `predicate`, by key, in
    /// one store request; nil when the store cannot evaluate this predicate exactly as
    /// ``PredicateEvaluator`` would (the engine then evaluates it in memory). `predicate` has no
    /// variables left (see ``ObjectContext/substitutingVariables(in:source:fetchedProperty:variables:)``).
    func objectIDs(matching predicate: Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> [ObjectID]?

    /// The objects of root entity `root`'s tree whose properties hold exactly `values` (an
    /// attribute's value, or a to-one's destination), in one request; nil when the store cannot
    /// answer (the engine then reads the tree). What the uniqueness check at the call asks.
    func objectIDs(holding values: [(property: String, value: PropertyMatch)], in root: EntityID)
        throws(ObjectGraphError) -> [ObjectID]?

    /// Property tuples the store itself keeps unique among the objects of root entity `root`'s
    /// tree, beyond the model's uniqueness constraints (an SQLite file's UNIQUE indexes, Photos'
    /// among them): a change that would duplicate one is refused when it is made.
    func uniqueKeys(of root: EntityID) -> [[String]]

    /// The objects of `entity` (and its subentities when asked) that may match `predicate`, by
    /// key, in one store request: every object that matches is among them, and ``PredicateCandidates/exact``
    /// says whether they are exactly the matches (otherwise the engine decides each of them, and
    /// reads no other object). Nil when the store cannot narrow them at all (the engine then
    /// evaluates the predicate on every object).
    func candidates(matching predicate: Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> PredicateCandidates?

    /// The number of objects ``objectIDs(matching:of:includingSubentities:)`` would give, counted
    /// in one store request without reading them; nil when the store cannot evaluate `predicate`.
    func count(matching predicate: Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> Int?

    /// Up to `limit` snapshots of the objects of `entity` (and its subentities when asked) whose
    /// keys come after `key` (from the first when nil) and that match `predicate` (all when nil),
    /// by key, in one store request: a page of a walk through many objects that reads each row
    /// once and holds no list of every key. Nil when the store cannot read pages (or cannot
    /// evaluate `predicate`); the caller then lists the objects' IDs and reads their snapshots.
    func snapshots(
        of entity: EntityID, includingSubentities: Bool, matching predicate: Predicate?, after key: PrimaryKey?,
        limit: Int
    ) throws(ObjectGraphError) -> [Snapshot]?
}

extension PersistentStore {
    public func toManyDestinationLists(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [[ObjectID]]
    {
        let lists = try toManyDestinations(of: relationship, in: entity, for: sources)
        return sources.map { lists[$0] ?? [] }
    }

    /// A store that does not say otherwise was opened with a model (the coordinator knows that
    /// case) or worked one out from its file.
    public var modelSource: ModelSource { .inferred }

    public var isAtomic: Bool { false }

    /// Stores that change nothing on their own report nothing.
    public func saveReportingEffects(_ request: SaveRequest) throws(ObjectGraphError) -> SaveEffects {
        try save(request)
        return SaveEffects()
    }

    /// Stores that hold every value of every type accept everything.
    public func check(_ value: AttributeValue, for attribute: AttributeDescription, of entity: EntityID)
        throws(ObjectGraphError)
    {}

    /// Stores that compute no values themselves let every optional value go.
    public func checkRemoval(of attribute: AttributeDescription, of entity: EntityID) throws(ObjectGraphError) {}

    public var inputFiles: [InputFile] { [] }

    /// Stores that keep no Z_MAX: the highest key an object of the tree has.
    public func highestKey(in root: EntityID) throws(ObjectGraphError) -> Int64 {
        var highest: Int64 = 0
        for entity in model.entities where entity.rootID == root {
            for id in try objectIDs(of: entity.id) { highest = max(highest, id.key.rawValue) }
        }
        return highest
    }

    /// Stores that cannot look values up leave it to the engine.
    public func objectIDs(holding values: [(property: String, value: PropertyMatch)], in root: EntityID)
        throws(ObjectGraphError) -> [ObjectID]?
    { nil }

    /// Stores without indexes of their own keep what the model says.
    public func uniqueKeys(of root: EntityID) -> [[String]] { [] }

    /// Stores that cannot query leave predicates to the engine.
    public func objectIDs(matching predicate: Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> [ObjectID]?
    { nil }

    /// Stores that answer predicates exactly or not at all.
    public func candidates(matching predicate: Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> PredicateCandidates?
    {
        try objectIDs(matching: predicate, of: entity, includingSubentities: includingSubentities).map {
            PredicateCandidates(ids: $0, exact: true)
        }
    }

    /// Stores that cannot query leave counting to the engine.
    public func count(matching predicate: Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> Int?
    { nil }

    /// Stores that hold their objects in memory list them instead.
    public func snapshots(
        of entity: EntityID, includingSubentities: Bool, matching predicate: Predicate?, after key: PrimaryKey?,
        limit: Int
    ) throws(ObjectGraphError) -> [Snapshot]? { nil }
}

extension PersistentStoreType {
    /// A type that cannot tell its files by content claims them by suffix only.
    public func recognizes(fileStart: Data) -> Bool { false }

    /// Types whose stores are files answer to no URL scheme but `file`.
    public var urlSchemes: [String] { [] }

    /// A store file has one writer at a time (``StoreLock``).
    public var allowsSeveralWriters: Bool { false }

    /// A store file exists when the file does.
    public func storeExists(at url: URL) throws(ObjectGraphError) -> Bool {
        FileManager.default.fileExists(atPath: url.path)
    }

    /// A store file is removed with the files beside it that its type writes while open.
    public func removeStore(at url: URL) throws(ObjectGraphError) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
    }

    public var findsKeptModel: Bool { false }

    /// A store of one file is self-contained already.
    public func consolidate(at url: URL) throws(ObjectGraphError) {}

    /// A store of one file has no folders beside it.
    public func companionFolders(of url: URL) -> [URL] { [] }
}

/// Options for opening a store.
public struct StoreOptions: Sendable, Hashable {
    /// Open read-only: saves fail with ``ObjectGraphError/Code/readOnly`` and the file is never
    /// written.
    public var readOnly: Bool
    /// Create the store when the file does not exist (needs a model).
    public var createIfMissing: Bool
    /// Told how far the open has come, by stores whose open reads the whole file (XML).
    public var progress: LoadProgress?
    /// With `readOnly`: record the SHA-256 of every file the open reads
    /// (``PersistentStore/inputFiles``), and keep showing what was read then: the store does not
    /// follow later changes to its files, whose hashes would no longer say what it shows
    /// (`storefs info`, evidence mounts).
    public var hashesInputs: Bool

    public init(
        readOnly: Bool = false, createIfMissing: Bool = false, progress: LoadProgress? = nil, hashesInputs: Bool = false
    ) {
        self.readOnly = readOnly
        self.createIfMissing = createIfMissing
        self.progress = progress
        self.hashesInputs = hashesInputs
    }
}

/// A store type: how to recognise, open and create its files.
public protocol PersistentStoreType: Sendable {
    /// The type name recorded in metadata ("SQLite").
    var name: String { get }
    /// File suffixes this type claims, without the dot ("sqlite").
    var fileExtensions: [String] { get }

    /// Reads the metadata of the store at `url` without opening the whole store.
    func metadata(at url: URL) throws(ObjectGraphError) -> StoreMetadata

    /// Whether opening a store of this type without a model finds the model storefs keeps in its
    /// metadata (``StoreMetadata/modelKey``) by itself, and says so in its
    /// ``PersistentStore/modelSource``; otherwise the coordinator reads the metadata first.
    var findsKeptModel: Bool { get }

    /// Whether a file that begins with `fileStart` (up to its first 4 KiB) is a store of this type,
    /// for files whose suffix names no type (SwiftData's `default.store`, a store renamed by a tool).
    func recognizes(fileStart: Data) -> Bool

    /// Makes the store at `url` one self-contained file that can be renamed or replaced whole
    /// (SQLite: folds its -wal into the main file). Called with the store's lock held; its
    /// content does not change.
    func consolidate(at url: URL) throws(ObjectGraphError)

    /// Folders beside the store at `url` that belong to it and are named after it (SQLite's
    /// external data, `.NAME_SUPPORT`): a migration moves their files with the store.
    func companionFolders(of url: URL) -> [URL]

    /// Opens the store at `url`. With a nil model the store uses a model it can read from its own
    /// file (inferred from the schema, where the type allows it), or fails.
    /// `initialMetadata` is written when the store is created.
    func open(
        at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata
    ) throws(ObjectGraphError) -> any PersistentStore

    /// URL schemes of stores this type serves on a server (`postgresql`); empty for types whose
    /// stores are files (`file:` URLs, chosen by suffix or content).
    var urlSchemes: [String] { get }

    /// Whether several processes may write one store at once (the store keeps them apart);
    /// otherwise a writer takes the store's ``StoreLock``.
    var allowsSeveralWriters: Bool { get }

    /// Whether a store exists at `url` (a file, or a store on a server).
    func storeExists(at url: URL) throws(ObjectGraphError) -> Bool

    /// Removes the store at `url`: what a migration into a new store that failed leaves behind.
    func removeStore(at url: URL) throws(ObjectGraphError)
}

/// A property's value to look objects up by: an attribute's value or a to-one's destination.
public enum PropertyMatch: Hashable, Sendable {
    case value(AttributeValue)
    case object(ObjectID)
}

/// What a store answers for a predicate (``PersistentStore/candidates(matching:of:includingSubentities:)``):
/// objects by key among which are all that match, and whether they are exactly those.
///
/// Threading: a value; share it freely.
public struct PredicateCandidates: Sendable, Hashable {
    public var ids: [ObjectID]
    /// The objects are exactly the matches; otherwise a superset to decide one by one.
    public var exact: Bool

    public init(ids: [ObjectID], exact: Bool) {
        self.ids = ids
        self.exact = exact
    }
}
