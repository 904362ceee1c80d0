import ObjectGraph

/// Which objects a save gives `Z_OPT + 1` for a to-many change alone, as Core Data does (Photos'
/// history shows albums lists at version 7 after six changes of their albums only): every
/// existing object whose to-many contents change, with the relationships that changed; the rows
/// the save updates anyway are bumped by their update. Dialect-free: both SQL stores run it.
package struct ToManyVersions {
    /// The sources, in key order, with their changed relationships and whether the save updates
    /// their row otherwise (then only history records the relationships).
    package let sources: [(object: ObjectID, relationships: Set<String>, updatedOtherwise: Bool)]

    package init(_ request: SaveRequest) {
        guard !request.toManyChanges.isEmpty else {
            sources = []
            return
        }
        let inserted = Set(request.inserted.map(\.objectID))
        let updated = Set(request.updated.filter { !$0.isEmpty }.map(\.objectID))
        var names: [ObjectID: Set<String>] = [:]
        for change in request.toManyChanges
        where !inserted.contains(change.source) && change.destinations != change.original {
            names[change.source, default: []].insert(change.relationship)
        }
        sources = names.sorted { $0.key < $1.key }.map { ($0.key, $0.value, updated.contains($0.key)) }
    }
}

extension StoreLayout {
    /// Table, Z_ENT and root Z_ENT of an object to write; `store` names the store in errors.
    package func place(of id: ObjectID, in store: String) throws(ObjectGraphError) -> (
        table: String, zent: Int64, rootZent: Int64
    ) {
        guard id.entity.rawValue >= 1, id.entity.rawValue <= entities.count else {
            throw ObjectGraphError(.notFound, "\(id) is not an entity of the store's model")
        }
        let entity = self[id.entity]
        let root = self[entity.rootID]
        guard let table = root.table, let rootZent = root.zent else {
            throw ObjectGraphError(.unsupported, "entity \(root.name) has no table in \(store)", objects: [id])
        }
        guard let zent = entity.zent else {
            throw ObjectGraphError(
                .unsupported, "entity \(entity.name) has no Z_PRIMARYKEY row in \(store)", objects: [id])
        }
        return (table, zent, rootZent)
    }
}
