/// One key of a fetch's sort order: a key path from the fetched object and a direction.
///
/// Values order as ``PredicateEvaluator`` compares them (numbers by value, strings by Unicode
/// scalars); nil sorts before every value, as Core Data sorts it ascending; values that do not
/// compare (an object, binary data) leave the order to the next key, and then to the key.
public struct SortKey: Sendable, Hashable {
    /// `lastName`, `department.name`, `projects.@count`.
    public var keyPath: [String]
    public var ascending: Bool

    public init(_ keyPath: String, ascending: Bool = true) {
        self.keyPath = keyPath.split(separator: ".").map(String.init)
        self.ascending = ascending
    }
}
