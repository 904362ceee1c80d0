import Foundation
import GRDB
import ObjectGraph
import RelationalCore

extension SQLiteStore {
    /// Evaluates `predicate` as one SQL query (``RelationalRules/candidates(matching:of:includingSubentities:on:)``:
    /// in SQLite always exact, the evaluator's own comparison running inside SQLite); nil when
    /// ``PredicateTranslator`` declines it (the engine then evaluates it in memory and reports
    /// what is wrong with it).
    public func objectIDs(matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> [ObjectID]?
    {
        try read { db in
            try bounded(db) {
                try core.objectIDs(
                    matching: predicate, of: entity, includingSubentities: includingSubentities, on: connection(db))
            }
        }
    }

    public func candidates(matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> PredicateCandidates?
    {
        try read { db in
            try bounded(db) {
                try core.candidates(
                    matching: predicate, of: entity, includingSubentities: includingSubentities, on: connection(db))
            }
        }
    }

    /// Counts what ``objectIDs(matching:of:includingSubentities:)`` would give with `COUNT(*)`.
    public func count(matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> Int?
    {
        try read { db in
            try bounded(db) {
                try core.count(
                    matching: predicate, of: entity, includingSubentities: includingSubentities, on: connection(db))
            }
        }
    }

    /// A page of snapshots read by key order, filtered in SQL (see
    /// ``PersistentStore/snapshots(of:includingSubentities:matching:after:limit:)``).
    public func snapshots(
        of entity: EntityID, includingSubentities: Bool, matching predicate: ObjectGraph.Predicate?,
        after key: PrimaryKey?, limit: Int
    ) throws(ObjectGraphError) -> [Snapshot]? {
        try read { db in
            try bounded(db) {
                try core.snapshots(
                    of: entity, includingSubentities: includingSubentities, matching: predicate, after: key,
                    limit: limit, on: connection(db))
            }
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

    /// The objects holding `values` (``RelationalRules/objectIDs(holding:in:on:)``).
    public func objectIDs(holding values: [(property: String, value: PropertyMatch)], in root: EntityID)
        throws(ObjectGraphError) -> [ObjectID]?
    {
        try read { db in try core.objectIDs(holding: values, in: root, on: connection(db)) }
    }
}
