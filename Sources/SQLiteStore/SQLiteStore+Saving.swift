import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

extension SQLiteStore {
    /// Applies a save in one write transaction; any error (a conflict included) rolls back
    /// everything, and errors about one object name it.
    ///
    /// Order: inserts (and Z_MAX), updates of the columns that changed, deletes (and their
    /// join-table rows), to-many differences, metadata. Ordered relationships get Z_FOK_ values
    /// 1024, 2048, ... in their order.
    public func save(_ request: SaveRequest) throws(ObjectGraphError) {
        _ = try saveReportingEffects(request)
    }

    /// Applies a save in one write transaction with what Core Data's mechanisms add to it: the
    /// triggers run (their hooks report the rows they changed), keys that would leave a
    /// relationship inconsistent are cleared, persistent history is appended, large external
    /// values are written to files before the commit and replaced ones removed after it.
    public func saveReportingEffects(_ request: SaveRequest) throws(ObjectGraphError) -> SaveEffects {
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(path) is open read-only") }
        guard !request.isEmpty else { return SaveEffects() }
        try refuseTextKeyTables(request)
        var files = ExternalDataChanges()
        do {
            let effects = try write { db throws in
                mechanisms.effects.begin()
                var written = WrittenChanges()
                try apply(request, db, &written, &files)
                if let history = mechanisms.history {
                    try history.append(written, layout: layout, db: db) { sql, arguments in
                        _ = try execute(db, sql, arguments, cached: false)
                    }
                }
                return storeEffects(of: written, reports: mechanisms.effects.drain())
            }
            files.committed(logger: logger)
            return effects
        } catch {
            files.rolledBack()
            throw error
        }
    }

    /// What the triggers and the store's own clean-up changed, as objects to read again;
    /// objects this save deleted are left out.
    private func storeEffects(
        of written: WrittenChanges,
        reports: (reports: Set<TriggerEffects.Report>, overflowed: Bool, malformed: [String: Int])
    ) -> SaveEffects {
        for (function, count) in reports.malformed.sorted(by: { $0.key < $1.key }) {
            logger.warning(
                "\(path): a trigger called \(function) \(count) times with arguments of unexpected types; ignored")
        }
        var refreshed = written.repaired
        for report in reports.reports {
            guard let entity = layout.entityByZent[report.zent], report.key > 0 else { continue }
            refreshed.insert(ObjectID(entity: entity, key: PrimaryKey(report.key)))
        }
        for (id, _) in written.deleted { refreshed.remove(id) }
        return SaveEffects(refreshed: refreshed, refreshesEverything: reports.overflowed)
    }

    public func check(_ value: AttributeValue, for attribute: AttributeDescription, of entity: EntityID)
        throws(ObjectGraphError)
    {
        let entityName = try entityLayout(entity).name
        if mechanisms.isComputed(attribute.name, of: entity) { throw computedAttribute(attribute.name, of: entityName) }
        _ = try ValueCoding.encode(value, as: attribute, entity: entityName)
    }

    public func checkRemoval(of attribute: AttributeDescription, of entity: EntityID) throws(ObjectGraphError) {
        let entityName = try entityLayout(entity).name
        if mechanisms.isComputed(attribute.name, of: entity) { throw computedAttribute(attribute.name, of: entityName) }
    }

    private func computedAttribute(_ name: String, of entity: String, object: ObjectID? = nil) -> ObjectGraphError {
        ObjectGraphError(
            .notPermitted,
            "\(entity).\(name) is a derived attribute: the store's triggers compute it, so it cannot be set",
            objects: object.map { [$0] } ?? [])
    }

