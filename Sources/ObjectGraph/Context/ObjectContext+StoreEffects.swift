extension ObjectContext {
    /// Takes in what the store changed on its own during a save (``SaveEffects``): those objects
    /// are read afresh when next needed, and pending changes of them are rebased on their new
    /// state, so a later save neither writes back a value a trigger replaced nor reports a
    /// conflict with it. Called with the lock held, after the save's own changes were taken in.
    /// Returns the effects with, when the store could not name the objects, every object that was
    /// cached (what the filesystem must refresh).
    @discardableResult
    func absorb(_ effects: SaveEffects, _ state: inout State) -> SaveEffects {
        guard !effects.isEmpty else { return effects }
        var effects = effects
        let changed: [ObjectID]
        if effects.refreshesEverything {
            effects.refreshed.formUnion(cache.cachedVersions().keys)
            cache.removeAll()
            changed = Array(state.pending.keys)
        } else {
            let ids = effects.refreshed.filter { state.deleted[$0] == nil }
            cache.remove(ids)
            changed = ids.filter { state.pending[$0] != nil }
        }
        let pending = changed.filter { state.pending[$0]?.isInserted == false }.sorted()
        // A read that fails leaves them as they are: the next save detects a conflict where one
        // of their changed properties moved, as it does for another process's change.
        if !pending.isEmpty, let fresh = try? store.snapshots(for: pending) { rebase(on: fresh, &state) }
        return effects
    }
}
