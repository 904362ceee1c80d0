import Foundation
import FuseKit
import Logging
import ObjectGraph

/// Commits: changes collect in the context and are saved after ``StoreFSConfiguration/commitDelay``
/// of quiet, on fsync and at unmount. A commit saves every change group that can be saved and
/// leaves the others pending (a value that fails validation, a key another process took), with
/// the reason in the log and in `user.storefs.error` on the object's folder; it tries them again
/// once they change. Objects in folders a copy is still filling wait until they settle. At
/// unmount, what still cannot be saved goes to a recovery file beside the store.
extension Mapping {
    /// Notes a change: the commit timer restarts, `object`'s folder shows a new time, and texts
    /// kept for readers are not used again. `kernelUpdates`: a folder whose attributes the kernel
    /// renews itself with this request (``noteFolderChange(_:kernelUpdates:)``).
    func changed(_ object: ObjectID? = nil, kernelUpdates: Node? = nil) {
        if let object {
            noteFolderChange(object, kernelUpdates: kernelUpdates)
        } else {
            session.schedule.noteChange(nil)
        }
        renderedValues.valuesChanged()
        // Any change may change what a predicate selects. (Results were kept until the commit: a
        // fetched folder evaluated while a copy was still setting its object's relationships kept
        // the old answer until then.)
        dropFetchedResults()
    }

    /// Notes a change in `object`'s folder: the commit timer restarts and the folder (with its
    /// composites' folders, which show the same time) shows the time of the change. The kernel is
    /// told at once: it keeps a folder's attributes for an hour, and would otherwise show the old
    /// time to one stat and the new one to a later, without a change between.
    ///
    /// Except `kernelUpdates`, a folder the kernel renews by itself for the request that made the
    /// change (issue 40: `cp -a` made two invalidations per new folder and one per file it
    /// created): the folder a MKDIR made (its reply, made after this, carries its attributes) and
    /// the folder a CREATE made a file in (the kernel drops that folder's attributes and cached
    /// listing when the reply comes: fuse_dir_changed in the kernel's fs/fuse/dir.c).
    func noteFolderChange(_ object: ObjectID, kernelUpdates: Node? = nil) {
        session.schedule.noteChange(object)
        if kernelUpdates != .object(object) { invalidate(.object(object)) }
        guard isValid(object.entity) else { return }
        for index in model[object.entity].compositePaths.indices where kernelUpdates != .compositeFolder(object, index)
        {
            invalidate(.compositeFolder(object, index))
        }
    }

    /// Commits what can be committed as one transaction and records what could not.
    @discardableResult
    /// `removalsIn`: an object whose hidden removals are applied now, settled or not (its folder's
    /// writer fsynced).
    func commit(reason: String, removalsIn object: ObjectID? = nil) -> SaveOutcome {
        session.commitLock.withLock { (_) -> SaveOutcome in
            for alias in session.scratch.takeAliases() { invalidateEntry(parent: alias.folder, name: alias.name) }
            if let object { applyRemovals([object: session.removals.take(of: object)]) }
            applyRemovals(session.removals.takeSettled(all: reason == "unmount"))
            guard context.hasChanges else {
                session.schedule.didCommit(retry: false)
                return SaveOutcome()
            }
            let started = CommitStatistics.now()
            let outcome = context.save(holding: session.copyIn.freshObjects)
            commitStatistics.record(since: started, outcome: outcome)
            for object in session.failures.record(outcome, describe: \.message) {
                if let reason = session.failures.reason(for: object) {
                    logger.error(
                        "commit (\(reason == "conflict" ? reason : "not saved")) \(describe(object)): \(reason)")
                }
            }
            for (object, violations) in outcome.untouchedViolations.sorted(by: { $0.key < $1.key }) {
                // Saved: the change is valid; what it did not touch was invalid before it (an app
                // that broke its own model) and is left as it was.
                logger.warning(
                    "commit (\(reason)) \(describe(object)): saved; values the change did not touch break the model and are left as they were: \(violations.joined(separator: "; "))"
                )
            }
            for change in outcome.conflicts {
                logger.error(
                    "commit (\(reason)): \(describe(change.objectID)) was changed by another process; its change is kept and this mount's change of it is not saved"
                )
            }
            if !outcome.conflicts.isEmpty {
                renderedValues.valuesChanged()
                let objects = outcome.conflicts.map(\.objectID)
                invalidateRelated(objects)
                for object in objects { invalidateAncestorDirectories(of: object) }
            }
            refreshStoreEffects(outcome.storeEffects)
            if let error = outcome.storeError {
                logger.error("commit (\(reason)): nothing was saved: \(error.message); the changes stay pending")
            }
            session.schedule.didCommit(retry: outcome.storeError != nil)
            if !outcome.saved.isEmpty || outcome.savedMetadata {
                dropFetchedResults()
                rememberStoreToken(asOf: outcome.storeEffects.changeTokenAtSave)
                logger.debug("committed \(outcome.saved.count) objects (\(reason))")
            }
            return outcome
        }
    }