    private func apply(
        _ request: SaveRequest, _ db: Database, _ written: inout WrittenChanges, _ files: inout ExternalDataChanges
    )
        throws(ObjectGraphError)
    {
        func run(_ sql: String, _ arguments: StatementArguments = [], cached: Bool = true) throws(ObjectGraphError)
            -> Int
        {
            do { return try execute(db, sql, arguments, cached: cached) } catch {
                throw Self.mapError(error, file: path)
            }
        }
        // Inserts: one prepared statement per entity and shape of placeholders, reused for every
        // row of the save (building and looking up the SQL per row was a third of a bulk insert).
        var maxKeys: [Int64: Int64] = [:]
        var insertStatements: [[Int]: Statement] = [:]
        let orders = InsertedOrders(request, layout: layout, model: model)
        for snapshot in request.inserted {
            let (table, zent, rootZent) = try place(of: snapshot.objectID)
            var columns = try rowColumns(of: snapshot, files: &files)
            var shape =
                [snapshot.objectID.entity.rawValue]
                + columns.map { $0.placeholder == "?" ? 0 : $0.placeholder == "CAST(? AS BLOB)" ? 1 : 2 }
            for (i, column) in (orders.columnsByTable[table] ?? []).enumerated() {
                guard let place = orders.place(of: snapshot.objectID, in: column) else { continue }
                columns.append(Column(name: column, placeholder: "?", value: place.databaseValue))
                shape.append(3 + i)  // which order columns this row's INSERT names
            }
            do {
                let statement: Statement
                if let prepared = insertStatements[shape] {
                    statement = prepared
                } else {
                    let names = (["Z_PK", "Z_ENT", "Z_OPT"] + columns.map { $0.name }).map {
                        $0.quotedDatabaseIdentifier
                    }
                    .joined(separator: ", ")
                    let sql =
                        "INSERT INTO \(table.quotedDatabaseIdentifier) (\(names)) VALUES (?, ?, 1\(columns.map { ", " + $0.placeholder }.joined()))"
                    statement = try db.makeStatement(sql: sql)
                    insertStatements[shape] = statement
                }
                var values: [DatabaseValue] = [snapshot.objectID.key.rawValue.databaseValue, zent.databaseValue]
                values.reserveCapacity(columns.count + 2)
                for column in columns { values.append(column.value) }
                try execute(db, statement, values)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw ObjectGraphError(
                    .exists,
                    "\(name(of: snapshot.objectID)) cannot be inserted: \(error.message ?? "a row with its key already exists")",
                    objects: [snapshot.objectID])
            } catch {
                throw Self.mapError(error, file: path)
            }
            maxKeys[rootZent] = max(maxKeys[rootZent] ?? 0, snapshot.objectID.key.rawValue)
            written.insert(snapshot.objectID)
        }
        // A migration carries the old store's counters (keys of objects deleted before it stay used).
        for (root, counter) in request.keyCounters {
            guard root.rawValue >= 1, root.rawValue <= layout.entities.count, let zent = layout[root].zent,
                layout[root].rootID == root, counter > 0
            else { continue }
            maxKeys[zent] = max(maxKeys[zent] ?? 0, counter)
        }
        for (rootZent, key) in maxKeys.sorted(by: { $0.key < $1.key }) {
            // A Z_MAX that is not an integer (NULL, or text another tool left) counts as below every key.
            _ = try run(
                "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ? AND (typeof(Z_MAX) != 'integer' OR Z_MAX < ?)",
                [key, rootZent, key])
        }
        // Updates: only the columns that changed, and only where the row still holds what was read
        // there; columns this save does not change stay as another process may have left them.
        let updates = request.updated.filter { !$0.isEmpty }
        if !updates.isEmpty {
            var current: [ObjectID: Snapshot] = [:]
            for snapshot in try readSnapshots(db, for: updates.map(\.objectID)) {
                current[snapshot.objectID] = snapshot
            }
            for update in updates {
                guard let stored = current[update.objectID] else { throw conflict(update.objectID, deleted: true) }
                let changedAttributes = update.changedAttributes
                let changedToOne = update.changedToOne
                if changedAttributes.contains(where: { stored.attributes[$0] != update.original.attributes[$0] })
                    || changedToOne.contains(where: { stored.toOne[$0] != update.original.toOne[$0] })
                {
                    throw conflict(update.objectID, deleted: false)
                }
                if let computed = changedAttributes.first(where: {
                    mechanisms.isComputed($0, of: update.objectID.entity)
                }) {
                    throw computedAttribute(computed, of: layout[update.objectID.entity].name, object: update.objectID)
                }
                let (table, zent, _) = try place(of: update.objectID)
                try noteReplacedExternalData(of: update.objectID, attributes: Set(changedAttributes), db, &files)
                let columns = try rowColumns(
                    of: update.snapshot, attributes: Set(changedAttributes), toOne: Set(changedToOne), files: &files)
                let sets =
                    columns.map { "\($0.name.quotedDatabaseIdentifier) = \($0.placeholder)" } + ["Z_OPT = Z_OPT + 1"]
                let sql =
                    "UPDATE \(table.quotedDatabaseIdentifier) SET \(sets.joined(separator: ", ")) WHERE Z_PK = ? AND Z_ENT = ?"
                let changed = try run(
                    sql,
                    StatementArguments(
                        columns.map(\.value) + [update.objectID.key.rawValue.databaseValue, zent.databaseValue]),
                    cached: false)
                if changed == 0 { throw conflict(update.objectID, deleted: true) }
                written.update(update.objectID, changedAttributes + changedToOne)
            }
            try repairOneToOne(updates, db, &written)
        }
        try bumpVersionsOfToManyChanges(request, run: run, &written)
        // Deletes, with the version check, and the join-table rows that name the object.
        for deletion in request.deleted {
            let (table, zent, _) = try place(of: deletion.objectID)
            let key = deletion.objectID.key.rawValue
            let tombstone = try tombstoneValues(of: deletion.objectID, db)
            try noteReplacedExternalData(of: deletion.objectID, attributes: nil, db, &files)
            let changed = try run(
                "DELETE FROM \(table.quotedDatabaseIdentifier) WHERE Z_PK = ? AND Z_ENT = ? AND Z_OPT = ?",
                [key, zent, deletion.expectedVersion])
            if changed == 0 { throw conflict(deletion.objectID, deleted: try !rowExists(db, table: table, key: key)) }
            let root = layout[deletion.objectID.entity].rootID
            for join in layout.joinTables where join.root == root {
                _ = try run(
                    "DELETE FROM \(join.table.quotedDatabaseIdentifier) WHERE \(join.column.quotedDatabaseIdentifier) = ?",
                    [key])
            }
            try clearHiddenKeys(of: key, root: root, run: run)
            written.deleted.append((deletion.objectID, tombstone))
        }
        try clearKeys(to: request.deleted.map(\.objectID), db, &written)
        try applyToManyChanges(request.toManyChanges, db, orderedByInsert: orders)
        if let metadata = request.metadata {
            let plist = try MetadataCoding.encode(metadata)
            _ = try run("UPDATE Z_METADATA SET Z_UUID = IFNULL(?, Z_UUID), Z_PLIST = ?", [metadata.storeUUID, plist])
        }
    }

