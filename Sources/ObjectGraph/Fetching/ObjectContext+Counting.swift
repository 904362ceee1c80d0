extension ObjectContext {
    /// The number of objects ``objects(matching:of:includingSubentities:source:fetchedProperty:variables:sortedBy:strategy:)``
    /// would give, without reading them where the store can count.
    ///
    /// SQLite and PostgreSQL stores count in one SQL query (`COUNT(*)`, no row read); where the
    /// store's SQL cannot decide the predicate exactly, the objects fetching gives are counted (the
    /// store narrows them, the evaluator decides those); other stores, a predicate the store
    /// declines, and a context with unsaved changes count the objects the evaluator selects.
    /// `strategy` as for fetching.
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
        }
        // Fetching decides what the store could not count: with the store's candidates where it
        // narrows them, in memory otherwise (and refused under `.store` when the store declines).
        return try objects(
            matching: predicate, of: entity, includingSubentities: includingSubentities, strategy: strategy
        ).count
    }
}
