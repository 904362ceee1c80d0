import Foundation
import ObjectGraph

// the two targets no shared module below ObjectGraph). Change both together.

/// The whole object graph of an atomic store, held in memory between a load and a save.
///
/// A value type on purpose: a save applies its request to a copy and the store swaps the copy in
/// only after the file was written, so a failed write leaves memory exactly as it was.
/// To-many contents are kept as the context gives them (both sides of every pair), like
/// ``InMemoryStore``.
package struct AtomicGraph: Sendable {
    package struct ToManyKey: Hashable, Sendable {
        package var source: ObjectID
        package var relationship: String

        package init(source: ObjectID, relationship: String) {
            self.source = source
            self.relationship = relationship
        }
    }

    package var snapshots: [ObjectID: Snapshot] = [:]
    package var keysByRoot: [EntityID: [PrimaryKey: ObjectID]] = [:]
    package var toMany: [ToManyKey: [ObjectID]] = [:]
    /// The highest key handed out per root entity (Core Data's Z_MAX), reserved keys included.
    package var maxKey: [EntityID: Int64] = [:]
    package var metadata: StoreMetadata

    package init(metadata: StoreMetadata) { self.metadata = metadata }

    /// Adds an object read from a file; false when its key is already taken in its root.
    package mutating func load(_ snapshot: Snapshot, root: EntityID) -> Bool {
        let id = snapshot.objectID
        guard keysByRoot[root, default: [:]].updateValue(id, forKey: id.key) == nil else { return false }
        snapshots[id] = snapshot
        maxKey[root] = max(maxKey[root] ?? 0, id.key.rawValue)
        return true
    }

    package func exists(_ id: ObjectID, model: ManagedObjectModel) -> Bool {
        guard id.entity.rawValue >= 1, id.entity.rawValue <= model.entities.count else { return false }
        return keysByRoot[model[id.entity].rootID]?[id.key] == id
    }

    /// Objects of exactly `entity`, by key.
    package func objectIDs(of entity: EntityID, model: ManagedObjectModel) -> [ObjectID] {
        (keysByRoot[model[entity].rootID] ?? [:]).values.filter { $0.entity == entity }.sorted()
    }

    /// Applies a save: versions first (all or nothing), then inserts, updates, deletes, to-many
    /// contents and metadata.
    package mutating func apply(_ request: SaveRequest, model: ManagedObjectModel, storeType: String) throws(ObjectGraphError) {
        for s in request.updated where snapshots[s.objectID]?.version != s.version {
            throw conflict(s.objectID, model)
        }
        for d in request.deleted where snapshots[d.objectID]?.version != d.expectedVersion {
            throw conflict(d.objectID, model)
        }
        var inserting: Set<ObjectID> = []
        for s in request.inserted {
            let root = model[s.objectID.entity].rootID
            guard keysByRoot[root]?[s.objectID.key] == nil, inserting.insert(s.objectID).inserted else {
                throw ObjectGraphError(.exists, "\(model[s.objectID.entity].name) key \(s.objectID.key) already exists")
            }
        }
        for s in request.inserted {
            var s = s
            s.version = 1
            let root = model[s.objectID.entity].rootID
            snapshots[s.objectID] = s
            keysByRoot[root, default: [:]][s.objectID.key] = s.objectID
            maxKey[root] = max(maxKey[root] ?? 0, s.objectID.key.rawValue)
        }
        for s in request.updated {
            var s = s
            s.version += 1
            snapshots[s.objectID] = s
        }
        for d in request.deleted {
            snapshots[d.objectID] = nil
            keysByRoot[model[d.objectID.entity].rootID]?[d.objectID.key] = nil
            for r in model[d.objectID.entity].persistentRelationships where r.isToMany {
                toMany[ToManyKey(source: d.objectID, relationship: r.name)] = nil
            }
        }
        for change in request.toManyChanges where snapshots[change.source] != nil {
            toMany[ToManyKey(source: change.source, relationship: change.relationship)] = change.destinations
        }
        if var newMetadata = request.metadata {
            newMetadata.storeType = storeType
            newMetadata.storeUUID = metadata.storeUUID
            metadata = newMetadata
        }
    }

    private func conflict(_ id: ObjectID, _ model: ManagedObjectModel) -> ObjectGraphError {
        let what = "\(model[id.entity].name)/\(id.key)"
        return snapshots[id] == nil
            ? ObjectGraphError(.conflict, "\(what) was deleted by another save since it was read")
            : ObjectGraphError(.conflict, "\(what) was changed by another save since it was read")
    }
}
