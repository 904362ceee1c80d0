extension ObjectContext {
    /// The number of objects ``objects(matching:of:includingSubentities:source:fetchedProperty:variables:sortedBy:strategy:)``
    /// would give, without reading them where the store can count.
    ///
    /// An SQLite store counts in one SQL query (`COUNT(*)`, no row read); other stores, a
    /// predicate the store declines, and a context with unsaved changes count the objects the
    /// evaluator selects. `strategy` as for fetching.
    ///
    /// - Throws: what fetching throws.
    public func count(
        matching predicate: Predicate, of entity: EntityID, includingSubentities: Bool = true,
        strategy: FetchStrategy = .automatic
    ) throws(ObjectGraphError) -> Int {
        guard entity.rawValue >= 1, entity.rawValue <= model.entities.count else {
            throw ObjectGraphError(.notFound, "\(entity) is not an entity of the model")
        }
        if strategy == .store || (strategy == .automatic && !hasChanges) {
            if let counted = try coordinator.store.count(
                matching: predicate, of: entity, includingSubentities: includingSubentities)
            {
                return counted
            }
            if strategy == .store {
                throw ObjectGraphError(
                    .unsupported,
                    "the \(coordinator.store.storeType) store cannot count \(predicate) for \(model[entity].name); "
                        + "count with the automatic or in-memory strategy")
            }
        }
        return try objects(
            matching: predicate, of: entity, includingSubentities: includingSubentities, strategy: .inMemory
        ).count
    }
}