    private func rowExists(_ db: Database, table: String, key: Int64) throws(ObjectGraphError) -> Bool {
        do {
            return try !rows(db, "SELECT 1 FROM \(table.quotedDatabaseIdentifier) WHERE Z_PK = ?", [key]).isEmpty
        } catch {
            throw Self.mapError(error, file: path)
        }
    }

    /// Writes to-many changes as differences: pairs and keys this save removes or adds, so what
    /// another process changed in the same relationship stays. Ordered relationships rewrite
    /// their order columns from the new order.
    private func applyToManyChanges(
        _ changes: [SaveRequest.ToManyChange], _ db: Database, orderedByInsert: InsertedOrders
    ) throws(ObjectGraphError) {
        // Statements prepared once per SQL text, run once per pair or destination.
        func prepared(_ sql: String) throws(ObjectGraphError) -> Statement {
            do { return try db.cachedStatement(sql: sql) } catch { throw Self.mapError(error, file: path) }
        }
        func run(_ statement: Statement, _ values: [DatabaseValue]) throws(ObjectGraphError) {
            do { try execute(db, statement, values) } catch { throw Self.mapError(error, file: path) }
        }
        // Join tables: removed pairs go, added pairs come, per table in a few statements.
        /// A join row's two keys, in the order of its key columns' names.
        struct JoinPair: Hashable, Comparable {
            var first: Int64
            var second: Int64
            static func < (a: JoinPair, b: JoinPair) -> Bool { (a.first, a.second) < (b.first, b.second) }
            var values: [DatabaseValue] { [first.databaseValue, second.databaseValue] }
        }
        struct JoinWork {
            var keyColumns: [String] = []
            var orderColumns: [String] = []
            var removed: [JoinPair] = []
            var pairs: [JoinPair: [String: Int64]] = [:]
        }
        var joins: [String: JoinWork] = [:]
        for change in changes {
            let entityLayout = try entityLayout(change.source.entity)
            guard let mapping = entityLayout.toMany[change.relationship] else {
                throw ObjectGraphError(
                    .notFound, "entity \(entityLayout.name) has no to-many relationship \(change.relationship)",
                    objects: [change.source])
            }
            let source = change.source.key.rawValue
            switch mapping {
            case .missing:
                throw ObjectGraphError(
                    .unsupported,
                    "\(path) has no place to store \(entityLayout.name).\(change.relationship); it cannot be changed",
                    objects: [change.source])
            case .foreignKey(let table, let column, let orderColumn, let isInverseToOne):
                let t = table.quotedDatabaseIdentifier
                let c = column.quotedDatabaseIdentifier
                let sourceValue = source.databaseValue
                if !isInverseToOne {
                    // No inverse: the hidden key column is this relationship's only record.
                    let clearOrder = orderColumn.map { ", \($0.quotedDatabaseIdentifier) = NULL" } ?? ""
                    let removed = change.removed
                    if !removed.isEmpty {
                        let clear = try prepared("UPDATE \(t) SET \(c) = NULL\(clearOrder) WHERE Z_PK = ? AND \(c) = ?")
                        for destination in removed {
                            try run(clear, [destination.key.rawValue.databaseValue, sourceValue])
                        }
                    }
                    let added = change.added
                    if !added.isEmpty {
                        let set = try prepared("UPDATE \(t) SET \(c) = ? WHERE Z_PK = ?")
                        for destination in added { try run(set, [sourceValue, destination.key.rawValue.databaseValue]) }
                    }
                }
                // The inverse to-one is in the destinations' updates; only the order is written here.
                if let orderColumn, !change.destinations.isEmpty {
                    let order = try prepared(
                        "UPDATE \(t) SET \(orderColumn.quotedDatabaseIdentifier) = ? WHERE Z_PK = ? AND \(c) = ?")
                    for (i, destination) in change.destinations.enumerated() {
                        let place = Int64(i + 1) * 1024
                        // Rows this save inserted got their place from the INSERT.
                        if isInverseToOne, orderedByInsert.place(of: destination, in: orderColumn) == place { continue }
                        try run(order, [place.databaseValue, destination.key.rawValue.databaseValue, sourceValue])
                    }
                }
            case .joinTable(let table, let sourceColumn, let destinationColumn, let orderColumn, _, _):
                // Taken out of the dictionary while it changes: a copy left there would make every
                // change copy all pairs so far (a migration of 100,000 objects took minutes).
                var work = joins.removeValue(forKey: table) ?? JoinWork()
                if work.keyColumns.isEmpty { work.keyColumns = [sourceColumn, destinationColumn].sorted() }
                if let orderColumn, !work.orderColumns.contains(orderColumn) { work.orderColumns.append(orderColumn) }
                let sourceFirst = work.keyColumns[0] == sourceColumn
                func pair(_ destination: ObjectID) -> JoinPair {
                    let key = destination.key.rawValue
                    return sourceFirst ? JoinPair(first: source, second: key) : JoinPair(first: key, second: source)
                }
                for destination in change.removed { work.removed.append(pair(destination)) }
                // What was added is among the destinations: as many means all of them (an insert).
                let addedIDs = change.added
                let allAdded = addedIDs.count == change.destinations.count
                let added = allAdded ? [] : Set(addedIDs)
                for (i, destination) in change.destinations.enumerated()
                where allAdded || added.contains(destination) || orderColumn != nil {
                    var orders = work.pairs[pair(destination)] ?? [:]
                    if let orderColumn { orders[orderColumn] = Int64(i + 1) * 1024 }
                    work.pairs[pair(destination)] = orders
                }
                joins[table] = work
            }
        }
        for (table, work) in joins.sorted(by: { $0.key < $1.key }) {
            let t = table.quotedDatabaseIdentifier
            let match = work.keyColumns.map { "\($0.quotedDatabaseIdentifier) = ?" }.joined(separator: " AND ")
            if !work.removed.isEmpty {
                let delete = try prepared("DELETE FROM \(t) WHERE \(match)")
                for pair in work.removed { try run(delete, pair.values) }
            }
            guard !work.pairs.isEmpty else { continue }
            let columns = work.keyColumns + work.orderColumns
            let insert = try prepared(
                "INSERT OR IGNORE INTO \(t) (\(columns.map { $0.quotedDatabaseIdentifier }.joined(separator: ", "))) VALUES "
                    + "(\(columns.map { _ in "?" }.joined(separator: ", ")))")
            var reorders: [String: Statement] = [:]
            for (pair, orders) in work.pairs.sorted(by: { $0.key < $1.key }) {
                let keys = pair.values
                try run(insert, keys + work.orderColumns.map { orders[$0]?.databaseValue ?? .null })
                for (column, order) in orders.sorted(by: { $0.key < $1.key }) {
                    // A pair that was there already keeps its row; only its place in the order moves.
                    let reorder: Statement
                    if let statement = reorders[column] {
                        reorder = statement
                    } else {
                        reorder = try prepared("UPDATE \(t) SET \(column.quotedDatabaseIdentifier) = ? WHERE \(match)")
                        reorders[column] = reorder
                    }
                    try run(reorder, [order.databaseValue] + keys)
                }
            }
        }
    }

