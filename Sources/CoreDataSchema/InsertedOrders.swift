import ObjectGraph

/// The places of inserted rows in ordered to-many relationships whose order lives in the
/// destination's row (Core Data's `Z_FOK_` column beside the inverse to-one's key): written by the
/// row's INSERT rather than by an UPDATE of each row after it. A save that inserts objects into
/// ordered relationships (a sample's 80 direct reports per manager, a migration, `cp -a` of
/// folders with ordered links) otherwise ran one UPDATE per member, a fifth of SQLite's work.
///
/// A place is taken only where the inserted row's own to-one names the relationship's source, as
/// the UPDATE it replaces requires (`WHERE Z_PK = ? AND <key column> = source`); anything else is
/// left to that UPDATE.
package struct InsertedOrders {
    /// The order columns of a table that inserts write, in a fixed order; a row without a place
    /// leaves its column out of its INSERT (the column's default applies, as before).
    package private(set) var columnsByTable: [String: [String]] = [:]
    /// Order values by inserted object and column.
    private var places: [ObjectID: [String: Int64]] = [:]
    /// Objects a list names more than once: left to the UPDATEs.
    private var repeated: Set<ObjectID> = []

    package init(_ request: SaveRequest, layout: StoreLayout, model: ManagedObjectModel) {
        guard !request.inserted.isEmpty, !request.toManyChanges.isEmpty else { return }
        var inserted: [ObjectID: Int] = [:]
        inserted.reserveCapacity(request.inserted.count)
        for (i, snapshot) in request.inserted.enumerated() { inserted[snapshot.objectID] = i }
        for change in request.toManyChanges {
            guard change.source.entity.rawValue >= 1, change.source.entity.rawValue <= layout.entities.count,
                case .foreignKey(let table, _, let orderColumn?, true) = layout[change.source.entity].toMany[
                    change.relationship],
                let inverse = model[change.source.entity].relationship(named: change.relationship)?.inverseName
            else { continue }
            for (i, destination) in change.destinations.enumerated() {
                guard let index = inserted[destination], request.inserted[index].toOne[inverse] == change.source else {
                    continue
                }
                // Named twice in a list (a damaged store being migrated): its UPDATEs run in list
                // order as before, the last place winning, and the INSERT writes none.
                if repeated.contains(destination) { continue }
                if places[destination]?[orderColumn] != nil {
                    places[destination]?[orderColumn] = nil
                    repeated.insert(destination)
                    continue
                }
                if columnsByTable[table]?.contains(orderColumn) != true {
                    columnsByTable[table, default: []].append(orderColumn)
                }
                places[destination, default: [:]][orderColumn] = Int64(i + 1) * 1024
            }
        }
    }

    /// The order value the INSERT of `id` writes in `column`, if any.
    package func place(of id: ObjectID, in column: String) -> Int64? { places[id]?[column] }
}
