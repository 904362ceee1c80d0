/// Objects other writers committed changes to, as a store that hears their announcements tells
/// them: what caches must read again.
///
/// Threading: a value; share it freely.
public struct AnnouncedChanges: Sendable, Hashable {
    /// Every object inserted, updated or deleted.
    public var changed: Set<ObjectID> = []
    /// Those inserted or deleted: the listings of their entities changed too.
    public var insertedOrDeleted: Set<ObjectID> = []

    public init(changed: Set<ObjectID> = [], insertedOrDeleted: Set<ObjectID> = []) {
        self.changed = changed
        self.insertedOrDeleted = insertedOrDeleted
    }

    public var isEmpty: Bool { changed.isEmpty }

    public mutating func formUnion(_ other: AnnouncedChanges) {
        changed.formUnion(other.changed)
        insertedOrDeleted.formUnion(other.insertedOrDeleted)
    }
}

/// A store that several processes write at once and that tells each which objects the others
/// changed (the PostgreSQL store, from its LISTEN/NOTIFY announcements), so a mount invalidates
/// those objects only instead of polling ``PersistentStore/externalChangeToken()`` and reading
/// everything again. The token still moves when announcements may have been missed (after a
/// reconnection), and then everything is read again.
public protocol ChangeAnnouncingStore: PersistentStore {
    /// What other writers committed since the last call; empty when nothing. Cheap: it answers
    /// from memory (the first call may start the store's listener).
    func takeAnnouncedChanges() -> AnnouncedChanges
}
