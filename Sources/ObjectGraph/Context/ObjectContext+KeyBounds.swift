/// Lookups by key answered from memory where the key was never handed out (``KeyBounds``).
extension ObjectContext {
    /// Whether one of `candidates` is pending or cached here: its lookup needs no bound.
    func isKnown(_ candidates: [ObjectID]) -> Bool {
        state.withLock { state in candidates.contains { state.pending[$0] != nil || cache.contains($0) } }
    }

    /// Asks the store once for the highest key of the tree of `root`. A store that cannot say
    /// leaves it unknown: lookups then ask the store, as they would have, and report its error.
    func learnHighestKey(in root: EntityID) {
        let bounds = coordinator.keyBounds
        let generation = bounds.generation
        guard let highest = try? store.highestKey(in: root) else { return }
        bounds.learn(highest, in: root, ifGeneration: generation)
    }
}
