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

    /// Parses the reference part of a URI in its one canonical form, `p` and the key in decimal
    /// without sign or leading zeros (`p12`); nil for anything else, keys beyond Int64 included,
    /// so that no two names denote one object.
    public init?(reference: some StringProtocol) {
        let digits = reference.utf8.dropFirst()
        guard reference.utf8.first == UInt8(ascii: "p"), let first = digits.first, first != UInt8(ascii: "0"),
            digits.count <= 19, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        var value: Int64 = 0
        for digit in digits {
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        self.rawValue = value
    }
}
