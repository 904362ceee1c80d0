import CoreDataSchema
import Foundation
import ObjectGraph

/// A save, written as Core Data writes one, inside the caller's transaction; any error (a
/// conflict included) is the caller's to roll back, and errors about one object name it.
///
/// Order: inserts (and the key counters), updates of the columns that changed (checked property
/// by property against what was read, rows locked where other writers run), versions of objects
/// whose only change is a to-many list, deletes (checked against Z_OPT, with their join-table
/// rows and hidden keys), keys that would name a deleted object, to-many differences, metadata.
/// What was written, object by object, is returned for persistent history and for the objects
/// the store changed on its own (``WrittenChanges/repaired``).
extension RelationalRules {
    package func apply<Extensions: SaveExtensions>(
        _ request: SaveRequest, on connection: some SQLConnection, history: HistorySlots?,
        extensions: inout Extensions
    ) throws(ObjectGraphError) -> WrittenChanges<SQLValue> {
        var written = WrittenChanges<SQLValue>()
        let orders = InsertedOrders(request, layout: layout, model: model)
        var counters = try insert(request, orders: orders, on: connection, extensions: &extensions, &written)
        // A migration carries the old store's counters (keys of objects deleted before it stay used).
        for (root, counter) in request.keyCounters {
            guard root.rawValue >= 1, root.rawValue <= layout.entities.count, let zent = layout[root].zent,
                layout[root].rootID == root, counter > 0
            else { continue }
            counters[zent] = max(counters[zent] ?? 0, counter)
        }
        for (zent, key) in counters.sorted(by: { $0.key < $1.key }) {
            try connection.execute(
                "UPDATE \"Z_PRIMARYKEY\" SET \"Z_MAX\" = \(key) WHERE \"Z_ENT\" = \(zent) AND \(dialect.counter("\"Z_MAX\"", isBelow: key))"
            )
        }
        let updates = request.updated.filter { !$0.isEmpty }.sorted { $0.objectID < $1.objectID }
        if !updates.isEmpty {
            try update(updates, on: connection, extensions: &extensions, &written)
            try repairOneToOne(updates, on: connection, &written)
        }
        try bumpVersionsOfToManyChanges(request, on: connection, &written)
        for deletion in request.deleted.sorted(by: { $0.objectID < $1.objectID }) {
            try delete(deletion, on: connection, history: history, extensions: &extensions, &written)
        }
        try clearKeys(to: request.deleted.map(\.objectID), on: connection, &written)
        try applyToManyChanges(request.toManyChanges, on: connection, insertedOrders: orders)
        if let metadata = request.metadata {
            let plist = try MetadataPlist.encode(metadata)
            try connection.execute(
                "UPDATE \"Z_METADATA\" SET \"Z_UUID\" = COALESCE(\(metadata.storeUUID.map(SQLValue.text) ?? .null), \"Z_UUID\"), \"Z_PLIST\" = \(SQLValue.blob(plist))"
            )
        }
        return written
    }

    // MARK: - Inserts

    /// Multi-row INSERTs per table and set of columns (as many rows per statement as the dialect
    /// takes); keys another writer saved meanwhile are refused by name (EEXIST for the objects
    /// that have them). Returns the highest key inserted per root Z_ENT.
    private func insert<Extensions: SaveExtensions>(
        _ request: SaveRequest, orders: InsertedOrders, on connection: some SQLConnection,
        extensions: inout Extensions, _ written: inout WrittenChanges<SQLValue>
    ) throws(ObjectGraphError) -> [Int64: Int64] {
        guard !request.inserted.isEmpty else { return [:] }
        var groups: [[String]: InsertGroup] = [:]
        var keysByTable: [String: [Int64: ObjectID]] = [:]
        var maxKeys: [Int64: Int64] = [:]
        for snapshot in request.inserted {
            let id = snapshot.objectID
            let (table, zent, rootZent) = try location(of: id)
            var columns = try rowColumns(of: snapshot, extensions: &extensions)
            for column in orders.columnsByTable[table] ?? [] {
                if let place = orders.place(of: id, in: column) { columns.append((column, .integer(place))) }
            }
            let shape = [table] + columns.map(\.name)
            groups[shape, default: InsertGroup(table: table, columns: columns.map(\.name))].rows.append(
                [.integer(id.key.rawValue), .integer(zent), .integer(Self.insertedVersion(snapshot, request))]
                    + columns.map(\.value))
            if keysByTable[table, default: [:]].updateValue(id, forKey: id.key.rawValue) != nil {
                throw ObjectGraphError(.exists, "\(name(of: id)) is inserted twice by one save", objects: [id])
            }
            maxKeys[rootZent] = max(maxKeys[rootZent] ?? 0, id.key.rawValue)
            written.insert(id)
        }
        for (table, keys) in keysByTable.sorted(by: { $0.key < $1.key }) {
            var taken: [ObjectID] = []
            try connection.query(
                "SELECT \"Z_PK\" FROM \(identifier: table) WHERE \(dialect.column("\"Z_PK\"", isAnyOf: keys.keys.sorted()))"
            ) { row in
                if let key = row.integer(0), let id = keys[key] { taken.append(id) }
            }
            if let first = taken.first {
                throw ObjectGraphError(
                    .exists, "\(name(of: first)) cannot be inserted: an object with its key exists already in \(place)",
                    objects: taken)
            }
        }
        for (_, group) in groups.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            // Many rows: the engine's bulk path where it has one (PostgreSQL's COPY).
            if group.rows.count >= Self.bulkRows {
                let appended: Bool
                do throws(ObjectGraphError) {
                    appended = try connection.appendRows(
                        group.rows[...], into: group.table, columns: ["Z_PK", "Z_ENT", "Z_OPT"] + group.columns)
                } catch  where error.code == .exists {
                    // Inserted meanwhile by another writer (between the check and the copy).
                    let ids = group.rows.compactMap { values -> ObjectID? in
                        guard case .integer(let key) = values[0] else { return nil }
                        return keysByTable[group.table]?[key]
                    }
                    throw ObjectGraphError(
                        .exists, "\(ids.first.map(name(of:)) ?? "an object") cannot be inserted: \(error.message)",
                        objects: ids)
                }
                if appended { continue }
            }
            let names = (["Z_PK", "Z_ENT", "Z_OPT"] + group.columns).map(SQL.identifier).joined(separator: ", ")
            let head = "INSERT INTO \(SQL.identifier(group.table)) (\(names)) VALUES "
            let row = "(" + Array(repeating: "?", count: group.columns.count + 3).joined(separator: ", ") + ")"
            let perStatement = rowsPerStatement(columns: group.columns.count + 3)
            var text = ""
            var start = 0
            while start < group.rows.count {
                let end = min(start + perStatement, group.rows.count)
                // The text is made once per size: most statements of a group share it.
                if text.isEmpty || end - start != perStatement {
                    text = head + Array(repeating: row, count: end - start).joined(separator: ", ")
                }
                var arguments: [SQLValue] = []
                arguments.reserveCapacity((end - start) * (group.columns.count + 3))
                for values in group.rows[start..<end] { arguments += values }
                do throws(ObjectGraphError) {
                    try connection.execute(SQL(text: text, arguments: arguments))
                } catch  where error.code == .exists {
                    // Inserted meanwhile by another writer (between the check and the insert).
                    let ids = group.rows[start..<end].compactMap { values -> ObjectID? in
                        guard case .integer(let key) = values[0] else { return nil }
                        return keysByTable[group.table]?[key]
                    }
                    throw ObjectGraphError(
                        .exists, "\(ids.first.map(name(of:)) ?? "an object") cannot be inserted: \(error.message)",
                        objects: ids)
                }
                start = end
            }
        }
        return maxKeys
    }

    /// The version an inserted row is written with: 1, or its own when the save keeps versions
    /// (a migration).
    static func insertedVersion(_ snapshot: Snapshot, _ request: SaveRequest) -> Int64 {
        request.keepsVersions && snapshot.version >= 1 ? snapshot.version : 1
    }

    /// The inserted rows of one table with one set of columns.
    private struct InsertGroup {
        var table: String
        var columns: [String]
        var rows: [[SQLValue]] = []
    }

    /// Rows one statement carries for rows of `columns` values: the dialect's, within what one
    /// statement may bind.
    func rowsPerStatement(columns: Int) -> Int {
        max(1, min(dialect.rowsPerStatement, Self.boundValuesPerStatement / max(columns, 1)))
    }

    /// Rows of one table and set of columns from which a save takes the engine's bulk path
    /// (``SQLConnection/appendRows(_:into:columns:)``): a COPY costs a round trip more than an
    /// INSERT, and pays off past a few hundred values.
    static let bulkRows = 100

    /// Values bound in one statement at most (SQLite takes 32,766, PostgreSQL 65,535).
    static let boundValuesPerStatement = 30_000

    /// The columns of a snapshot's row with the values to write: every mapped column (a missing
    /// name writes NULL), or only those of the given attributes and to-one relationships.
    func rowColumns<Extensions: SaveExtensions>(
        of snapshot: Snapshot, attributes only: Set<String>? = nil, toOne onlyToOne: Set<String>? = nil,
        extensions: inout Extensions
    ) throws(ObjectGraphError) -> [(name: String, value: SQLValue)] {
        let id = snapshot.objectID
        let entityLayout = layout[id.entity]
        var columns: [(name: String, value: SQLValue)] = []
        columns.reserveCapacity(entityLayout.attributes.count + entityLayout.toOne.count)
        // Values found are counted to check the snapshot's names below without a search.
        var found = 0
        let attributes = entityLayout.attributes
        for i in attributes.indices {
            let name = attributes[i].attribute.name
            let value = snapshot.attributes[name]
            if value != nil { found += 1 }
            if let only, !only.contains(name) { continue }
            // Left to the store that computes it (an insert's trigger fills it in).
            if extensions.isComputed(name, of: id.entity) { continue }
            guard let column = attributes[i].column else {
                if value != nil {
                    throw ObjectGraphError(
                        .unsupported, "\(place) has no column for \(entityLayout.name).\(name); it cannot be set",
                        objects: [id])
                }
                continue
            }
            guard let value else {
                columns.append((column, .null))
                continue
            }
            var encoded: SQLValue
            do {
                encoded = try dialect.encode(value, as: attributes[i].attribute, entity: entityLayout.name)
            } catch {
                throw ObjectGraphError(error.code, error.message, objects: [id])
            }
            if attributes[i].attribute.allowsExternalBinaryDataStorage, case .blob = encoded {
                encoded = try extensions.stored(encoded, for: attributes[i].attribute, of: id)
            }
            columns.append((column, encoded))
        }
        // Every name the snapshot holds must be an attribute the layout maps (or a transient one).
        if found != snapshot.attributes.count {
            for name in snapshot.attributes.keys where !attributes.contains(where: { $0.attribute.name == name }) {
                if model[id.entity].attribute(named: name)?.isTransient == true { continue }
                throw ObjectGraphError(.notFound, "entity \(entityLayout.name) has no attribute \(name)", objects: [id])
            }
        }
        for toOne in entityLayout.toOne where onlyToOne?.contains(toOne.name) ?? true {
            let destination = snapshot.toOne[toOne.name]
            guard let column = toOne.column else {
                if destination != nil {
                    throw ObjectGraphError(
                        .unsupported, "\(place) has no column for \(entityLayout.name).\(toOne.name)", objects: [id])
                }
                continue
            }
            columns.append((column, destination.map { .integer($0.key.rawValue) } ?? .null))
            if let entityColumn = toOne.entityColumn {
                columns.append(
                    (entityColumn, destination.flatMap { layout[$0.entity].zent }.map { .integer($0) } ?? .null))
            }
        }
        return columns
    }

    // MARK: - Updates and deletes

    /// Updates only the columns that changed, and only where the row still holds what was read
    /// there; columns this save does not change stay as another writer may have left them.
    private func update<Extensions: SaveExtensions>(
        _ updates: [SaveRequest.Update], on connection: some SQLConnection, extensions: inout Extensions,
        _ written: inout WrittenChanges<SQLValue>
    ) throws(ObjectGraphError) {
        var current: [ObjectID: Snapshot] = [:]
        for snapshot in try snapshots(for: updates.map(\.objectID), on: connection, lockingRows: true) {
            current[snapshot.objectID] = snapshot
        }
        for update in updates {
            let id = update.objectID
            guard let stored = current[id] else { throw conflict(id, deleted: true) }
            let changedAttributes = update.changedAttributes
            let changedToOne = update.changedToOne
            if changedAttributes.contains(where: { stored.attributes[$0] != update.original.attributes[$0] })
                || changedToOne.contains(where: { stored.toOne[$0] != update.original.toOne[$0] })
            {
                throw conflict(id, deleted: false)
            }
            if let computed = changedAttributes.first(where: { extensions.isComputed($0, of: id.entity) }) {
                throw ObjectGraphError(
                    .notPermitted,
                    "\(layout[id.entity].name).\(computed) is a derived attribute: the store's triggers compute it, so it cannot be set",
                    objects: [id])
            }
            let (table, zent, _) = try location(of: id)
            try extensions.willChange(id, attributes: Set(changedAttributes), on: connection)
            let columns = try rowColumns(
                of: update.snapshot, attributes: Set(changedAttributes), toOne: Set(changedToOne),
                extensions: &extensions)
            let sets = SQL.joined(
                columns.map { "\(identifier: $0.name) = \($0.value)" as SQL } + [
                    SQL(text: "\"Z_OPT\" = \"Z_OPT\" + 1")
                ],
                separator: ", ")
            let changed = try connection.execute(
                "UPDATE \(identifier: table) SET \(sets) WHERE \"Z_PK\" = \(id.key.rawValue) AND \"Z_ENT\" = \(zent)")
            if changed == 0 { throw conflict(id, deleted: true) }
            written.update(id, changedAttributes + changedToOne)
            // The row as read, to the version: it now holds what this update wrote, nothing else.
            if stored == update.original { written.rowsAsRead.insert(id) }
        }
    }

    /// Deletes a row when it still has the version that was read, with the join-table rows and
    /// hidden keys that name it.
    private func delete<Extensions: SaveExtensions>(
        _ deletion: SaveRequest.Deletion, on connection: some SQLConnection, history: HistorySlots?,
        extensions: inout Extensions, _ written: inout WrittenChanges<SQLValue>
    ) throws(ObjectGraphError) {
        let id = deletion.objectID
        let (table, zent, _) = try location(of: id)
        let key = id.key.rawValue
        let tombstone =
            try history.map { (slots) throws(ObjectGraphError) in
                try tombstoneValues(of: id, preserving: slots.preservedAttributes(of: id.entity), on: connection)
            } ?? []
        try extensions.willChange(id, attributes: nil, on: connection)
        let changed = try connection.execute(
            "DELETE FROM \(identifier: table) WHERE \"Z_PK\" = \(key) AND \"Z_ENT\" = \(zent) AND \"Z_OPT\" = \(deletion.expectedVersion)"
        )
        if changed == 0 {
            let exists = try connection.integer("SELECT 1 FROM \(identifier: table) WHERE \"Z_PK\" = \(key)") != nil
            throw conflict(id, deleted: !exists)
        }
        let root = layout[id.entity].rootID
        for join in layout.joinTables where join.root == root {
            try connection.execute("DELETE FROM \(identifier: join.table) WHERE \(identifier: join.column) = \(key)")
        }
        // A to-many relationship without inverse lives only in its destinations' rows, which the
        // engine does not rewrite when the source goes: the store clears them.
        for hidden in layout.hiddenKeyColumns where hidden.root == root {
            let order = hidden.orderColumn.map { ", " + SQL.identifier($0) + " = NULL" } ?? ""
            try connection.execute(
                "UPDATE \(identifier: hidden.table) SET \(identifier: hidden.column) = NULL\(SQL(text: order)) WHERE \(identifier: hidden.column) = \(key)"
            )
        }
        written.deleted.append((id, tombstone))
    }

    /// The values a delete of `id` records in history: its entity's preserved attributes, in
    /// tombstone order, as the row holds them.
    private func tombstoneValues(of id: ObjectID, preserving names: [String], on connection: some SQLConnection)
        throws(ObjectGraphError) -> [SQLValue]
    {
        guard !names.isEmpty, let table = layout[id.entity].table else { return [] }
        let columns = names.map { name in
            layout[id.entity].attributes.first { $0.attribute.name == name }?.column.map(SQL.identifier) ?? "NULL"
        }
        var values: [SQLValue] = []
        try connection.query(
            "SELECT \(SQL(text: columns.joined(separator: ", "))) FROM \(identifier: table) WHERE \"Z_PK\" = \(id.key.rawValue)"
        ) { row in
            values = (0..<columns.count).map { row.value($0) }
        }
        return values
    }

    /// The error of a save that finds `id` changed (or deleted) by another writer since it was read.
    package func conflict(_ id: ObjectID, deleted: Bool) -> ObjectGraphError {
        ObjectGraphError(
            .conflict,
            "\(name(of: id)) was \(deleted ? "deleted" : "changed") in \(place) by another writer since it was read; "
                + "that change is kept and this one is not saved",
            objects: [id])
    }
}
