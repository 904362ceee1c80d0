import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// The mount's background work (every 50 ms): idle commits, folders a copy filled settling,
/// memory given back, and changes other processes commit to the store, detected by polling the
/// store's change token; the rows the mount cached are then read again and what changed is
/// invalidated.
extension Mapping {
    func startBackgroundWork() {
        rememberStoreToken()
        background.start(interval: 0.05) { [self] in
            if !configuration.readOnly {
                settleFolders(session.copyIn.settle())
                // Removals no rmdir came for are applied by the next commit.
                if session.removals.hasSettled() { session.schedule.noteChange(nil) }
                if session.schedule.isDue(after: configuration.commitDelay) { commit(reason: "idle") }
            }
            freedMemory.trimIfRowsWereEvicted(coordinator.rowCache.statistics.evictions)
            applyAnnouncedChanges()
            if lastPoll.withLock({ Date().timeIntervalSince($0) >= configuration.changePollInterval }) {
                lastPoll.withLock { $0 = Date() }
                checkForExternalChanges()
            }
        }
    }

    func stopBackgroundWork() {
        background.stop()
    }

    /// Records the store's change token after our own commit, so it is not taken for another
    /// process's. `asOf`: the token the store read inside the save's transaction
    /// (``SaveEffects/changeTokenAtSave``): a commit of another process after ours moves the store
    /// away from it, and the next poll sees that commit even where it changed a row this mount
    /// keeps as it saved it. Read afterwards, the token would take such a commit for ours.
    func rememberStoreToken(asOf tokenAtSave: Int64? = nil) {
        let token = tokenAtSave ?? (try? coordinator.store.externalChangeToken()) ?? nil
        storeToken.withLock { $0 = token }
    }

    /// Compares the store's change token with the last one seen; when another process committed,
    /// re-reads the cached rows and invalidates what changed.
    ///
    /// Runs under the commit lock: rows read here and put back in the cache would otherwise be
    /// older than a commit of this mount made meanwhile, and a reader would see a value go back.
    func checkForExternalChanges() {
        session.commitLock.withLock { _ in refreshAfterExternalChanges() }
    }

    private func refreshAfterExternalChanges() {
        guard let token = try? coordinator.store.externalChangeToken() else { return }
        let changed = storeToken.withLock { old in
            defer { old = token }
            return old != nil && old != token
        }
        guard changed else { return }
        logger.info("the store changed outside this mount; refreshing")
        renderedValues.valuesChanged()
        let cached = coordinator.rowCache.cachedVersions()
        coordinator.dropCaches()
        // What this mount changed and did not commit yet keeps its changes on top of the new rows.
        let pending = context.pendingChanges().filter { $0.kind == .updated }.map(\.objectID)
        if !pending.isEmpty, let fresh = try? coordinator.store.snapshots(for: pending) {
            context.rebasePendingChanges(on: fresh)
        }
        var stale: [ObjectID] = []
        let ids = Array(cached.keys)
        var start = 0
        while start < ids.count {
            let batch = Array(ids[start..<min(start + coordinator.configuration.batchSize, ids.count)])
            let fresh = (try? coordinator.store.snapshots(for: batch)) ?? []
            var seen: Set<ObjectID> = []
            for s in fresh {
                seen.insert(s.objectID)
                if cached[s.objectID] != s.version { stale.append(s.objectID) }
            }
            stale += batch.filter { !seen.contains($0) }
            coordinator.rowCache.store(fresh)
            start += batch.count
        }
        dropFetchedResults()
        directories.dropUnopened()
        // Again, now that the cache holds the new rows and before the invalidations are queued: a
        // preload or kept text made from a row read before the drop would otherwise look current
        // to a reader that saw only the first move, and could land after the invalidations.
        renderedValues.valuesChanged()
        // Preloaded folders whose rows were evicted would keep their old pages: drop them too.
        let preloaded = preloadedObjects.removeAll()
        invalidateEverythingCached(including: stale + preloaded)
    }

}
