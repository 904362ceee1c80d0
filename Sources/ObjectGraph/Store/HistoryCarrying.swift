import Foundation

/// A store that keeps Core Data's persistent history and can carry it into a new store of its
/// type when a migration rewrites the store, as Core Data's own migrations keep it: the same
/// transactions (so an app's history tokens stay valid), their changes renamed to the new
/// entities, keys and properties.
///
/// Threading: as ``PersistentStore``.
public protocol HistoryCarrying: PersistentStore {
    /// The store's history as the store type keeps it; nil when it keeps none.
    func exportHistory() throws(ObjectGraphError) -> CarriedHistory?

    /// Writes `history`, read from a store of the same type, into this store, through `mapping`.
    /// Returns the number of transactions written.
    func adoptHistory(_ history: CarriedHistory, mapping: HistoryMapping) throws(ObjectGraphError) -> Int
}

/// History read by ``HistoryCarrying/exportHistory()``: opaque to everyone but its store type.
public struct CarriedHistory: Sendable {
    /// The store type that wrote it ("SQLite").
    public let storeType: String
    /// The model the history's changes refer to.
    public let model: ManagedObjectModel
    public let payload: any Sendable
    public let transactionCount: Int

    public init(storeType: String, model: ManagedObjectModel, payload: any Sendable, transactionCount: Int) {
        self.storeType = storeType
        self.model = model
        self.payload = payload
        self.transactionCount = transactionCount
    }
}

/// Where a migration put each old object, entity and property, for carrying history across it.
public struct HistoryMapping: Sendable {
    /// Old object → new object, for every object the migration carried.
    public var objects: [ObjectID: ObjectID]
    /// Old entity → the new entity its objects became; the changes of objects that are gone
    /// (deleted before the migration) follow it, keeping their keys. Changes of an entity not in
    /// it are dropped.
    public var entities: [EntityID: EntityID]
    /// Per old entity: old property name → new property name, for the properties whose values the
    /// migration carried straight across.
    public var properties: [EntityID: [String: String]]

    public init(objects: [ObjectID: ObjectID], entities: [EntityID: EntityID], properties: [EntityID: [String: String]])
    {
        self.objects = objects
        self.entities = entities
        self.properties = properties
    }

    /// Where an old object's changes go: where the migration put it, else the same key in the
    /// new entity of its entity; nil when its entity did not survive.
    public func object(_ old: ObjectID) -> ObjectID? {
        if let new = objects[old] { return new }
        return entities[old.entity].map { ObjectID(entity: $0, key: old.key) }
    }

    /// This mapping followed by `next` (a staged migration's steps, one after the other).
    public func then(_ next: HistoryMapping) -> HistoryMapping {
        var objects: [ObjectID: ObjectID] = [:]
        for (old, middle) in self.objects { if let new = next.object(middle) { objects[old] = new } }
        var entities: [EntityID: EntityID] = [:]
        var properties: [EntityID: [String: String]] = [:]
        for (old, middle) in self.entities {
            guard let new = next.entities[middle] else { continue }
            entities[old] = new
            var names: [String: String] = [:]
            for (oldName, middleName) in self.properties[old] ?? [:] {
                if let newName = next.properties[middle]?[middleName] { names[oldName] = newName }
            }
            properties[old] = names
        }
        return HistoryMapping(objects: objects, entities: entities, properties: properties)
    }
}
