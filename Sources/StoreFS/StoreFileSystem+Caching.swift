import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// Keeping the kernel's caches true: what storefs's own changes touch is invalidated at once,
/// and changes other processes commit to the store are detected by polling and invalidated.
extension StoreFileSystem {
    func startBackgroundWork() {
        rememberStoreToken()
        background.start(interval: 0.05) { [self] in
            if !configuration.readOnly {
                settleFolders(copyIn.settle())
                if schedule.isDue(after: configuration.commitDelay) { commitPendingChanges(reason: "idle") }
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
    /// process's.
    func rememberStoreToken() {
        let token = try? coordinator.store.externalChangeToken()
        storeToken.withLock { $0 = token ?? nil }
    }

    /// Compares the store's change token with the last one seen; when another process committed,
    /// re-reads the cached rows and invalidates what changed.
    ///
    /// Runs under the commit lock: rows read here and put back in the cache would otherwise be
    /// older than a commit of this mount made meanwhile, and a reader would see a value go back.
    func checkForExternalChanges() {
        commitLock.withLock { _ in refreshAfterExternalChanges() }
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

    /// Invalidates the root, every entity directory and everything about `objects`.
    func invalidateEverythingCached(including objects: [ObjectID]) {
        invalidate(.root)
        for entity in model.entities { invalidate(.entity(entity.id)) }
        invalidateRelated(objects)
    }

    /// Drops the kernel's cached attributes and data of `node`.
    func invalidate(_ node: Node) {
        invalidator.withLock { $0 }?.invalidateInode(node.inode)
    }

    func invalidateEntry(parent: Node, name: String) {
        invalidator.withLock { $0 }?.invalidateEntry(parent: parent.inode, name: name)
    }

    /// Invalidates everything the folders of `objects` show: the folder, its files and links, its
    /// to-many folders and their names.
    func invalidateRelated(_ objects: [ObjectID]) {
        guard let invalidator = invalidator.withLock({ $0 }) else { return }
        for object in Set(objects) where object.entity.rawValue >= 1 && object.entity.rawValue <= model.entities.count {
            let entity = model[object.entity]
            invalidator.invalidateInode(Node.object(object).inode)
            for (index, attribute) in entity.allAttributes.enumerated() {
                invalidator.invalidateInode(Node.attribute(object, index).inode)
                invalidator.invalidateEntry(parent: Node.object(object).inode, name: attribute.name)
            }
            for (index, relationship) in entity.allRelationships.enumerated() {
                let node: Node = relationship.isToMany ? .toMany(object, index) : .toOne(object, index)
                invalidator.invalidateInode(node.inode)
                invalidator.invalidateEntry(parent: Node.object(object).inode, name: relationship.name)
            }
        }
    }

    /// Invalidates what a change of relationship `name` of `object` touches: that relationship's
    /// link or folder, and the inverse relationship of each object in `others` (the old and new
    /// destinations). Only those nodes: a copy into a mount makes tens of thousands of links.
    func invalidateRelationship(_ name: String, of object: ObjectID, touching others: [ObjectID]) {
        guard let invalidator = invalidator.withLock({ $0 }) else { return }
        func invalidate(_ relationship: String, of id: ObjectID) {
            guard id.entity.rawValue >= 1 && id.entity.rawValue <= model.entities.count,
                let index = model[id.entity].allRelationships.firstIndex(where: { $0.name == relationship })
            else { return }
            let node: Node = model[id.entity].allRelationships[index].isToMany ? .toMany(id, index) : .toOne(id, index)
            invalidator.invalidateInode(node.inode)
            invalidator.invalidateEntry(parent: Node.object(id).inode, name: relationship)
            invalidator.invalidateInode(Node.object(id).inode)
        }
        invalidate(name, of: object)
        guard let relationship = model[object.entity].relationship(named: name), let inverse = relationship.inverseName else {
            return
        }
        for other in Set(others) { invalidate(inverse, of: other) }
    }

    /// Invalidates the listings of `objects`' folders and to-many folders (what a fresh folder hid).
    func invalidateListings(of objects: [ObjectID]) {
        let copiedLinks = scratch.fetchedLinks(of: objects)
        for link in copiedLinks {
            // Until the kernel forgets the name (below, asynchronously), it may still ask for the
            // copied link's inode: it answers as the member it names, as a consumed scratch entry
            // does. (Removed outright, `diff -r` right after `cp -a` could read ENOENT for a name
            // it had just listed.)
            if let target = link.file.linkTarget, let member = (try? resolvePath(target, from: link.file.parent)) ?? nil {
                scratch.consume(link.serial, becoming: .member(member))
            } else {
                scratch.remove(link.serial)
            }
        }
        guard let invalidator = invalidator.withLock({ $0 }) else { return }
        // The kernel would otherwise keep resolving a copied link's name to the link just removed.
        for link in copiedLinks { invalidator.invalidateEntry(parent: link.file.parent.inode, name: link.file.name) }
        for object in objects {
            invalidator.invalidateInode(Node.object(object).inode)
            for (index, relationship) in model[object.entity].allRelationships.enumerated() where relationship.isToMany {
                invalidator.invalidateInode(Node.toMany(object, index).inode)
            }
            for index in model[object.entity].allFetchedProperties.indices {
                invalidator.invalidateInode(Node.fetched(object, index).inode)
            }
        }
    }

    /// Invalidates the listings that show `object`: its entity's directory and its ancestors'.
    func invalidateAncestorDirectories(of object: ObjectID) {
        var entity: EntityID? = object.entity
        while let e = entity {
            invalidate(.entity(e))
            invalidateEntry(parent: .entity(e), name: object.key.description)
            entity = model[e].parentID
        }
    }
}
