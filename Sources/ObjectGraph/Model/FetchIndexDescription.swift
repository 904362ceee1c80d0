/// A fetch index of an entity (Core Data's `NSFetchIndexDescription`, Xcode's `<fetchIndex>`,
/// SwiftData's `#Index`): an SQL index Core Data makes on the entity's table, named
/// `Z_<Entity>_<name>`. Kept so that a store storefs creates or migrates has the indexes the app's
/// Core Data would have made, and so that the model cache storefs writes lists them.
public struct FetchIndexDescription: Sendable, Hashable {
    public struct Element: Sendable, Hashable {
        /// A property name, or a composite element's key path (`author.person`).
        public var property: String
        public var isAscending: Bool
        /// Core Data's element type: 0 binary (an ordinary index), 1 R-tree.
        public var isRTree: Bool

        public init(property: String, isAscending: Bool = true, isRTree: Bool = false) {
            self.property = property
            self.isAscending = isAscending
            self.isRTree = isRTree
        }
    }

    public var name: String
    public var elements: [Element]
    /// A partial index's predicate, as text (kept, not evaluated).
    public var partialIndexPredicate: String?

    public init(name: String, elements: [Element], partialIndexPredicate: String? = nil) {
        self.name = name
        self.elements = elements
        self.partialIndexPredicate = partialIndexPredicate
    }
}
