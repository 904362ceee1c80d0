import CoreDataSchema
import Foundation
import ObjectGraph
import RelationalCore

/// Reads, as ``RelationalRules`` makes them, each statement on a connection of the read pool.
extension PostgresStore {
    public func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] {
        try core.objectIDs(of: entity, on: reads)
    }

    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        try core.count(of: entity, on: reads)
    }

    /// One `SELECT ... WHERE Z_PK = ANY(keys)` per root table involved.
    public func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] {
        try core.snapshots(for: ids, on: reads)
    }

    public func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]
    {
        try core.toManyDestinations(of: relationship, in: entity, for: sources, on: reads)
    }

    public func toManyDestinationLists(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [[ObjectID]]
    {
        try core.toManyDestinationLists(of: relationship, in: entity, for: sources, on: reads)
    }

    /// The store's UNIQUE indexes on the tree's table, as property names.
    public func uniqueKeys(of root: EntityID) -> [[String]] { layout.uniqueKeys[root] ?? [] }

    /// The objects holding `values` (``RelationalRules/objectIDs(holding:in:on:)``).
    public func objectIDs(holding values: [(property: String, value: PropertyMatch)], in root: EntityID)
        throws(ObjectGraphError) -> [ObjectID]?
    {
        try core.objectIDs(holding: values, in: root, on: reads)
    }

    // MARK: - Predicates in SQL

    /// The objects that may match `predicate`, in one statement (``RelationalRules/candidates(matching:of:includingSubentities:on:)``):
    /// exactly the matches where PostgreSQL's SQL decides every comparison, else a superset the
    /// engine decides.
    public func candidates(matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> PredicateCandidates?
    {
        try core.candidates(matching: predicate, of: entity, includingSubentities: includingSubentities, on: reads)
    }

    public func objectIDs(matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> [ObjectID]?
    {
        try core.objectIDs(matching: predicate, of: entity, includingSubentities: includingSubentities, on: reads)
    }

    public func count(matching predicate: ObjectGraph.Predicate, of entity: EntityID, includingSubentities: Bool)
        throws(ObjectGraphError) -> Int?
    {
        try core.count(matching: predicate, of: entity, includingSubentities: includingSubentities, on: reads)
    }

    public func snapshots(
        of entity: EntityID, includingSubentities: Bool, matching predicate: ObjectGraph.Predicate?,
        after key: PrimaryKey?, limit: Int
    ) throws(ObjectGraphError) -> [Snapshot]? {
        try core.snapshots(
            of: entity, includingSubentities: includingSubentities, matching: predicate, after: key, limit: limit,
            on: reads)
    }
}
