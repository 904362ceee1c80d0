import Foundation
import GRDB
import ObjectGraph

extension SQLiteStore {
    /// Applies a save in one write transaction; any error (a version conflict included) rolls
    /// back everything.
    ///
    /// Order: inserts (and Z_MAX), updates, deletes (and their join-table rows), to-many changes,
    /// metadata. Ordered relationships get Z_FOK_ values 1024, 2048, ... in their order.
    public func save(_ request: SaveRequest) throws(ObjectGraphError) {
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(path) is open read-only") }
        guard !request.isEmpty else { return }
        try refuseTextKeyTables(request)
        try write { db throws in
            try apply(request, db)
        }
    }

    private func apply(_ request: SaveRequest, _ db: Database) throws(ObjectGraphError) {
        func run(_ sql: String, _ arguments: StatementArguments = [], cached: Bool = true) throws(ObjectGraphError) -> Int {
            do { return try execute(db, sql, arguments, cached: cached) } catch { throw Self.mapError(error, file: path) }
        }
        // Inserts.
        var maxKeys: [Int64: Int64] = [:]
        for snapshot in request.inserted {
            let (table, zent, rootZent) = try place(of: snapshot.objectID)
            let (columns, placeholders, values) = try rowValues(of: snapshot)
            let names = (["Z_PK", "Z_ENT", "Z_OPT"] + columns).map(\.quotedDatabaseIdentifier).joined(separator: ", ")
            let sql =
                "INSERT INTO \(table.quotedDatabaseIdentifier) (\(names)) VALUES (?, ?, 1\(placeholders.map { ", " + $0 }.joined()))"
            do {
                _ = try execute(db, sql, StatementArguments([snapshot.objectID.key.rawValue, zent] + values))
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw ObjectGraphError(
                    .exists, "\(name(of: snapshot.objectID)) cannot be inserted: \(error.message ?? "a row with its key already exists")")
            } catch {
                throw Self.mapError(error, file: path)
            }
            maxKeys[rootZent] = max(maxKeys[rootZent] ?? 0, snapshot.objectID.key.rawValue)
        }
        for (rootZent, key) in maxKeys.sorted(by: { $0.key < $1.key }) {
            _ = try run("UPDATE Z_PRIMARYKEY SET Z_MAX = max(IFNULL(Z_MAX, 0), ?) WHERE Z_ENT = ?", [key, rootZent])
        }
        // Updates, with the optimistic-locking check.
        for snapshot in request.updated {
            let (table, zent, _) = try place(of: snapshot.objectID)
            let (columns, placeholders, values) = try rowValues(of: snapshot)
            let sets = zip(columns, placeholders).map { "\($0.quotedDatabaseIdentifier) = \($1)" } + ["Z_OPT = Z_OPT + 1"]
            let sql =
                "UPDATE \(table.quotedDatabaseIdentifier) SET \(sets.joined(separator: ", ")) WHERE Z_PK = ? AND Z_ENT = ? AND Z_OPT = ?"
            let changed = try run(sql, StatementArguments(values + [snapshot.objectID.key.rawValue, zent, snapshot.version]))
            if changed == 0 { throw conflict(snapshot.objectID, expected: snapshot.version, db) }
        }
        // Deletes, with the same check, and the join-table rows that name the object.
        for deletion in request.deleted {
            let (table, zent, _) = try place(of: deletion.objectID)
            let key = deletion.objectID.key.rawValue
            let changed = try run(
                "DELETE FROM \(table.quotedDatabaseIdentifier) WHERE Z_PK = ? AND Z_ENT = ? AND Z_OPT = ?",
                [key, zent, deletion.expectedVersion])
            if changed == 0 { throw conflict(deletion.objectID, expected: deletion.expectedVersion, db) }
            let root = layout[deletion.objectID.entity].rootID
            for join in layout.joinTables where join.root == root {
                _ = try run("DELETE FROM \(join.table.quotedDatabaseIdentifier) WHERE \(join.column.quotedDatabaseIdentifier) = ?", [key])
            }
            try clearHiddenKeys(of: key, root: root, run: run)
        }
        try applyToManyChanges(request.toManyChanges, run: run)
        if let metadata = request.metadata {
            let plist = try MetadataCoding.encode(metadata)
            _ = try run("UPDATE Z_METADATA SET Z_UUID = IFNULL(?, Z_UUID), Z_PLIST = ?", [metadata.storeUUID, plist])
        }
    }

