import CoreDataSchema
import Foundation
import ObjectGraph

/// Predicates answered in SQL (``PredicateTranslator``): the objects that match, their count, and
/// pages of their rows, each in one statement. Where the dialect cannot decide a comparison in
/// SQL, the objects are the candidates (every match among them) and only they are left to the
/// engine to decide; counts and pages are answered only when exact.
extension RelationalRules {
    /// The objects of `entity` (and its subentities when asked) that may match `predicate`, by
    /// key; nil when the translator declines it (the engine evaluates it and reports what is wrong).
    package func candidates(
        matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool,
        on connection: some SQLConnection
    ) throws(ObjectGraphError) -> PredicateCandidates? {
        try exactly { (plainIntegerSums) throws(ObjectGraphError) -> PredicateCandidates? in
            guard let query = try selection(predicate, of: entity, includingSubentities, plainIntegerSums) else {
                return nil
            }
            guard let (translator, selection) = query else { return PredicateCandidates(ids: [], exact: true) }
            var ids: [ObjectID] = []
            // Each row counted against the evaluation's budget (an engine polls it, or stops the
            // statement, while the statement runs).
            let budget = QueryBudget.current
            try connection.query(
                translator.statement(
                    "SELECT t0.\"Z_PK\", t0.\"Z_ENT\" FROM \(selection.from) WHERE \(selection.condition) ORDER BY t0.\"Z_PK\""
                )
            ) { (row) throws(ObjectGraphError) in
                guard let key = row.integer(0), let zent = row.integer(1), let id = layout.entityByZent[zent] else {
                    return
                }
                try budget?.visit()
                try budget?.hold(MemoryLayout<ObjectID>.stride)
                ids.append(ObjectID(entity: id, key: PrimaryKey(key)))
            }
            return PredicateCandidates(ids: ids, exact: selection.exact)
        }
    }

    /// The objects of `entity` (and its subentities when asked) that match `predicate`, by key;
    /// nil when the translator declines it or the dialect cannot decide it exactly in SQL.
    package func objectIDs(
        matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool,
        on connection: some SQLConnection
    ) throws(ObjectGraphError) -> [ObjectID]? {
        try candidates(matching: predicate, of: entity, includingSubentities: includingSubentities, on: connection)
            .flatMap { $0.exact ? $0.ids : nil }
    }

    /// The number of objects matching `predicate`, counted in SQL without reading them; nil when
    /// the translator declines it or cannot decide it exactly.
    package func count(
        matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool,
        on connection: some SQLConnection
    ) throws(ObjectGraphError) -> Int? {
        try exactly { (plainIntegerSums) throws(ObjectGraphError) -> Int? in
            guard let query = try selection(predicate, of: entity, includingSubentities, plainIntegerSums) else {
                return nil
            }
            guard let (translator, selection) = query else { return 0 }
            guard selection.exact else { return nil }
            // Rows of a Z_ENT the model does not know are not among the entities counted.
            let count = try connection.integer(
                translator.statement("SELECT COUNT(*) FROM \(selection.from) WHERE \(selection.condition)"))
            return Int(clamping: count ?? 0)
        }
    }

    /// Up to `limit` snapshots of the objects matching `predicate` (all when nil) whose keys come
    /// after `key`, by key: a page of a walk that reads each row once. Nil when the translator
    /// declines the predicate or cannot decide it exactly.
    package func snapshots(
        of entity: EntityID, includingSubentities: Bool, matching predicate: ObjectGraph.Predicate?,
        after key: PrimaryKey?,
        limit: Int, on connection: some SQLConnection
    ) throws(ObjectGraphError) -> [Snapshot]? {
        try exactly { (plainIntegerSums) throws(ObjectGraphError) -> [Snapshot]? in
            guard
                let query = try selection(
                    predicate ?? .constant(true), of: entity, includingSubentities, plainIntegerSums, pageAfter: true)
            else { return nil }
            guard let (translator, selection) = query, limit > 0 else { return [] }
            guard selection.exact else { return nil }
            let plan = RowPlan(self, root: layout[entity].rootID, alias: "t0")
            // Bound, so every page of a walk runs the statement the first one prepared; never
            // below 0, so the bound also keeps the keys that are not objects' out.
            let statement = translator.statement(
                "SELECT \(plan.selected) FROM \(selection.from) WHERE \(selection.condition) ORDER BY t0.\"Z_PK\" LIMIT :limit",
                extra: ["pageAfter": .integer(max(key?.rawValue ?? 0, 0)), "limit": .integer(Int64(limit))])
            var found: [Snapshot] = []
            found.reserveCapacity(min(limit, 4096))
            // Rows of a page are mostly of one entity: the last row's saves two lookups a row.
            var last: (zent: Int64, id: EntityID, plan: RowPlan.Entity)?
            try connection.query(statement) { (row) throws(ObjectGraphError) in
                guard let pk = row.integer(0), let zent = row.integer(1) else { return }
                if last?.zent != zent {
                    guard let id = layout.entityByZent[zent], let entityPlan = plan.entities[id] else { return }
                    last = (zent, id, entityPlan)
                }
                guard let (_, id, entityPlan) = last else { return }
                found.append(try snapshot(from: row, id: ObjectID(entity: id, key: PrimaryKey(pk)), plan: entityPlan))
            }
            return found
        }
    }

    /// Runs `query` with plain integer sums, and once more without them when the engine's
    /// integer arithmetic overflowed (an integer `@sum` beyond Int64, which the evaluator sums as
    /// a decimal).
    private func exactly<T>(_ query: (Bool) throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        do {
            return try query(true)
        } catch  where error.message.contains("integer overflow") || error.message.contains("out of range") {
            return try query(false)
        }
    }

    /// The translator and rows of `entity` (and its subentities) that match `predicate`: nil when
    /// the translator declines; `.some(nil)` when the entity has no rows to test.
    private func selection(
        _ predicate: ObjectGraph.Predicate, of entity: EntityID, _ includingSubentities: Bool, _ plainIntegerSums: Bool,
        pageAfter: Bool = false
    ) throws(ObjectGraphError) -> (PredicateTranslator, PredicateTranslator.Selection)?? {
        let entityLayout = try entityLayout(entity)
        let entities = includingSubentities ? model.entityAndSubentities(of: entity) : [entity]
        let zents = entities.compactMap { layout[$0].zent }
        guard let table = entityLayout.table, !zents.isEmpty else {
            // No rows to test; like objectIDs(of:), nothing matches.
            return .some(nil)
        }
        let translator = PredicateTranslator(
            model: model, layout: layout, dialect: dialect, plainIntegerSums: plainIntegerSums)
        guard
            let selection = translator.selection(
                predicate, entity: entity, table: table, zents: zents, pageAfter: pageAfter)
        else { return nil }
        return .some((translator, selection))
    }
}
