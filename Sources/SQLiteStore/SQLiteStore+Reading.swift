import CoreDataSchema
import Foundation
import GRDB
import GRDBSQLite
import ObjectGraph

extension SQLiteStore {
    public func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] {
        let entityLayout = try entityLayout(entity)
        guard let table = entityLayout.table, let zent = entityLayout.zent else { return [] }
        var ids: [ObjectID] = []
        try read { (db: Database) throws -> Void in
            // A Z_PK that is not a positive integer (a table not declared the way Core Data
            // declares it, or a hand-edited key) names no object: such rows are left out, here
            // and in count(of:), and nothing downstream (names p<N>, XML ids z<N>, the binary
            // format's unsigned keys) meets a key below 1.
            let sql =
                "SELECT Z_PK FROM \(table.quotedDatabaseIdentifier) WHERE Z_ENT = \(zent) AND \(Self.objectKeyCondition) ORDER BY Z_PK"
            try eachRow(db, sql, cached: true) { row in
                if let key = Self.key(in: DatabaseValue(sqliteStatement: row, index: 0)) {
                    ids.append(ObjectID(entity: entity, key: PrimaryKey(key)))
                }
            }
        }
        return ids
    }

    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        let entityLayout = try entityLayout(entity)
        guard let table = entityLayout.table, let zent = entityLayout.zent else { return 0 }
        return try read { db in
            let count = try rows(
                db,
                "SELECT COUNT(*) FROM \(table.quotedDatabaseIdentifier) WHERE Z_ENT = ? AND \(Self.objectKeyCondition)",
                [zent])
            return Int(clamping: count.first?.storedValues.first?.storedInteger ?? 0)
        }
    }

    /// The rows that are objects: a positive integer key.
    static let objectKeyCondition = "typeof(Z_PK) = 'integer' AND Z_PK > 0"

    /// One `SELECT ... WHERE Z_PK IN (...)` per root table involved. Keys are written into the SQL
    /// as integer literals rather than bound, so no variable limit applies and no chunking is needed.
    public func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] {
        try read { db throws in try readSnapshots(db, for: ids) }
    }

    /// ``snapshots(for:)`` on a given connection: a save reads the rows it updates inside its own
    /// transaction.
    func readSnapshots(_ db: Database, for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] {
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
            try readSnapshots(db, table: table, root: group.root, ids: group.ids, into: &found)
        }
        return ids.compactMap { found[$0] }
    }

    /// How one entity's row is read: which selected column holds each attribute and to-one key,
    /// worked out once per query rather than once per row.
    struct RowPlan {
        /// `external`: the attribute allows Core Data's external storage (its column holds a marker).
        var attributes: [(name: String, type: AttributeType, column: Int, external: Bool)] = []
        var toOne: [(name: String, destination: EntityID, column: Int, entityColumn: Int?)] = []
        /// The names of both, shared by every snapshot read of the entity, and each one's slot.
        var names = StoreLayout.SnapshotNames()
        /// The entity's name, for messages: taken here once, not from the layout per row.
        var entityName = ""
    }

    /// The columns to select after `Z_PK, Z_ENT, Z_OPT` to read the rows of the tree of `root`
    /// (qualified by `alias` when given), and how each entity's row is read from them.
    func rowPlans(forRoot root: EntityID, alias: String? = nil) -> (columns: [String], plans: [EntityID: RowPlan]) {
        // Every column any entity of the tree maps, each selected once.
        var index: [String: Int] = [:]
        var expressions: [String] = []
        let prefix = alias.map { $0 + "." } ?? ""
        func add(_ column: String?, text: Bool = false) -> Int? {
            guard let column else { return nil }
            if let known = index[column] { return known }
            index[column] = expressions.count + 3
            // GRDB reads TEXT as a C string, which would cut a string at an embedded NUL; as a
            // BLOB every byte arrives (and is decoded as UTF-8).
            let name = prefix + column.quotedDatabaseIdentifier
            expressions.append(text ? "CAST(\(name) AS BLOB)" : name)
            return expressions.count + 2
        }
        var plans: [EntityID: RowPlan] = [:]
        for id in model.entityAndSubentities(of: root) {
            var plan = RowPlan()
            for attribute in layout[id].attributes {
                let type = attribute.attribute.type
                guard let column = add(attribute.column, text: type == .string || type == .uri) else { continue }
                plan.attributes.append(
                    (attribute.attribute.name, type, column, attribute.attribute.allowsExternalBinaryDataStorage))
            }
            for toOne in layout[id].toOne {
                guard let column = add(toOne.column) else { continue }
                plan.toOne.append((toOne.name, toOne.destination, column, add(toOne.entityColumn)))
            }
            // Made once per entity with the layout (the same attributes and to-ones, those with a
            // column, in the same order), so rows of every query share them.
            plan.names = layout[id].snapshotNames
            plan.entityName = layout[id].name
            plans[id] = plan
        }
        return (expressions, plans)
    }

    private func readSnapshots(
        _ db: Database, table: String, root: EntityID, ids: [PrimaryKey: [ObjectID]],
        into found: inout [ObjectID: Snapshot]
    ) throws(ObjectGraphError) {
        let (expressions, plans) = rowPlans(forRoot: root)
        let selected = (["Z_PK", "Z_ENT", "Z_OPT"] + expressions).joined(separator: ", ")
        let keys = ids.keys.map { String($0.rawValue) }.joined(separator: ",")
        let sql = "SELECT \(selected) FROM \(table.quotedDatabaseIdentifier) WHERE Z_PK IN (\(keys))"
        try eachRow(db, sql) { (row) throws(ObjectGraphError) in
            // Z_PK and Z_ENT are integers (or their digits as text, in a table another tool
            // rebuilt); a row where they hold anything else is not one of the objects asked for.
            guard let pk = Self.key(in: DatabaseValue(sqliteStatement: row, index: 0)),
                let zent = Self.key(in: DatabaseValue(sqliteStatement: row, index: 1)),
                let entity = layout.entityByZent[zent],
                let id = ids[PrimaryKey(pk)]?.first(where: { $0.entity == entity }),
                let plan = plans[entity]
            else { return }
            do throws(ObjectGraphError) {
                found[id] = try snapshot(from: row, id: id, plan: plan)
            } catch {
                // A row that does not decode is named by entity, property and key; say which file.
                throw error.message.hasPrefix(path) ? error : ObjectGraphError(error.code, "\(path): \(error.message)")
            }
        }
    }

    /// Runs one counted query and hands each row to `body` as the raw SQLite statement, whose
    /// columns are read by index (``DatabaseValue/init(sqliteStatement:index:)``): GRDB's `Row`
    /// copies every row and looks up type metadata per column, about a fifth of the time of
    /// listing a large entity or reading a store to migrate it.
    /// `cached` as for ``rows(_:_:_:cached:)``: only SQL that repeats (no literal keys in it).
    func eachRow(
        _ db: Database, _ sql: String, cached: Bool = false, arguments: StatementArguments? = nil,
        _ body: (SQLiteStatement) throws(ObjectGraphError) -> Void
    ) throws(ObjectGraphError) {
        requests.add(1, ordering: .relaxed)
        let statement: Statement
        do {
            statement = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
            if let arguments { try statement.setArguments(arguments) }
        } catch {
            throw Self.mapError(error, file: path)
        }
        let raw = statement.sqliteStatement
        defer { sqlite3_reset(raw) }
        while true {
            let code = sqlite3_step(raw)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw Self.mapError(Self.stepError(code, db, sql: sql), file: path) }
            try body(raw)
        }
    }

    func snapshot(from row: SQLiteStatement, id: ObjectID, plan: RowPlan) throws(ObjectGraphError) -> Snapshot {
        let entityName = plan.entityName
        var snapshot = Snapshot(
            objectID: id,
            version: Self.integer(row, 2),
            attributes: PropertyValues(layout: plan.names.attributes), toOne: PropertyValues(layout: plan.names.toOne))
        for (attribute, slot) in zip(plan.attributes, plan.names.attributeSlots) {
            if !attribute.external,
                case .some(let value) = ValueCoding.directValue(of: row, at: CInt(attribute.column), as: attribute.type)
            {
                if let value { snapshot.attributes.setValue(value, slot: slot) }
                continue
            }
            var stored = DatabaseValue(sqliteStatement: row, index: CInt(attribute.column))
            if stored.isNull { continue }
            if attribute.external {
                stored = mechanisms.externalData.resolve(
                    stored, place: "\(entityName).\(attribute.name) of p\(id.key.rawValue)")
            }
            let place = ValueCoding.Place(entity: entityName, attribute: attribute.name, key: id.key.rawValue)
            if let value = try ValueCoding.decode(stored, as: attribute.type, at: place) {
                snapshot.attributes.setValue(value, slot: slot)
            }
        }
        for (toOne, slot) in zip(plan.toOne, plan.names.toOneSlots) {
            guard let destinationKey = Self.key(row, CInt(toOne.column)) else {
                let value = DatabaseValue(sqliteStatement: row, index: CInt(toOne.column))
                if !value.isNull {
                    throw ObjectGraphError(
                        .corruptStore,
                        "\(entityName).\(toOne.name) of object p\(id.key.rawValue) holds \(ValueCoding.describe(value)), "
                            + "not the key of a \(model[toOne.destination].name)")
                }
                continue
            }
            // A key below 1 is no object's (objectIDs leaves such rows out): a dangling reference.
            guard destinationKey > 0 else { continue }
            var destination = toOne.destination
            if let j = toOne.entityColumn, let actual = Self.key(row, CInt(j)) {
                guard let mapped = layout.entityByZent[actual] else {
                    logger.warning("\(entityName).\(toOne.name) of p\(id.key.rawValue) names unknown Z_ENT \(actual)")
                    continue
                }
                destination = mapped
            }
            snapshot.toOne.setValue(ObjectID(entity: destination, key: PrimaryKey(destinationKey)), slot: slot)
        }
        return snapshot
    }

    /// ``key(in:)`` of column `index` of the current row: an INTEGER read straight from SQLite
    /// (nearly every key), anything else through a `DatabaseValue`.
    static func key(_ row: SQLiteStatement, _ index: CInt) -> Int64? {
        if sqlite3_column_type(row, index) == SQLITE_INTEGER { return sqlite3_column_int64(row, index) }
        return key(in: DatabaseValue(sqliteStatement: row, index: index))
    }

    /// `integer(_:)` of a `DatabaseValue` (0 for what is not an integer) of column `index` of the
    /// current row, an INTEGER read straight from SQLite as for keys.
    static func integer(_ row: SQLiteStatement, _ index: CInt) -> Int64 {
        if sqlite3_column_type(row, index) == SQLITE_INTEGER { return sqlite3_column_int64(row, index) }
        return integer(DatabaseValue(sqliteStatement: row, index: index))
    }

    /// A key column's value: an integer, or the same digits as text (a table rebuilt by another
    /// tool without column types).
    static func key(in value: DatabaseValue) -> Int64? {
        switch value.storage {
        case .int64(let key): key
        case .string(let text): Int64(text)
        default: nil
        }
    }

    public func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]
    {
        let lists = try toManyDestinationLists(of: relationship, in: entity, for: sources)
        var result: [ObjectID: [ObjectID]] = Dictionary(minimumCapacity: sources.count)
        for (source, list) in zip(sources, lists) where result[source] == nil { result[source] = list }
        return result
    }

    public func toManyDestinationLists(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [[ObjectID]]
    {
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
        // The keys as a range when they are dense (a page read by key): one statement prepared
        // once and bound per page; rows in the range for other keys are passed over below.
        // Sparse keys are listed, so a few sources never walk a wide range.
        let (span, overflow) = highest.subtractingReportingOverflow(lowest)
        let asRange = !overflow && span < Int64(sources.count) * 4
        let condition = { (column: String) -> String in
            asRange
                ? "\(column) BETWEEN :lowest AND :highest"
                : "\(column) IN (\(Set(byKey.map(\.key)).sorted().map(String.init).joined(separator: ",")))"
        }
        let sql: String
        switch mapping {
        case .missing:
            return lists
        case .foreignKey(let table, let column, let orderColumn, _):
            let c = column.quotedDatabaseIdentifier
            let order = orderColumn.map { "\($0.quotedDatabaseIdentifier), " } ?? ""
            sql =
                "SELECT \(c), Z_PK, Z_ENT FROM \(table.quotedDatabaseIdentifier) WHERE \(condition(c)) ORDER BY \(c), \(order)Z_PK"
        case .joinTable(let table, let sourceColumn, let destinationColumn, let orderColumn, let destinationTable, _):
            let s = "j." + sourceColumn.quotedDatabaseIdentifier
            let d = "j." + destinationColumn.quotedDatabaseIdentifier
            let order = orderColumn.map { "j.\($0.quotedDatabaseIdentifier), " } ?? ""
            sql =
                "SELECT \(s), \(d), t.Z_ENT FROM \(table.quotedDatabaseIdentifier) j JOIN \(destinationTable.quotedDatabaseIdentifier) t "
                + "ON t.Z_PK = \(d) WHERE \(condition(s)) ORDER BY \(s), \(order)\(d)"
        }
        let arguments: StatementArguments? = asRange ? ["lowest": lowest, "highest": highest] : nil
        // The first entry of byKey at or after the last row's key.
        var cursor = 0
        // A source's rows come together: gathered here, then copied once to its list (or lists),
        // rather than each list growing by doubling.
        var run = (cursor: -1, destinations: [ObjectID]())
        func finish(_ run: (cursor: Int, destinations: [ObjectID])) {
            guard run.cursor >= 0, !run.destinations.isEmpty else { return }
            // Its own storage, just large enough: sharing the run's would keep its spare room.
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
        try read { (db: Database) throws -> Void in
            try eachRow(db, sql, cached: asRange, arguments: arguments) { (row) throws(ObjectGraphError) in
                // Keys and Z_ENT that are not integers (a damaged row) name no object.
                guard let sourceKey = Self.key(row, 0), let key = Self.key(row, 1), key > 0,
                    let zent = Self.key(row, 2)
                else { return }
                // Forward as the rows go; back (a binary search) only if SQLite ever ordered
                // otherwise.
                if cursor > 0 && byKey[cursor - 1].key >= sourceKey {
                    cursor = Self.firstIndex(atLeast: sourceKey, in: byKey)
                }
                while cursor < byKey.count && byKey[cursor].key < sourceKey { cursor += 1 }
                guard cursor < byKey.count, byKey[cursor].key == sourceKey else { return }
                if lastEntity?.zent != zent {
                    guard let destination = layout.entityByZent[zent] else {
                        logger.warning("\(entityLayout.name).\(relationship) reaches a row of unknown Z_ENT \(zent)")
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
        }
        finish(run)
        return lists
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
