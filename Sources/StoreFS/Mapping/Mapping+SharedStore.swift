import Foundation
import FuseKit
import ObjectGraph

/// Stores that several mounts write at once (PostgreSQL): what the others commit is announced,
/// and this mount forgets exactly those objects, in the row cache and in the kernel, within a
/// tick of the background work; a close hands its file's change to the store before it returns;
/// a change through a descriptor is a change of what that descriptor showed at open.
///
/// Kept apart from Mapping+ExternalChanges.swift (which polls a change token and reads
/// everything again; still what happens after a store reconnects and may have missed
/// announcements) so the two ways are easy to tell apart.
extension Mapping {
    /// Applies what other writers committed since the last call: their objects' rows (and the
    /// to-many lists that name them through an inverse) are read again when next asked, this
    /// mount's pending changes of them are rebased on the new rows, and the kernel forgets their
    /// folders, files, links and, for inserted and deleted objects, their entities' listings.
    ///
    /// Forgetting takes no lock beyond the cache's own (its generation moves, so a read that
    /// began before cannot put an old row back): with writers committing on every fsync, waiting
    /// for the commit lock here delayed what readers see by a second. Only rebasing pending
    /// changes takes the commit lock, with rows read under it, so it never rebases on a row older
    /// than this mount's own commit.
    func applyAnnouncedChanges() {
        guard let store = coordinator.store as? any ChangeAnnouncingStore else { return }
        apply(store.takeAnnouncedChanges())
    }

    /// ``applyAnnouncedChanges()`` for changes already taken (those a lock read: SharedFileLocks).
    func apply(_ changes: AnnouncedChanges) {
        guard !changes.isEmpty else { return }
        let objects = Array(changes.changed)
        renderedValues.valuesChanged()
        var before: [Snapshot] = []
        for object in objects { if let cached = coordinator.rowCache.snapshot(for: object) { before.append(cached) } }
        coordinator.rowCache.remove(objects)
        // Objects another mount inserted may lie above the keys this one knew of.
        if !changes.insertedOrDeleted.isEmpty { coordinator.keyBounds.forgetAll() }
        invalidateRelated(objects)
        for object in changes.insertedOrDeleted { invalidateAncestorDirectories(of: object) }
        let after = (try? coordinator.store.snapshots(for: objects)) ?? []
        // An object's to-one moved: the to-many list of its old and new destination changed
        // too, whether or not the writer's save named them.
        var related: Set<ObjectID> = []
        for snapshot in before + after {
            let entity = model[snapshot.objectID.entity]
            for (name, destination) in snapshot.toOne {
                guard let relationship = entity.relationship(named: name),
                    let inverse = model.inverse(of: relationship),
                    inverse.isToMany
                else { continue }
                related.insert(destination)
            }
        }
        related.subtract(changes.changed)
        if !related.isEmpty { coordinator.rowCache.remove(Array(related)) }
        dropFetchedResults()
        directories.dropUnopened()
        renderedValues.valuesChanged()
        invalidateRelated(Array(related))
        let pending = Set(
            context.pendingChanges().filter { $0.kind == .updated && changes.changed.contains($0.objectID) }.map(
                \.objectID))
        if !pending.isEmpty {
            session.commitLock.withLock { _ in
                if let fresh = try? coordinator.store.snapshots(for: Array(pending)) {
                    context.rebasePendingChanges(on: fresh)
                }
            }
        }
        logger.debug("other writers changed \(changes.changed.count) objects; their cached rows and pages are dropped")
    }

    /// close(2) of a file written through a mount of a store other machines mount too: the
    /// change is committed before close returns, and a conflict (EBUSY) or a server that cannot
    /// be reached (EIO) is reported there, as fsync reports it (the value is then taken back).
    /// Files of folders a copy is still filling commit when the folder settles, as before.
    func commitOnClose(_ node: Node, handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard configuration.commitsOnClose, node.kind == .attribute, !session.copyIn.isFresh(node.object) else {
            return
        }
        try node.kind.type.fsync(node, handle: handle, in: self)
    }

    /// A file opened for writing on a store other machines write: what it shows now is what its
    /// writer reads through the handle until it writes (rendered at once), and what a change
    /// through it is a change of (``ObjectContext/setValue(_:of:for:readAs:)``). A process that
    /// reads, then writes, through one descriptor cannot overwrite another machine's commit
    /// unseen: EBUSY says it happened.
    func rememberWhatItShows(_ handle: FuseKit.FileHandle, _ node: Node) {
        guard configuration.commitsOnClose, node.kind == .attribute,
            let (attribute, value) = try? attributeValue(node.object, node.property)
        else { return }
        let content = ValueText.content(of: value, type: attribute.type)
        session.openFiles.update(handle) { file in
            file.readAs = .some(value)
            if file.buffer == nil { file.rendered = content }
        }
    }
}
