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
    ///
    /// Only the form ``description`` prints is accepted (no sign, no leading zero), so that every
    /// object has exactly one name: `p012` would otherwise reach the folder listed as `p12`.
    public init?(reference: some StringProtocol) {
        let digits = reference.utf8.dropFirst()
        guard reference.utf8.first == UInt8(ascii: "p"), let lead = digits.first, lead != UInt8(ascii: "0"),
            digits.count <= 19, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let value = Int64(reference.dropFirst())
        else { return nil }
        self.rawValue = value
    }
}
