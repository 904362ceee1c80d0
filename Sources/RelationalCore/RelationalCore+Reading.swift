import CoreDataSchema
import Foundation
import ObjectGraph

/// Reading objects from their rows: listings and counts by entity, rows by key (one statement
/// per table, whatever the number of keys), to-many contents by source, key counters.
extension RelationalRules {
    /// The IDs of the objects whose entity is exactly `entity`, by key. A row whose key is not a
    /// positive integer (a hand-edited key, a table not declared as Core Data declares it) names
    /// no object: nothing downstream (names `pN`, XML ids, the binary format's unsigned keys)
    /// meets a key below 1.
    package func objectIDs(of entity: EntityID, on connection: some SQLConnection) throws(ObjectGraphError)
        -> [ObjectID]
    {
        let entityLayout = try entityLayout(entity)
        guard let table = entityLayout.table, let zent = entityLayout.zent else { return [] }
        var ids: [ObjectID] = []
        try connection.query(
            "SELECT \"Z_PK\" FROM \(identifier: table) WHERE \"Z_ENT\" = \(zent) AND \(dialect.isObjectKey("\"Z_PK\"")) ORDER BY \"Z_PK\""
        ) { row in
            if let key = row.integer(0) { ids.append(ObjectID(entity: entity, key: PrimaryKey(key))) }
        }
        return ids
    }

    /// The number of objects whose entity is exactly `entity` (rows as ``objectIDs(of:on:)``
    /// reads them).
    package func count(of entity: EntityID, on connection: some SQLConnection) throws(ObjectGraphError) -> Int {
        let entityLayout = try entityLayout(entity)
        guard let table = entityLayout.table, let zent = entityLayout.zent else { return 0 }
        let count = try connection.integer(
            "SELECT COUNT(*) FROM \(identifier: table) WHERE \"Z_ENT\" = \(zent) AND \(dialect.isObjectKey("\"Z_PK\""))"
        )
        return Int(clamping: count ?? 0)
    }

    /// The snapshots of `ids`, in one statement per root table involved; objects that do not
    /// exist are left out. `lockingRows`: inside a save, the rows are locked (in key order, so
    /// two writers locking the same rows cannot deadlock) where the dialect locks rows.
    package func snapshots(for ids: [ObjectID], on connection: some SQLConnection, lockingRows: Bool = false)
        throws(ObjectGraphError) -> [Snapshot]
    {
        // Keys are unique per table, but a caller may ask for one key under several entities (it
        // does not know which subentity the object has): the row's Z_ENT picks the one that exists.
        var byTable: [String: (root: EntityID, ids: [PrimaryKey: [ObjectID]])] = [:]
        for id in ids {
            guard id.entity.rawValue >= 1, id.entity.rawValue <= layout.entities.count else { continue }
            let entityLayout = layout[id.entity]
            guard let table = entityLayout.table, entityLayout.zent != nil else { continue }
            byTable[table, default: (entityLayout.rootID, [:])].ids[id.key, default: []].append(id)
        }
        guard !byTable.isEmpty else { return [] }
        var found: [ObjectID: Snapshot] = [:]
        for (table, group) in byTable.sorted(by: { $0.key < $1.key }) {
            let plan = RowPlan(self, root: group.root)
            let keys = group.ids.keys.map(\.rawValue).sorted()
            let locking = lockingRows ? SQL(text: " ORDER BY \"Z_PK\"" + dialect.lockingSelectedRows) : ""
            let sql: SQL =
                "SELECT \(SQL(text: plan.selected)) FROM \(identifier: table) WHERE \(dialect.column("\"Z_PK\"", isAnyOf: keys))\(locking)"
            try connection.query(sql) { (row) throws(ObjectGraphError) in
                // Z_PK and Z_ENT that are not integers: not one of the objects asked for.
                guard let pk = row.integer(0), let zent = row.integer(1), let entity = layout.entityByZent[zent],
                    let id = group.ids[PrimaryKey(pk)]?.first(where: { $0.entity == entity }),
                    let entityPlan = plan.entities[entity]
                else { return }
                found[id] = try snapshot(from: row, id: id, plan: entityPlan)
            }
        }
        return ids.compactMap { found[$0] }
    }

    /// The destinations of to-many `relationship` (declared on `entity` or an ancestor) of each
    /// of `sources`, one list per source in the order of `sources` (ordered relationships in
    /// their order), in one statement.
    package func toManyDestinationLists(
        of relationship: String, in entity: EntityID, for sources: [ObjectID], on connection: some SQLConnection
    ) throws(ObjectGraphError) -> [[ObjectID]] {
        let entityLayout = try entityLayout(entity)
        guard let mapping = entityLayout.toMany[relationship] else {
            throw ObjectGraphError(.notFound, "entity \(entityLayout.name) has no to-many relationship \(relationship)")
        }
        var lists = [[ObjectID]](repeating: [], count: sources.count)
        guard !sources.isEmpty else { return lists }
        // The sources by key (a key asked for twice has a list in each place): rows come by
        // source key, so a cursor walks these as the rows go, looking nothing up.
        let byKey = sources.indices.map { (key: sources[$0].key.rawValue, place: $0) }.sorted { $0 < $1 }
        guard let lowest = byKey.first?.key, let highest = byKey.last?.key else { return lists }
        // The keys as a range when they are dense (a page read by key): the same statement for
        // every page; rows in the range for other keys are passed over below. Sparse keys are
        // listed, so a few sources never walk a wide range.
        let (span, overflow) = highest.subtractingReportingOverflow(lowest)
        let asRange = !overflow && span < Int64(sources.count) * 4
        func condition(_ column: String) -> SQL {
            asRange
                ? "\(SQL(text: column)) BETWEEN \(lowest) AND \(highest)"
                : dialect.column(column, isAnyOf: Array(Set(byKey.map(\.key))).sorted())
        }
        let sql: SQL
        switch mapping {
        case .missing:
            return lists
        case .foreignKey(let table, let column, let orderColumn, _):
            let c = SQL.identifier(column)
            let order = orderColumn.map { SQL.identifier($0) + ", " } ?? ""
            sql =
                "SELECT \(identifier: column), \"Z_PK\", \"Z_ENT\" FROM \(identifier: table) WHERE \(condition(c)) "
                + SQL(text: "ORDER BY \(c), \(order)\"Z_PK\"")
        case .joinTable(let table, let sourceColumn, let destinationColumn, let orderColumn, let destinationTable, _):
            let s = "j." + SQL.identifier(sourceColumn)
            let d = "j." + SQL.identifier(destinationColumn)
            let order = orderColumn.map { "j." + SQL.identifier($0) + ", " } ?? ""
            sql =
                SQL(
                    text:
                        "SELECT \(s), \(d), t.\"Z_ENT\" FROM \(SQL.identifier(table)) j JOIN \(SQL.identifier(destinationTable)) t "
                )
                + SQL(text: "ON t.\"Z_PK\" = \(d) WHERE ") + condition(s) + SQL(text: " ORDER BY \(s), \(order)\(d)")
        }
        // The first entry of byKey at or after the last row's key.
        var cursor = 0
        // A source's rows come together: gathered here, then copied once to its list (or lists),
        // rather than each list growing by doubling.
        var run = (cursor: -1, destinations: [ObjectID]())
        func finish(_ run: (cursor: Int, destinations: [ObjectID])) {
            guard run.cursor >= 0, !run.destinations.isEmpty else { return }
            var list: [ObjectID] = []
            list.reserveCapacity(run.destinations.count)
            list.append(contentsOf: run.destinations)
            var at = run.cursor
            while at < byKey.count && byKey[at].key == byKey[run.cursor].key {
                if lists[byKey[at].place].isEmpty {
                    lists[byKey[at].place] = list
                } else {
                    lists[byKey[at].place] += list
                }
                at += 1
            }
        }
        // Destinations are mostly of one entity: the last row's saves a lookup a row.
        var lastEntity: (zent: Int64, id: EntityID)?
        try connection.query(sql) { (row) throws(ObjectGraphError) in
            // Keys and Z_ENT that are not integers (a damaged row) name no object.
            guard let sourceKey = row.integer(0), let key = row.integer(1), key > 0, let zent = row.integer(2) else {
                return
            }
            // Forward as the rows go; back (a binary search) only if the engine ever ordered
            // otherwise.
            if cursor > 0 && byKey[cursor - 1].key >= sourceKey {
                cursor = Self.firstIndex(atLeast: sourceKey, in: byKey)
            }
            while cursor < byKey.count && byKey[cursor].key < sourceKey { cursor += 1 }
            guard cursor < byKey.count, byKey[cursor].key == sourceKey else { return }
            if lastEntity?.zent != zent {
                guard let destination = layout.entityByZent[zent] else {
                    logger.warning(
                        "\(place): \(entityLayout.name).\(relationship) reaches a row of unknown Z_ENT \(zent)")
                    return
                }
                lastEntity = (zent, destination)
            }
            guard let destination = lastEntity?.id else { return }
            if run.cursor != cursor {
                finish(run)
                run.cursor = cursor
                run.destinations.removeAll(keepingCapacity: true)
            }
            run.destinations.append(ObjectID(entity: destination, key: PrimaryKey(key)))
        }
        finish(run)
        return lists
    }

    /// ``toManyDestinationLists(of:in:for:on:)`` by source: every source has an entry.
    package func toManyDestinations(
        of relationship: String, in entity: EntityID, for sources: [ObjectID], on connection: some SQLConnection
    ) throws(ObjectGraphError) -> [ObjectID: [ObjectID]] {
        let lists = try toManyDestinationLists(of: relationship, in: entity, for: sources, on: connection)
        var result: [ObjectID: [ObjectID]] = Dictionary(minimumCapacity: sources.count)
        for (source, list) in zip(sources, lists) where result[source] == nil { result[source] = list }
        return result
    }

    /// The larger of Z_MAX and the largest Z_PK of the root's table: the highest key ever handed
    /// out. Either may hold anything in a damaged file: what is not an integer counts as 0.
    package func highestStoredKey(in root: EntityID, on connection: some SQLConnection) throws(ObjectGraphError)
        -> Int64
    {
        let (table, zent) = try rootTable(of: root)
        let counter = try connection.integer("SELECT \"Z_MAX\" FROM \"Z_PRIMARYKEY\" WHERE \"Z_ENT\" = \(zent)")
        let highest = try connection.integer("SELECT MAX(\"Z_PK\") FROM \(identifier: table)")
        return max(counter ?? 0, highest ?? 0)
    }

    /// The first index of `entries` (sorted by key) whose key is `key` or more.
    private static func firstIndex(atLeast key: Int64, in entries: [(key: Int64, place: Int)]) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let mid = low + (high - low) / 2
            if entries[mid].key < key { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

extension RelationalRules {
    /// The objects of the tree of `root` whose columns hold `values` as the store keeps them, in
    /// one statement on the columns (an index on them, a UNIQUE one among them, answers it); nil
    /// when a property has no column or keeps its bytes outside the row (external storage).
    package func objectIDs(
        holding values: [(property: String, value: PropertyMatch)], in root: EntityID, on connection: some SQLConnection
    ) throws(ObjectGraphError) -> [ObjectID]? {
        guard root.rawValue >= 1, root.rawValue <= layout.entities.count, let table = layout[root].table,
            !values.isEmpty
        else { return nil }
        let tree = model.entityAndSubentities(of: root)
        var conditions: [SQL] = []
        for (property, value) in values {
            var found = false
            for id in tree where !found {
                if let column = layout[id].attributes.first(where: { $0.attribute.name == property }),
                    let name = column.column, case .value(let stored) = value
                {
                    guard !column.attribute.allowsExternalBinaryDataStorage else { return nil }
                    let encoded = try dialect.encode(stored, as: column.attribute, entity: model[id].name)
                    conditions.append("\(identifier: name) = \(encoded)")
                    found = true
                } else if let toOne = layout[id].toOne.first(where: { $0.name == property }), let name = toOne.column,
                    case .object(let destination) = value
                {
                    conditions.append("\(identifier: name) = \(destination.key.rawValue)")
                    found = true
                }
            }
            guard found else { return nil }
        }
        var ids: [ObjectID] = []
        try connection.query(
            "SELECT \"Z_PK\", \"Z_ENT\" FROM \(identifier: table) WHERE \(SQL.joined(conditions, separator: " AND "))"
        ) { row in
            guard let key = row.integer(0), let zent = row.integer(1), let id = layout.entityByZent[zent] else {
                return
            }
            ids.append(ObjectID(entity: id, key: PrimaryKey(key)))
        }
        return ids
    }
}
