import Foundation
import GRDB
import ObjectGraph

extension SQLiteStore {
    /// Evaluates `predicate` as one SQL query when ``PredicateTranslator`` can translate it
    /// exactly; nil otherwise (the engine then evaluates it in memory).
    public func objectIDs(matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> [ObjectID]?
    {
        let entityLayout = try entityLayout(entity)
        let entities = includingSubentities ? model.entityAndSubentities(of: entity) : [entity]
        let zents = entities.compactMap { layout[$0].zent }
        guard let table = entityLayout.table, !zents.isEmpty else {
            // No rows to test; like objectIDs(of:), nothing matches.
            return []
        }
        let translator = PredicateTranslator(model: model, layout: layout)
        guard let sql = translator.query(predicate, entity: entity, table: table, zents: zents) else { return nil }
        let arguments = StatementArguments(translator.arguments.mapValues { $0 as (any DatabaseValueConvertible)? })
        let found: [Row]? = try read { db in
            do {
                return try rows(db, sql, arguments)
            } catch let error as DatabaseError where (error.message ?? "").contains("integer overflow") {
                // An integer @sum beyond Int64: the evaluator sums it as a decimal.
                return nil
            }
        }
        guard let found else { return nil }
        var ids: [ObjectID] = []
        ids.reserveCapacity(found.count)
        for row in found {
            let values = row.storedValues
            guard let key = values[0].storedInteger, let zent = values[1].storedInteger, let id = layout.entityByZent[zent] else {
                continue
            }
            ids.append(ObjectID(entity: id, key: PrimaryKey(key)))
        }
        return ids
    }

    /// Adds the SQL functions predicate queries call to a new connection.
    static func addPredicateFunctions(_ db: Database) {
        db.add(function: compareStrings)
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
        let matched = (try? PredicateEvaluator.compareStrings(text, op, pattern, options: ComparisonOptions(rawValue: rawOptions))) ?? false
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