    private func applyToManyChanges(
        _ changes: [SaveRequest.ToManyChange], run: (String, StatementArguments, Bool) throws(ObjectGraphError) -> Int
    ) throws(ObjectGraphError) {
        // Join tables: the final pairs of every listed source replace its old ones.
        struct JoinWork {
            var deletions: [String: Set<Int64>] = [:]
            var keyColumns: [String] = []
            var orderColumns: [String] = []
            var pairs: [[Int64]: [String: Int64]] = [:]
        }
        var joins: [String: JoinWork] = [:]
        for change in changes {
            let entityLayout = try entityLayout(change.source.entity)
            guard let mapping = entityLayout.toMany[change.relationship] else {
                throw ObjectGraphError(.notFound, "entity \(entityLayout.name) has no to-many relationship \(change.relationship)")
            }
            let source = change.source.key.rawValue
            switch mapping {
            case .missing:
                throw ObjectGraphError(
                    .unsupported, "\(path) has no place to store \(entityLayout.name).\(change.relationship); it cannot be changed")
            case .foreignKey(let table, let column, let orderColumn, let isInverseToOne):
                let t = table.quotedDatabaseIdentifier
                let c = column.quotedDatabaseIdentifier
                if !isInverseToOne {
                    // No inverse: the hidden key column is this relationship's only record.
                    let clearOrder = orderColumn.map { ", \($0.quotedDatabaseIdentifier) = NULL" } ?? ""
                    _ = try run("UPDATE \(t) SET \(c) = NULL\(clearOrder) WHERE \(c) = ?", [source], true)
                    for destination in change.destinations {
                        _ = try run("UPDATE \(t) SET \(c) = ? WHERE Z_PK = ?", [source, destination.key.rawValue], true)
                    }
                }
                // The inverse to-one is in the destinations' snapshots; only the order is written here.
                if let orderColumn {
                    for (i, destination) in change.destinations.enumerated() {
                        _ = try run(
                            "UPDATE \(t) SET \(orderColumn.quotedDatabaseIdentifier) = ? WHERE Z_PK = ?",
                            [Int64(i + 1) * 1024, destination.key.rawValue], true)
                    }
                }
            case .joinTable(let table, let sourceColumn, let destinationColumn, let orderColumn, _, _):
                // Taken out of the dictionary while it changes: a copy left there would make every
                // change copy all pairs so far (a migration of 100,000 objects took minutes).
                var work = joins.removeValue(forKey: table) ?? JoinWork()
                if work.keyColumns.isEmpty { work.keyColumns = [sourceColumn, destinationColumn].sorted() }
                work.deletions[sourceColumn, default: []].insert(source)
                if let orderColumn, !work.orderColumns.contains(orderColumn) { work.orderColumns.append(orderColumn) }
                for (i, destination) in change.destinations.enumerated() {
                    let values = [sourceColumn: source, destinationColumn: destination.key.rawValue]
                    let pair = work.keyColumns.map { values[$0]! }
                    var orders = work.pairs[pair] ?? [:]
                    if let orderColumn { orders[orderColumn] = Int64(i + 1) * 1024 }
                    work.pairs[pair] = orders
                }
                joins[table] = work
            }
        }
        for (table, work) in joins.sorted(by: { $0.key < $1.key }) {
            let t = table.quotedDatabaseIdentifier
            for (column, keys) in work.deletions.sorted(by: { $0.key < $1.key }) {
                let list = keys.sorted().map(String.init).joined(separator: ",")
                _ = try run("DELETE FROM \(t) WHERE \(column.quotedDatabaseIdentifier) IN (\(list))", [], false)
            }
            let columns = work.keyColumns + work.orderColumns
            let sql =
                "INSERT OR REPLACE INTO \(t) (\(columns.map(\.quotedDatabaseIdentifier).joined(separator: ", "))) VALUES "
                + "(\(columns.map { _ in "?" }.joined(separator: ", ")))"
            for (pair, orders) in work.pairs.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                let values: [DatabaseValue] = pair.map(\.databaseValue) + work.orderColumns.map { orders[$0]?.databaseValue ?? .null }
                _ = try run(sql, StatementArguments(values), true)
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
            _ = try run("UPDATE \(hidden.table.quotedDatabaseIdentifier) SET \(c) = NULL\(order) WHERE \(c) = ?", [key], true)
        }
    }

