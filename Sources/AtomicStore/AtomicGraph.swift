import ObjectGraph

/// The graph an atomic store loads from its file and writes back whole: ObjectGraph's
/// ``StoreGraph``, which the in-memory store keeps too, so both apply saves the same way.
package typealias AtomicGraph = StoreGraph
