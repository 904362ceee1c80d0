import Foundation

/// Every object of one entity read a page at a time, as ``ObjectRecordPages`` reads them, except
/// that a row the store cannot read (a value its attribute's type cannot hold: 70000 in an
/// Integer 16 column) costs that row, not the walk: the page that held it is read again in
/// smaller batches, then one object at a time, and each object that still fails is handed to
/// `unreadable` with its error.
///
/// Threading: used by one thread; the store it reads is thread-safe.
struct SnapshotWalk {
    let coordinator: PersistentStoreCoordinator
    let entity: EntityID
    /// Objects read per request when a page failed.
    static let retryBatch = 100

    func forEach(
        unreadable: (ObjectID, ObjectGraphError) -> Void, _ body: ([Snapshot]) throws(ObjectGraphError) -> Void
    ) throws(ObjectGraphError) {
        var pages = ObjectRecordPages(coordinator: coordinator, entity: entity, includingSubentities: false)
        var last: PrimaryKey?
        while true {
            let page: [Snapshot]
            do {
                guard let next = try pages.nextSnapshots() else { return }
                page = next
            } catch  where error.code == .corruptStore || error.code == .validation {
                try readRest(after: last, unreadable: unreadable, body)
                return
            }
            try body(page)
            last = page.last?.objectID.key ?? last
        }
    }

    /// The objects after key `last`, in batches, then one by one where a batch fails.
    private func readRest(
        after last: PrimaryKey?, unreadable: (ObjectID, ObjectGraphError) -> Void,
        _ body: ([Snapshot]) throws(ObjectGraphError) -> Void
    ) throws(ObjectGraphError) {
        let store = coordinator.store
        let ids = try store.objectIDs(of: entity).filter { last == nil || $0.key > last! }.sorted()
        var start = 0
        while start < ids.count {
            let batch = Array(ids[start..<min(start + Self.retryBatch, ids.count)])
            start += batch.count
            // Only the read is retried: what `body` throws ends the walk.
            var read: [Snapshot]?
            do {
                read = try store.snapshots(for: batch)
            } catch  where error.code == .corruptStore || error.code == .validation {}
            if let read {
                try body(read)
                continue
            }
            for id in batch {
                let read: [Snapshot]
                do {
                    read = try store.snapshots(for: [id])
                } catch  where error.code == .corruptStore || error.code == .validation {
                    unreadable(id, error)
                    continue
                }
                try body(read)
            }
        }
    }
}