    /// The columns, SQL placeholders and values of a snapshot's row (every mapped column: a
    /// missing name writes NULL).
    private func rowValues(of snapshot: Snapshot) throws(ObjectGraphError) -> ([String], [String], [DatabaseValue]) {
        let entityLayout = layout[snapshot.objectID.entity]
        var columns: [String] = []
        var placeholders: [String] = []
        var values: [DatabaseValue] = []
        for name in snapshot.attributes.keys where !entityLayout.attributes.contains(where: { $0.attribute.name == name }) {
            if model[snapshot.objectID.entity].attribute(named: name)?.isTransient == true { continue }
            throw ObjectGraphError(.notFound, "entity \(entityLayout.name) has no attribute \(name)")
        }
        for attribute in entityLayout.attributes {
            let value = snapshot.attributes[attribute.attribute.name]
            guard let column = attribute.column else {
                if value != nil {
                    throw ObjectGraphError(
                        .unsupported, "\(path) has no column for \(entityLayout.name).\(attribute.attribute.name); it cannot be set")
                }
                continue
            }
            var encoded = try ValueCoding.encode(value, as: attribute.attribute, entity: entityLayout.name)
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
            columns.append(column)
            placeholders.append(placeholder)
            values.append(encoded)
        }
        for toOne in entityLayout.toOne {
            let destination = snapshot.toOne[toOne.name]
            guard let column = toOne.column else {
                if destination != nil {
                    throw ObjectGraphError(.unsupported, "\(path) has no column for \(entityLayout.name).\(toOne.name)")
                }
                continue
            }
            columns.append(column)
            placeholders.append("?")
            values.append(destination?.key.rawValue.databaseValue ?? .null)
            if let entityColumn = toOne.entityColumn {
                columns.append(entityColumn)
                placeholders.append("?")
                values.append(destination.flatMap { layout[$0.entity].zent }?.databaseValue ?? .null)
            }
        }
        return (columns, placeholders, values)
    }

    /// Table, Z_ENT and root Z_ENT of an object to write.
    private func place(of id: ObjectID) throws(ObjectGraphError) -> (String, Int64, Int64) {
        let entityLayout = try entityLayout(id.entity)
        let (table, rootZent) = try rootTable(of: id.entity)
        guard let zent = entityLayout.zent else {
            throw ObjectGraphError(.unsupported, "entity \(entityLayout.name) has no Z_PRIMARYKEY row in \(path)")
        }
        return (table, zent, rootZent)
    }

    private func name(of id: ObjectID) -> String { "\(layout[id.entity].name) \(id.key)" }

    private func conflict(_ id: ObjectID, expected: Int64, _ db: Database) -> ObjectGraphError {
        ObjectGraphError(
            .conflict,
            "\(name(of: id)) was changed or deleted in \(path) since it was read (version \(expected) expected); "
                + "nothing was saved: reload the object and try again")
    }
}
