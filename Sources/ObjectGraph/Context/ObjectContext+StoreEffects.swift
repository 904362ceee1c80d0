extension ObjectContext {
    /// Takes in what the store changed on its own during a save (``SaveEffects``): those objects
    /// are read afresh when next needed; pending changes of them are to be rebased on their new
    /// state (the objects returned, read by the caller without the locks), so a later save neither
    /// writes back a value a trigger replaced nor reports a conflict with it. Called holding both
    /// locks, after the save's own changes were taken in. Returns the effects with, when the store
    /// could not name the objects, every object that was cached (what the filesystem must
    /// refresh).
    func absorb(_ effects: SaveEffects, _ state: inout State) -> (SaveEffects, [ObjectID]) {
        guard !effects.isEmpty else { return (effects, []) }
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
        return (effects, pending)
    }
}
