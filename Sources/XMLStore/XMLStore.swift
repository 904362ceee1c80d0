import Foundation
import AtomicStore
import ObjectGraph

/// An open XML store: the graph in memory, the file rewritten atomically on every save.
///
/// Versions (`Z_OPT`) are not part of Core Data's XML format: every object reads as version 1 and
/// versions count up in memory while the store is open. ``externalChangeToken()`` hashes the
/// file's inode, size and modification time.
///
/// Threading: safe from any thread (one lock; a save holds it while it writes the file).
public final class XMLStore: PersistentStore {
    private let core: AtomicStoreCore

    init(model: ManagedObjectModel, url: URL, readOnly: Bool, graph: AtomicGraph) {
        core = AtomicStoreCore(
            model: model, url: url, storeType: XMLStoreType.typeName, readOnly: readOnly, graph: graph,
            encode: { (graph) throws(ObjectGraphError) in try XMLStoreWriter.encode(graph, model: model) })
    }

    public var storeType: String { core.storeType }
    public var url: URL? { core.url }
    public var model: ManagedObjectModel { core.model }
    public var isReadOnly: Bool { core.isReadOnly }
    public var requestCount: Int { core.requestCount }
    public var isAtomic: Bool { true }

    public func metadata() throws(ObjectGraphError) -> StoreMetadata { try core.metadata() }
    public func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] { try core.objectIDs(of: entity) }
    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int { try core.count(of: entity) }
    public func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] { try core.snapshots(for: ids) }

    public func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]
    {
        try core.toManyDestinations(of: relationship, for: sources)
    }

    public func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey] {
        try core.reserveKeys(in: root, count: count)
    }

    public func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        try core.claimKey(key, in: root)
    }

    public func save(_ request: SaveRequest) throws(ObjectGraphError) { try core.save(request) }
    public func highestKeyHandedOut(in root: EntityID) throws(ObjectGraphError) -> Int64? { try core.highestKeyHandedOut(in: root) }
    public func externalChangeToken() throws(ObjectGraphError) -> Int64? { try core.externalChangeToken() }
    public func close() { core.close() }
}
