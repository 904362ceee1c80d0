/// Where ``ObjectContext/objects(matching:of:includingSubentities:source:fetchedProperty:variables:sortedBy:strategy:)``
/// evaluates a predicate.
///
/// Both paths give the same objects; the store is faster because it reads no rows it does not
/// return. The explicit cases exist for tests and benchmarks that must know which path ran.
public enum FetchStrategy: Sendable, Hashable {
    /// The store when it can evaluate the predicate and the context has no unsaved changes
    /// (a store sees only saved objects), else in memory.
    case automatic
    /// Always in memory with ``PredicateEvaluator``: unsaved changes included.
    case inMemory
    /// Always in the store (saved objects only); fails with ``ObjectGraphError/Code/unsupported``
    /// when the store cannot evaluate the predicate. Where the store narrows the objects without
    /// deciding every comparison (``PersistentStore/candidates(matching:of:includingSubentities:)``),
    /// the evaluator decides those it gave, and no other.
    case store
}
