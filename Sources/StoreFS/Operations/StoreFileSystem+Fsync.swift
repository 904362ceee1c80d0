import Foundation
import FuseKit
import ObjectGraph

/// fsync: the writer asks whether what it wrote is saved. storefs commits everything pending and
/// answers for the file: 0 when its value is in the store, the error when it is not. An error
/// means the value was not saved and never will be: the value the file was given is taken back
/// (the file shows the stored value again), while the object's other changes stay pending.
extension StoreFileSystem {
    public func fsync(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError) {
        let node = try node(inode)
        try commitBuffer(handle)
        guard case .attribute(let object, let index) = node else {
            commitPendingChanges(reason: "fsync")
            return
        }
        // A writer that fsyncs a file of a folder a copy made is done with it: it settles now.
        settleFolders(copyIn.endFreshness(of: object))
        commitPendingChanges(reason: "fsync")
        let attribute = model[object.entity].allAttributes[index].name
        // Checked and taken back under the commit lock: another thread's commit in between would
        // otherwise save the change this fsync then reports as not saved (seen with a server
        // that came back while writers were failing).
        let failure: ObjectGraphError? = commitLock.withLock { _ in
            guard let error = unsavedError(of: object, attribute: attribute) else { return nil }
            let applied = openFiles.file(handle)?.applied
            let pending = try? context.value(of: attribute, for: object)
            context.revert(attribute, of: object, ifStill: applied?.attribute == attribute ? applied?.value : pending)
            openFiles.update(handle) { $0.applied = nil }
            return error
        }
        guard let error = failure else { return }
        renderedValues.valuesChanged()
        invalidateRelated([object])
        throw fileSystemError(error, "fsync \(describe(object))/\(attribute): not saved, and taken back", logger: logger)
    }

    public func fsyncDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError) {
        // fsync of a folder mkdir made says its writer is done with it: it shows all it holds.
        let node = try node(inode)
        let object = node.isFolderOfObject ? node.object : nil
        settleFolders(copyIn.endFreshness(of: object))
        commitPendingChanges(reason: "fsync")
        if let object, let error = unsavedError(of: object, attribute: nil) {
            // Not saved and never will be: the object's changes go, with everything changed
            // together with them.
            let discarded = context.discardChanges(of: [object])
            failures.clear(discarded)
            renderedValues.valuesChanged()
            invalidateRelated(discarded)
            for id in discarded { invalidateAncestorDirectories(of: id) }
            throw fileSystemError(error, "fsync \(describe(object)): not saved, and its changes taken back", logger: logger)
        }
        if object == nil, let reason = failures.storeReason {
            logger.error("fsync: \(reason)")
            throw .io
        }
    }

    /// Why `object`'s change (of `attribute`, or any) is not saved after a commit; nil when it is.
    func unsavedError(of object: ObjectID, attribute: String?) -> ObjectGraphError? {
        if let pending = context.pendingChange(of: object) {
            let concerned = attribute.map { pending.kind != .updated || pending.attributes.keys.contains($0) } ?? true
            guard concerned else { return nil }
            return pending.failure ?? ObjectGraphError(.io, failures.storeReason ?? "the change could not be saved")
        }
        return failures.takeDropped(of: object)?.failure
    }
}
