import Foundation

/// One value of a binary property list, as ``BinaryPropertyList`` reads it.
///
/// Unlike Foundation's property list objects it keeps the `UID` type that keyed archives are
/// made of, and dictionary keys that are not strings are kept as values. Threading: a value;
/// share it freely.
public indirect enum PropertyListValue: Sendable, Hashable {
    case null
    case boolean(Bool)
    /// Every integer width; unsigned 64-bit values above Int64.max do not occur in archives and
    /// are refused by the reader.
    case integer(Int64)
    case real(Double)
    /// Seconds since 2001-01-01 00:00:00 UTC.
    case date(Double)
    case data(Data)
    case string(String)
    /// A keyed archive's reference to entry N of its `$objects` array.
    case uid(Int)
    case array([PropertyListValue])
    /// Keys in file order; archives' keys are strings, but the format allows any value.
    case dictionary([(key: PropertyListValue, value: PropertyListValue)])

    /// The value for string key `key` of a dictionary, or nil.
    public subscript(key: String) -> PropertyListValue? {
        guard case .dictionary(let entries) = self else { return nil }
        for entry in entries {
            if case .string(let k) = entry.key, k == key { return entry.value }
        }
        return nil
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var integer: Int64? { if case .integer(let i) = self { i } else { nil } }
    public var array: [PropertyListValue]? { if case .array(let a) = self { a } else { nil } }

    /// A number, boolean or integer as a truth value (archives write flags either way).
    public var bool: Bool? {
        switch self {
        case .boolean(let b): b
        case .integer(let i): i != 0
        default: nil
        }
    }

    public static func == (lhs: PropertyListValue, rhs: PropertyListValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.boolean(let a), .boolean(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.real(let a), .real(let b)): a.bitPattern == b.bitPattern
        case (.date(let a), .date(let b)): a.bitPattern == b.bitPattern
        case (.data(let a), .data(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.uid(let a), .uid(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.dictionary(let a), .dictionary(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .boolean(let b): hasher.combine(b)
        case .integer(let i): hasher.combine(i)
        case .real(let d), .date(let d): hasher.combine(d.bitPattern)
        case .data(let d): hasher.combine(d)
        case .string(let s): hasher.combine(s)
        case .uid(let u): hasher.combine(u)
        case .array(let a): hasher.combine(a)
        case .dictionary(let entries):
            hasher.combine(entries.count)
            for entry in entries {
                hasher.combine(entry.key)
                hasher.combine(entry.value)
            }
        }
    }
}
