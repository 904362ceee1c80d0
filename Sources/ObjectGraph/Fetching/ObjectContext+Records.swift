extension ObjectContext {
    /// The records of `ids` as this context sees them (unsaved changes included), in the order
    /// given; objects that do not exist are left out.
    ///
    /// Rows and to-many relationships fault in batches (one store request per batch of rows and
    /// per relationship), so a result folder's `.json` of many objects costs a few requests per
    /// ``EngineConfiguration/batchSize`` objects; call it a batch at a time to bound memory.
    public func records(for ids: [ObjectID]) throws(ObjectGraphError) -> [ObjectRecord] {
        try prefetch(ids)
        var byEntity: [EntityID: [ObjectID]] = [:]
        for id in ids { byEntity[id.entity, default: []].append(id) }
        for (entity, members) in byEntity {
            guard entity.rawValue >= 1, entity.rawValue <= model.entities.count else { continue }
            for relationship in model[entity].persistentRelationships where relationship.isToMany {
                try prefetch(relationship.name, for: members)
            }
        }
        var records: [ObjectRecord] = []
        records.reserveCapacity(ids.count)
        for id in ids {
            guard id.entity.rawValue >= 1, id.entity.rawValue <= model.entities.count,
                let snapshot = try snapshot(of: id)
            else { continue }
            var toMany: [String: [ObjectID]] = [:]
            for relationship in model[id.entity].persistentRelationships where relationship.isToMany {
                toMany[relationship.name] = try destinations(of: relationship.name, for: id)
            }
            records.append(ObjectRecord(snapshot: snapshot, toMany: toMany))
        }
        return records
    }
}