    /// fsync of a folder: commits what is pending. Of a folder mkdir made, it says its writer is
    /// done with it: it shows all it holds; and what was removed in it is applied now.
    func fsyncFolder(_ node: Node) throws(FileSystemError) {
        let object = node.isFolderOfObject ? node.object : nil
        settleFolders(session.copyIn.endFreshness(of: object))
        commit(reason: "fsync", removalsIn: object)
        if let object, let error = unsavedError(of: object, attribute: nil) {
            // Not saved and never will be: the object's changes go, with everything changed
            // together with them.
            let discarded = context.discardChanges(of: [object])
            session.failures.clear(discarded)
            renderedValues.valuesChanged()
            invalidateRelated(discarded)
            for id in discarded { invalidateAncestorDirectories(of: id) }
            throw fileSystemError(
                error, "fsync \(describe(object)): not saved, and its changes taken back", logger: logger)
        }
        if object == nil, let reason = session.failures.storeReason {
            logger.error("fsync: \(reason)")
            throw .io
        }
    }

    /// Objects the store changed on its own while saving (Core Data's triggers, relationship
    /// clean-up): the kernel forgets what it cached of them, so their files show the new values
    /// and sizes.
    func refreshStoreEffects(_ effects: SaveEffects) {
        guard !effects.isEmpty else { return }
        renderedValues.valuesChanged()
        if effects.refreshesEverything {
            // More rows than the store counts: every cached object (the engine names them).
            directories.dropUnopened()
            invalidateEverythingCached(including: Array(effects.refreshed))
        } else {
            invalidateRelated(Array(effects.refreshed))
        }
        logger.debug(
            "the store changed \(effects.refreshesEverything ? "many" : String(effects.refreshed.count)) objects on its own while saving; refreshed"
        )
    }

    /// Folders a copy filled that are done (quiet, fsynced, unmounting): they show everything
    /// they hold, and their objects take part in the next commit.
    func settleFolders(_ objects: [ObjectID]) {
        guard !objects.isEmpty else { return }
        invalidateListings(of: objects)
        changed(nil)
    }

    /// The last commit, at unmount: everything settles, waiting links that never found their
    /// object are given up, and what still cannot be saved is written to a recovery file.
    func saveForUnmount() -> UnsavedChanges? {
        settleFolders(session.copyIn.endFreshness(of: nil))
        let orphans = session.copyIn.takeAllWaitingLinks().compactMap { session.scratch.remove($0) }
        commit(reason: "unmount")
        let pending = context.pendingChanges() + session.failures.droppedChanges
        let links = orphans.compactMap { link -> RecoveryFile.WaitingLink? in
            guard let target = link.linkTarget else { return nil }
            return RecoveryFile.WaitingLink(
                folder: pathComponents(of: link.parent).joined(separator: "/"), name: link.name, target: target)
        }
        let metadata = context.pendingMetadata
        guard !pending.isEmpty || !links.isEmpty || metadata != nil else { return nil }
        let file = RecoveryFile(
            store: coordinator.store.url?.path ?? "memory", storeUUID: (try? storeUUID()) ?? "",
            changes: pending.map { change in
                RecoveryFile.Change(change, model: model) { value in self.fileBackedStore?.currentFile(of: value) }
            }, waitingLinks: links,
            metadata: metadata.map { RecoveryFile.metadataChanges($0, from: try? coordinator.store.metadata()) } ?? [:])
        let count = pending.count + links.count + (metadata == nil ? 0 : 1)
        do {
            let (url, written) = try file.write(besideStore: coordinator.store.url)
            // Values kept in files that are linked beside it: their temporary files can go.
            let named = Set(written.valueFiles)
            for change in pending {
                for value in change.attributes.values.compactMap({ FileBackedValue($0) }) {
                    if let store = fileBackedStore, let current = store.currentFile(of: value), !named.contains(current)
                    {
                        store.discardValueFile(value)
                    }
                }
            }
            let store = coordinator.store.url?.path ?? "STORE"
            logger.critical(
                "unmount: \(count) changes could not be saved (\(file.summary)); they are kept in \(url.path): fix what it names and apply it with `storefs recover \(store) \(url.path)`"
            )
            return UnsavedChanges(count: count, recoveryFiles: [url], summary: file.summary)
        } catch {
            logger.critical(
                "unmount: \(count) changes could not be saved, and writing the recovery file failed: \(error)")
            return UnsavedChanges(count: count, recoveryFiles: [], summary: file.summary)
        }
    }
}

/// What an unmount could not save.
public struct UnsavedChanges: Sendable {
    /// How many changes (objects, waiting links, metadata) were not saved.
    public var count: Int
    /// Where they were kept (one file per store); empty when even that failed.
    public var recoveryFiles: [URL]
    /// The reasons, briefly.
    public var summary: String

    /// Several stores' together (a folder mount).
    public static func combined(_ parts: [UnsavedChanges]) -> UnsavedChanges? {
        guard !parts.isEmpty else { return nil }
        return UnsavedChanges(
            count: parts.reduce(0) { $0 + $1.count }, recoveryFiles: parts.flatMap(\.recoveryFiles),
            summary: parts.map(\.summary).joined(separator: "; "))
    }
}

/// A filesystem that saves a store, and can say after unmounting what it could not save.
public protocol SavingFileSystem: FileSystem {
    /// What the unmount could not save; nil when everything was saved (or before unmounting).
    var unsavedChanges: UnsavedChanges? { get }
}