    /// Clears the hidden key columns that hold a deleted object's key: a to-many relationship
    /// without inverse lives only in its destinations' rows, which the engine does not rewrite
    /// when the source goes, so the store does (no row is left pointing at the deleted object).
    private func clearHiddenKeys(
        of key: Int64, root: EntityID, run: (String, StatementArguments, Bool) throws(ObjectGraphError) -> Int
    ) throws(ObjectGraphError) {
        for hidden in layout.hiddenKeyColumns where hidden.root == root {
            let c = hidden.column.quotedDatabaseIdentifier
            let order = hidden.orderColumn.map { ", \($0.quotedDatabaseIdentifier) = NULL" } ?? ""
            _ = try run(
                "UPDATE \(hidden.table.quotedDatabaseIdentifier) SET \(c) = NULL\(order) WHERE \(c) = ?", [key], true)
        }
    }

    /// One column of a row to write: its name, the SQL placeholder and the value.
    private struct Column {
        var name: String
        var placeholder: String
        var value: DatabaseValue
    }

    /// The columns of a snapshot's row: every mapped column (a missing name writes NULL), or only
    /// those of the given attributes and to-one relationships.
    private func rowColumns(
        of snapshot: Snapshot, attributes only: Set<String>? = nil, toOne onlyToOne: Set<String>? = nil,
        files: inout ExternalDataChanges
    ) throws(ObjectGraphError) -> [Column] {
        let id = snapshot.objectID
        let entityLayout = layout[id.entity]
        let computed = mechanisms.computedAttributes[id.entity]
        var columns: [Column] = []
        columns.reserveCapacity(entityLayout.attributes.count + entityLayout.toOne.count)
        // Elements are read in place (a loop variable would copy every attribute's description per
        // row, a tenth of a bulk insert); values found are counted to check the snapshot below.
        var found = 0
        let attributes = entityLayout.attributes
        for i in attributes.indices {
            let name = attributes[i].attribute.name
            let value = snapshot.attributes[name]
            if value != nil { found += 1 }
            if let only, !only.contains(name) { continue }
            // Left to the triggers that compute it (an insert's trigger fills it in).
            if let computed, computed.contains(name) { continue }
            guard let column = attributes[i].column else {
                if value != nil {
                    throw ObjectGraphError(
                        .unsupported, "\(path) has no column for \(entityLayout.name).\(name); it cannot be set",
                        objects: [id])
                }
                continue
            }
            var encoded: DatabaseValue
            do {
                encoded = try ValueCoding.encode(value, as: attributes[i].attribute, entity: entityLayout.name)
            } catch {
                throw ObjectGraphError(error.code, error.message, objects: [id])
            }
            if attributes[i].attribute.allowsExternalBinaryDataStorage, case .blob(let data) = encoded.storage {
                encoded = try mechanisms.externalData.encode(data, changes: &files)
            }
            var placeholder = "?"
            if case .blob(let data) = encoded.storage, data.isEmpty {
                // An empty Data binds as NULL; CAST keeps it an empty BLOB.
                encoded = "".databaseValue
                placeholder = "CAST(? AS BLOB)"
            } else if case .string(let text) = encoded.storage, text.utf8.contains(0) {
                // GRDB binds strings as C strings, cut at an embedded NUL; as a BLOB cast to TEXT
                // every byte is stored.
                encoded = Data(text.utf8).databaseValue
                placeholder = "CAST(? AS TEXT)"
            }
            columns.append(Column(name: column, placeholder: placeholder, value: encoded))
        }
        // Every name the snapshot holds must be an attribute the layout maps (or a transient one):
        // searched name by name only when the count says one is not.
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
                        .unsupported, "\(path) has no column for \(entityLayout.name).\(toOne.name)", objects: [id])
                }
                continue
            }
            columns.append(
                Column(name: column, placeholder: "?", value: destination?.key.rawValue.databaseValue ?? .null))
            if let entityColumn = toOne.entityColumn {
                columns.append(
                    Column(
                        name: entityColumn, placeholder: "?",
                        value: destination.flatMap { layout[$0.entity].zent }?.databaseValue ?? .null))
            }
        }
        return columns
    }

    /// Table, Z_ENT and root Z_ENT of an object to write.
    func place(of id: ObjectID) throws(ObjectGraphError) -> (String, Int64, Int64) {
        try layout.place(of: id, in: path)
    }

    private func name(of id: ObjectID) -> String { "\(layout[id.entity].name) \(id.key)" }

    func conflict(_ id: ObjectID, deleted: Bool) -> ObjectGraphError {
        ObjectGraphError(
            .conflict,
            "\(name(of: id)) was \(deleted ? "deleted" : "changed") in \(path) by another process since it was read; "
                + "that change is kept and this one is not saved",
            objects: [id])
    }
}
