import Foundation

/// Which objects a store holds only as parts of another object, and which of those lost it: the
/// orphans of Maccy's stores, `HistoryItemContent` rows whose `item` is nil because the cascade
/// that should have deleted them with their item never ran (docs/HEALTH.md, "Unowned objects").
///
/// An entity is a *part* when it has an owner (a to-one whose inverse deletes it: Cascade) and
/// every to-one relationship it has with an inverse is such an owner: a Photos `Asset`, which may
/// belong to a moment share but also has a dozen other relationships, is not a part, and an asset
/// outside any share is no orphan. A part is *unowned* when none of its owners names it, from
/// either side: a one-to-one keeps its key on both sides, and an app may have left only the
/// owner's (Notes does), so the owners' rows are read too.
///
/// Threading: a value built by one thread; share it freely after.
struct Ownership {
    /// Per part entity, its owner relationships.
    private var owners: [EntityID: [RelationshipDescription]] = [:]
    /// Per part entity and one-to-one owner relationship: keys of the parts the owners' rows name.
    private var claimed: [EntityID: [String: Set<Int64>]] = [:]

    init(coordinator: PersistentStoreCoordinator) throws(ObjectGraphError) {
        let model = coordinator.model
        for entity in model.entities {
            let toOne = entity.persistentRelationships.filter { !$0.isToMany && model.inverse(of: $0) != nil }
            let owners = toOne.filter { model.inverse(of: $0)?.deleteRule == .cascade }
            guard !owners.isEmpty, owners.count == toOne.count else { continue }
            self.owners[entity.id] = owners
            for owner in owners {
                guard let inverse = model.inverse(of: owner), !inverse.isToMany,
                    let destination = model.entityID(named: owner.destinationEntityName)
                else { continue }
                var keys = Set<Int64>()
                for holder in model.entityAndSubentities(of: destination) {
                    // An owner the store cannot read names no part here; the scan reports it.
                    try SnapshotWalk(coordinator: coordinator, entity: holder).forEach(unreadable: { _, _ in }) {
                        page in
                        for snapshot in page {
                            if let part = snapshot.toOne[inverse.name] { keys.insert(part.key.rawValue) }
                        }
                    }
                }
                claimed[entity.id, default: [:]][owner.name] = keys
            }
        }
    }

    /// The owner relationships of `entity` when it is a part; empty otherwise.
    func owners(of entity: EntityID) -> [RelationshipDescription] { owners[entity] ?? [] }

    /// Whether `snapshot` is of a part that no owner names.
    func isUnowned(_ snapshot: Snapshot) -> Bool {
        let entity = snapshot.objectID.entity
        guard let owners = owners[entity] else { return false }
        return owners.allSatisfy { owner in
            snapshot.toOne[owner.name] == nil
                && !(claimed[entity]?[owner.name]?.contains(snapshot.objectID.key.rawValue) ?? false)
        }
    }
}
