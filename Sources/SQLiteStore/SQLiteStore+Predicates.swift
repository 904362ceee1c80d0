import Foundation
import GRDB
import ObjectGraph

extension SQLiteStore {
    /// Evaluates `predicate` as one SQL query; nil when ``PredicateTranslator`` declines it (the
    /// engine then evaluates it in memory and reports what is wrong with it).
    public func objectIDs(matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> [ObjectID]?
    {
        try exactly { (plainIntegerSums) throws(ObjectGraphError) -> [ObjectID]?? in
            guard let query = try selection(predicate, of: entity, includingSubentities, plainIntegerSums) else {
                return .some(nil)
            }
            guard let (selection, arguments) = query else { return [] }
            let sql = "SELECT t0.Z_PK, t0.Z_ENT FROM \(selection.from) WHERE \(selection.condition) ORDER BY t0.Z_PK"
            var ids: [ObjectID] = []
            let budget = QueryBudget.current
            let answered: Bool = try read { db in
                try bounded(db) {
                    try Self.overflowing {
                        try eachRow(db, sql, arguments: arguments) { (row) throws(ObjectGraphError) in
                            guard let key = Self.key(in: DatabaseValue(sqliteStatement: row, index: 0)),
                                let zent = Self.key(in: DatabaseValue(sqliteStatement: row, index: 1)),
                                let id = layout.entityByZent[zent]
                            else { return }
                            try budget?.visit()
                            try budget?.hold(MemoryLayout<ObjectID>.stride)
                            ids.append(ObjectID(entity: id, key: PrimaryKey(key)))
                        }
                    }
                }
            }
            // Overflowed: .none asks for the query again without plain sums.
            return answered ? .some(ids) : .none
        }
    }

    /// Counts what ``objectIDs(matching:of:includingSubentities:)`` would give with `COUNT(*)`.
    public func count(matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> Int?
    {
        try exactly { (plainIntegerSums) throws(ObjectGraphError) -> Int?? in
            guard let query = try selection(predicate, of: entity, includingSubentities, plainIntegerSums) else {
                return .some(nil)
            }
            guard let (selection, arguments) = query else { return 0 }
            // Rows of a Z_ENT the model does not know are not among the entities counted.
            let sql = "SELECT COUNT(*) FROM \(selection.from) WHERE \(selection.condition)"
            var count = 0
            let answered: Bool = try read { db in
                try bounded(db) {
                    try Self.overflowing {
                        try eachRow(db, sql, arguments: arguments) { row in
                            count = Int(clamping: Self.key(in: DatabaseValue(sqliteStatement: row, index: 0)) ?? 0)
                        }
                    }
                }
            }
            // Overflowed: .none asks for the query again without plain sums.
            return answered ? .some(count) : .none
        }
    }

    /// A page of snapshots read by key order, filtered in SQL (see
    /// ``PersistentStore/snapshots(of:includingSubentities:matching:after:limit:)``).
    public func snapshots(
        of entity: EntityID, includingSubentities: Bool, matching predicate: ObjectGraph.Predicate?,
        after key: PrimaryKey?,
        limit: Int
    ) throws(ObjectGraphError) -> [Snapshot]? {
        try exactly { (plainIntegerSums) throws(ObjectGraphError) -> [Snapshot]?? in
            guard
                let query = try selection(
                    predicate ?? .constant(true), of: entity, includingSubentities, plainIntegerSums, pageAfter: true)
            else { return .some(nil) }
            guard let (selection, bound) = query, limit > 0 else { return [] }
            var arguments = bound
            let (columns, plans) = rowPlans(forRoot: layout[entity].rootID, alias: "t0")
            let selected = (["t0.Z_PK", "t0.Z_ENT", "t0.Z_OPT"] + columns).joined(separator: ", ")
            // Bound, so every page of a walk runs the statement the first one prepared; never
            // below 0, so the bound also keeps the keys that are not objects' out.
            arguments += ["pageAfter": max(key?.rawValue ?? 0, 0)]
            let sql =
                "SELECT \(selected) FROM \(selection.from) WHERE \(selection.condition) ORDER BY t0.Z_PK LIMIT \(limit)"
            var found: [Snapshot] = []
            found.reserveCapacity(min(limit, 4096))
            // Rows of a page are mostly of one entity: the last row's saves two lookups a row.
            var last: (zent: Int64, id: EntityID, plan: RowPlan)?
            let answered: Bool = try read { db in
                try bounded(db) {
                    try Self.overflowing {
                        try eachRow(db, sql, cached: true, arguments: arguments) { (row) throws(ObjectGraphError) in
                            guard let pk = Self.key(row, 0), let zent = Self.key(row, 1) else { return }
                            if last?.zent != zent {
                                guard let id = layout.entityByZent[zent], let plan = plans[id] else { return }
                                last = (zent, id, plan)
                            }
                            guard let (_, id, plan) = last else { return }
                            do throws(ObjectGraphError) {
                                found.append(
                                    try snapshot(from: row, id: ObjectID(entity: id, key: PrimaryKey(pk)), plan: plan))
                            } catch {
                                throw error.message.hasPrefix(path)
                                    ? error : ObjectGraphError(error.code, "\(path): \(error.message)")
                            }
                        }
                    }
                }
            }
            // Overflowed: .none asks for the query again without plain sums.
            return answered ? .some(found) : .none
        }
    }

    /// Runs `query` with plain integer sums, and once more without them when SQLite's integer
    /// arithmetic overflowed (its answer is then nil); nil when the predicate is declined.
    private func exactly<T>(_ query: (Bool) throws(ObjectGraphError) -> T??) throws(ObjectGraphError) -> T? {
        switch try query(true) {
        case .some(.some(let answer)): return answer
        case .some(.none): return nil
        case .none:
            guard case .some(.some(let answer)) = try query(false) else { return nil }
            return answer
        }
    }

    /// The rows of `entity` (and its subentities) that match `predicate` and the arguments the SQL
    /// needs: nil when the translator declines; `.some(nil)` when the entity has no rows to test.
    private func selection(
        _ predicate: ObjectGraph.Predicate, of entity: EntityID, _ includingSubentities: Bool, _ plainIntegerSums: Bool,
        pageAfter: Bool = false
    ) throws(ObjectGraphError) -> (PredicateTranslator.Selection, StatementArguments)?? {
        let entityLayout = try entityLayout(entity)
        let entities = includingSubentities ? model.entityAndSubentities(of: entity) : [entity]
        let zents = entities.compactMap { layout[$0].zent }
        guard let table = entityLayout.table, !zents.isEmpty else {
            // No rows to test; like objectIDs(of:), nothing matches.
            return .some(nil)
        }
        let translator = PredicateTranslator(model: model, layout: layout, plainIntegerSums: plainIntegerSums)
        guard
            let selection = translator.selection(
                predicate, entity: entity, table: table, zents: zents, pageAfter: pageAfter)
        else { return nil }
        let arguments = StatementArguments(translator.arguments.mapValues { $0 as (any DatabaseValueConvertible)? })
        return (selection, arguments)
    }

    /// Runs a predicate query; false when SQLite's integer arithmetic overflowed (an integer
    /// `@sum` beyond Int64, which the evaluator sums as a decimal).
    private static func overflowing(_ body: () throws -> Void) throws -> Bool {
        do {
            try body()
            return true
        } catch let error as DatabaseError where (error.message ?? "").contains("integer overflow") {
            return false
        } catch let error as ObjectGraphError where error.message.contains("integer overflow") {
            return false
        }
    }

    /// Adds the SQL functions predicate queries call to a new connection.
    static func addPredicateFunctions(_ db: Database) {
        db.add(function: compareStrings)
        PredicateFunctions.add(to: db)
    }

    /// `storefs_compare_strings(text BLOB, op TEXT, options INTEGER, pattern BLOB)`: 1 when
    /// ``PredicateEvaluator/compareStrings(_:_:_:options:)`` holds, 0 otherwise (and for NULL or
    /// text that is not UTF-8, which reading the row would refuse anyway). Strings arrive as
    /// BLOBs so that embedded NULs survive.
    private static let compareStrings = DatabaseFunction(
        PredicateTranslator.compareStringsFunctionName, argumentCount: 4, pure: true
    ) { values in
        guard let text = string(values[0]), let pattern = string(values[3]),
            let opName = String.fromDatabaseValue(values[1]), let op = ComparisonOperator(rawValue: opName),
            let rawOptions = Int.fromDatabaseValue(values[2])
        else { return 0 }
        let matched =
            (try? PredicateEvaluator.compareStrings(text, op, pattern, options: ComparisonOptions(rawValue: rawOptions)))
            ?? false
        return matched ? 1 : 0
    }

    private static func string(_ value: DatabaseValue) -> String? {
        switch value.storage {
        case .blob(let data): String(data: data, encoding: .utf8)
        case .string(let s): s
        default: nil
        }
    }
}

extension SQLiteStore {
    /// The file's UNIQUE indexes on the tree's table, as property names (``StoreLayout/uniqueKeys``).
    public func uniqueKeys(of root: EntityID) -> [[String]] { layout.uniqueKeys[root] ?? [] }

    /// The rows of the tree's table whose columns hold `values` as Core Data stores them, in one
    /// query on the columns (an index on them, a UNIQUE one among them, answers it); nil when a
    /// property has no column or keeps its bytes outside the store.
    public func objectIDs(holding values: [(property: String, value: PropertyMatch)], in root: EntityID)
        throws(ObjectGraphError) -> [ObjectID]?
    {
        guard let table = layout[root].table, !values.isEmpty else { return nil }
        let tree = model.entityAndSubentities(of: root)
        var conditions: [String] = []
        var arguments: [DatabaseValue] = []
        for (property, value) in values {
            var found = false
            for id in tree where !found {
                if let column = layout[id].attributes.first(where: { $0.attribute.name == property }),
                    let name = column.column, case .value(let stored) = value
                {
                    guard !column.attribute.allowsExternalBinaryDataStorage else { return nil }
                    conditions.append("\(name.quotedDatabaseIdentifier) = ?")
                    arguments.append(try ValueCoding.encode(stored, as: column.attribute, entity: model[id].name))
                    found = true
                } else if let toOne = layout[id].toOne.first(where: { $0.name == property }), let name = toOne.column,
                    case .object(let destination) = value
                {
                    conditions.append("\(name.quotedDatabaseIdentifier) = ?")
                    arguments.append(destination.key.rawValue.databaseValue)
                    found = true
                }
            }
            guard found else { return nil }
        }
        let sql =
            "SELECT Z_PK, Z_ENT FROM \(table.quotedDatabaseIdentifier) WHERE \(conditions.joined(separator: " AND "))"
        var ids: [ObjectID] = []
        try read { db in
            try eachRow(db, sql, arguments: StatementArguments(arguments)) { row in
                guard let key = Self.key(in: DatabaseValue(sqliteStatement: row, index: 0)),
                    let zent = Self.key(in: DatabaseValue(sqliteStatement: row, index: 1)),
                    let id = layout.entityByZent[zent]
                else { return }
                ids.append(ObjectID(entity: id, key: PrimaryKey(key)))
            }
        }
        return ids
    }
}
