import Foundation

/// A non-nil attribute value, in the representation the engine keeps.
///
/// Integers of every width are `Int64` (the attribute's type gives the range); URIs are kept as the
/// exact string that was stored so that a value read and written back is the same bytes; binary and
/// transformable values are `Data`.
public enum AttributeValue: Sendable, Hashable {
    case integer(Int64)
    case decimal(Decimal)
    case double(Double)
    case float(Float)
    case string(String)
    case boolean(Bool)
    case date(Date)
    case data(Data)
    case uuid(UUID)

    /// Whether this value is the representation the engine uses for `type`.
    public func matches(_ type: AttributeType) -> Bool {
        switch (self, type) {
        case (.integer, .integer16), (.integer, .integer32), (.integer, .integer64): true
        case (.decimal, .decimal), (.double, .double), (.float, .float): true
        case (.string, .string), (.string, .uri): true
        case (.boolean, .boolean), (.date, .date), (.uuid, .uuid): true
        case (.data, .binaryData), (.data, .transformable): true
        default: false
        }
    }

    /// An estimate of the memory the value takes, for the row cache's limit.
    /// Only what lives outside the dictionary bucket that holds the value: a string longer than
    /// a small string (15 bytes) or data takes an allocation of its own (header and rounding).
    public var approximateSize: Int {
        switch self {
        case .string(let s): s.utf8.count > 15 ? 48 + s.utf8.count : 0
        case .data(let d): d.count > 14 ? 48 + d.count : 0
        default: 0
        }
    }
}

extension AttributeValue {
    /// Doubles compare by bit pattern so that NaN equals itself and -0 differs from +0: the engine's
    /// notion of "the same value" is "the same bits", which is what round-trip tests check.
    public static func == (lhs: AttributeValue, rhs: AttributeValue) -> Bool {
        switch (lhs, rhs) {
        case (.integer(let a), .integer(let b)): a == b
        case (.decimal(let a), .decimal(let b)): a == b
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.float(let a), .float(let b)): a.bitPattern == b.bitPattern
        case (.string(let a), .string(let b)): a.utf8.elementsEqual(b.utf8)
        case (.boolean(let a), .boolean(let b)): a == b
        case (.date(let a), .date(let b)):
            a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.data(let a), .data(let b)): a == b
        case (.uuid(let a), .uuid(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .integer(let v): hasher.combine(0); hasher.combine(v)
        case .decimal(let v): hasher.combine(1); hasher.combine(v)
        case .double(let v): hasher.combine(2); hasher.combine(v.bitPattern)
        case .float(let v): hasher.combine(3); hasher.combine(v.bitPattern)
        case .string(let v): hasher.combine(4); hasher.combine(Array(v.utf8))
        case .boolean(let v): hasher.combine(5); hasher.combine(v)
        case .date(let v): hasher.combine(6); hasher.combine(v.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let v): hasher.combine(7); hasher.combine(v)
        case .uuid(let v): hasher.combine(8); hasher.combine(v)
        }
    }
}
