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
    public let configuration: EngineConfiguration
    /// The lock of a store opened for writing by ``open(at:types:model:options:configuration:metadata:)``.
    private let lock: StoreLock?

    public var model: ManagedObjectModel { store.model }

    public convenience init(store: any PersistentStore, configuration: EngineConfiguration = EngineConfiguration()) {
        self.init(store: store, configuration: configuration, lock: nil)
    }

    private init(store: any PersistentStore, configuration: EngineConfiguration, lock: StoreLock?) {
        self.store = store
        self.configuration = configuration
        self.rowCache = RowCache(limit: configuration.rowCacheLimit)
        self.lock = lock
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

    /// The store type that claims `url` by its suffix among `types`.
    public static func storeType(for url: URL, among types: [any PersistentStoreType]) throws(ObjectGraphError)
        -> any PersistentStoreType
    {
        let suffix = url.pathExtension.lowercased()
        guard let type = types.first(where: { $0.fileExtensions.contains(suffix) }) else {
            let known = types.flatMap(\.fileExtensions).map { ".\($0)" }.joined(separator: ", ")
            throw ObjectGraphError(
                .unsupported, "\(url.path): unknown store suffix \".\(suffix)\"; storefs knows \(known)")
        }
        return type
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
    /// or else with what its type infers from the file. A store created here keeps `model` in its
    /// metadata so that it opens on its own later.
    public static func open(
        at url: URL, types: [any PersistentStoreType], model: ManagedObjectModel? = nil,
        options: StoreOptions = StoreOptions(), configuration: EngineConfiguration = EngineConfiguration(),
        metadata: StoreMetadata = StoreMetadata()
    ) throws(ObjectGraphError) -> PersistentStoreCoordinator {
        let type = try storeType(for: url, among: types)
        let lock = options.readOnly ? nil : try StoreLock.acquire(for: url)
        do throws(ObjectGraphError) {
            let store = try open(at: url, type: type, model: model, options: options, metadata: metadata)
            return PersistentStoreCoordinator(store: store, configuration: configuration, lock: lock)
        } catch {
            lock?.release()
            throw error
        }
    }

    private static func open(
        at url: URL, type: any PersistentStoreType, model: ManagedObjectModel?, options: StoreOptions, metadata: StoreMetadata
    ) throws(ObjectGraphError) -> any PersistentStore {
        let exists = FileManager.default.fileExists(atPath: url.path)
        var model = model
        var initial = metadata
        if exists {
            if model == nil, let text = try type.metadata(at: url).embeddedModel {
                model = try XcodeModelLoader.load(contents: Data(text.utf8), source: "\(url.path) (embedded model)")
            }
        } else {
            guard options.createIfMissing else {
                throw ObjectGraphError(.notFound, "\(url.path) does not exist")
            }
            guard let model else {
                throw ObjectGraphError(.invalidModel, "creating \(url.path) needs a model (--model)")
            }
            initial[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: model))
            if initial.storeUUID == nil { initial.storeUUID = StoreMetadata.newStoreUUID() }
        }
        return try type.open(at: url, model: model, options: options, initialMetadata: initial)
    }

    /// Forgets every cached row (after another process changed the store).
    public func dropCaches() { rowCache.removeAll() }
}
