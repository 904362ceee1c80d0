/// The number of an entity within its model, as Core Data numbers them (`Z_ENT`).
///
/// Numbers start at 1 and follow a depth-first pre-order walk of the inheritance forest with roots
/// and siblings sorted by name, which is the order Core Data assigns to the stores it creates.
public struct EntityID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(_ rawValue: Int) { self.rawValue = rawValue }

    public static func < (lhs: EntityID, rhs: EntityID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "entity#\(rawValue)" }
}

/// The primary key of an object: unique among the objects of one root entity and its subentities
/// (`Z_PK`), never reused after a delete.
public struct PrimaryKey: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: Int64

    public init(rawValue: Int64) { self.rawValue = rawValue }
    public init(_ rawValue: Int64) { self.rawValue = rawValue }

    public static func < (lhs: PrimaryKey, rhs: PrimaryKey) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The reference part of Core Data's URI form, `p12`.
    public var description: String { "p\(rawValue)" }

    /// Parses the reference part of a URI (`p12`); nil for anything else.
    public init?(reference: some StringProtocol) {
        guard reference.first == "p", let value = Int64(reference.dropFirst()), value > 0,
            reference.dropFirst().allSatisfy(\.isASCII), reference.dropFirst().first != "+"
        else { return nil }
        self.rawValue = value
    }
}
