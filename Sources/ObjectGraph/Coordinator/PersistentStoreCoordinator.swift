import Foundation

/// Holds an open store with its model and row cache, and makes contexts on it.
///
/// Opening follows Core Data: the store type comes from the file's suffix, metadata is readable
/// without opening the store (``metadata(at:types:)``), and the model comes from the caller, from
/// the model storefs keeps inside the stores it writes, or from the store itself where its type can
/// infer one.
///
/// Threading: safe from any thread; contexts it makes are too.
public final class PersistentStoreCoordinator: Sendable {
    public let store: any PersistentStore
    public let rowCache: RowCache
    /// The highest key each tree handed out, as far as this process knows (negative lookups
    /// answered from memory).
    public let keyBounds = KeyBounds()
    public let configuration: EngineConfiguration
    /// The lock of a store opened for writing by ``open(at:types:model:options:configuration:metadata:)``.
    private let lock: StoreLock?

    /// Where the model came from (``ModelSource``): what `storefs info` reports.
    public let modelSource: ModelSource

    public var model: ManagedObjectModel { store.model }

    public convenience init(
        store: any PersistentStore, configuration: EngineConfiguration = EngineConfiguration(),
        modelSource: ModelSource? = nil
    ) {
        self.init(store: store, configuration: configuration, lock: nil, modelSource: modelSource)
    }

    private init(
        store: any PersistentStore, configuration: EngineConfiguration, lock: StoreLock?, modelSource: ModelSource?
    ) {
        self.store = store
        self.configuration = configuration
        self.rowCache = RowCache(limit: configuration.rowCacheLimit)
        self.lock = lock
        self.modelSource = modelSource ?? store.modelSource
    }

    /// Closes the store and lets go of its lock.
    public func close() {
        store.close()
        lock?.release()
    }

    deinit {
        // A coordinator dropped without close() still lets go of the store for other writers.
        lock?.release()
    }

    /// A new, empty context on this coordinator's store.
    public func newContext() -> ObjectContext { ObjectContext(coordinator: self) }

    /// How much of a file ``storeType(for:among:)`` reads to recognize its type by content.
    public static let recognitionLength = 4096

    /// The store type of `url` among `types`: the one that claims its suffix, else, for a file
    /// that exists, the one that recognizes its first bytes (so a Core Data SQLite store opens
    /// whatever its name).
    public static func storeType(for url: URL, among types: [any PersistentStoreType]) throws(ObjectGraphError)
        -> any PersistentStoreType
    {
        if StoreURL.isService(url) {
            let scheme = url.scheme?.lowercased() ?? ""
            if let type = types.first(where: { $0.urlSchemes.contains(scheme) }) { return type }
            throw ObjectGraphError(
                .unsupported, "\(StoreURL.describe(url)): storefs knows no store type for URLs of scheme \(scheme)")
        }
        // A FIFO or a device named as a store is refused before anything opens it (an open would
        // wait for a writer that never comes).
        try RegularFile.check(url)
        let suffix = url.pathExtension.lowercased()
        if let type = types.first(where: { $0.fileExtensions.contains(suffix) }) { return type }
        if RegularFile.isRegular(url.path) == true {
            let start = try RegularFile.read(url, maxLength: recognitionLength)
            if let type = types.first(where: { $0.recognizes(fileStart: start) }) { return type }
        }
        let known = types.flatMap(\.fileExtensions).map { ".\($0)" }.joined(separator: ", ")
        throw ObjectGraphError(
            .unsupported,
            "\(url.path): unknown store suffix \".\(suffix)\" and content storefs does not recognize; storefs knows "
                + "\(known) (--type names the type of a file with another suffix)")
    }

    /// Reads a store's metadata without opening the whole store (Core Data's
    /// metadataForPersistentStore).
    public static func metadata(at url: URL, types: [any PersistentStoreType]) throws(ObjectGraphError)
        -> StoreMetadata
    {
        try storeType(for: url, among: types).metadata(at: url)
    }

    /// Opens (or, with `options.createIfMissing`, creates) the store at `url`. A store opened for
    /// writing is locked against every other writer (``StoreLock``) until ``close()``.
    ///
    /// With no `model`, an existing store is opened with the model storefs keeps in its metadata,
    /// or else with what its type finds in the file (Core Data's model cache, then inference). A
    /// store created here keeps `model` in its metadata so that it opens on its own later.
    /// `modelDescription` says where a given `model` came from (for ``modelSource``); `forcedType`
    /// overrides the type the file's suffix or content gives.
    public static func open(
        at url: URL, types: [any PersistentStoreType], model: ManagedObjectModel? = nil,
        options: StoreOptions = StoreOptions(), configuration: EngineConfiguration = EngineConfiguration(),
        metadata: StoreMetadata = StoreMetadata(), modelDescription: ModelSource? = nil,
        forcedType: (any PersistentStoreType)? = nil
    ) throws(ObjectGraphError) -> PersistentStoreCoordinator {
        if !StoreURL.isService(url) { try RegularFile.check(url) }
        let type: any PersistentStoreType
        if let forcedType { type = forcedType } else { type = try storeType(for: url, among: types) }
        // A store whose type keeps several writers apart itself (a server's) takes no lock file.
        let lock = options.readOnly || type.allowsSeveralWriters ? nil : try StoreLock.acquire(for: url)
        // What a killed migration of the store left beside it (its process gone) goes with the
        // first open for writing.
        if lock != nil { StoreFiles.removeStaleTemporaries(of: url, type: type, holdingLock: false) }
        do throws(ObjectGraphError) {
            let (store, source) = try open(
                at: url, type: type, model: model, options: options, metadata: metadata,
                modelDescription: modelDescription)
            return PersistentStoreCoordinator(
                store: store, configuration: configuration, lock: lock, modelSource: source)
        } catch {
            lock?.release()
            throw error
        }
    }

    /// The store and, when the caller or the store's metadata gave the model, where it came from
    /// (nil: the store says, see ``PersistentStore/modelSource``).
    private static func open(
        at url: URL, type: any PersistentStoreType, model: ManagedObjectModel?, options: StoreOptions,
        metadata: StoreMetadata,
        modelDescription: ModelSource?
    ) throws(ObjectGraphError) -> (any PersistentStore, ModelSource?) {
        let exists = try type.storeExists(at: url)
        let place = StoreURL.describe(url)
        var model = model
        var initial = metadata
        var source: ModelSource? = model.map { _ in modelDescription ?? .given("given by the caller") }
        if exists {
            if model == nil, !type.findsKeptModel, let text = try type.metadata(at: url).embeddedModel {
                model = try XcodeModelLoader.load(contents: Data(text.utf8), source: "\(place) (embedded model)")
                source = .keptByStoreFS
            }
        } else {
            guard options.createIfMissing else {
                throw ObjectGraphError(.notFound, "\(place) does not exist")
            }
            guard let model else {
                throw ObjectGraphError(.invalidModel, "creating \(place) needs a model (--model)")
            }
            initial[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: model))
            if initial.storeUUID == nil { initial.storeUUID = StoreMetadata.newStoreUUID() }
        }
        return (try type.open(at: url, model: model, options: options, initialMetadata: initial), source)
    }

    /// Forgets every cached row and key bound (after another process changed the store).
    public func dropCaches() {
        rowCache.removeAll()
        keyBounds.forgetAll()
    }
}
