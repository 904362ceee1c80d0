import Foundation

/// The attribute type changes a lightweight migration makes, and the value conversions a
/// migration applies when a value lands in an attribute of another type.
///
/// Apple documents no list of type changes lightweight migration accepts; storefs takes those
/// that keep every value exactly, so a migration never rounds, truncates or reinterprets data:
/// wider integers (Integer 16 → 32 → 64), integers and Boolean into wider numbers (Integer 16/32 →
/// Double, any integer → Decimal, Boolean → any integer), Float → Double, String ↔ URI and
/// Binary Data ↔ Transformable (the same bytes). Every other change needs a mapping model.
///
/// Stateless; safe from any thread.
public enum AttributeConversion {
    /// Whether every value of `from` converts to `to` without loss.
    public static func isLossless(from: AttributeType, to: AttributeType) -> Bool {
        if from == to { return true }
        switch (from, to) {
        case (.integer16, .integer32), (.integer16, .integer64), (.integer32, .integer64): return true
        case (.integer16, .double), (.integer32, .double): return true
        case (.integer16, .decimal), (.integer32, .decimal), (.integer64, .decimal): return true
        case (.boolean, .integer16), (.boolean, .integer32), (.boolean, .integer64): return true
        case (.float, .double): return true
        case (.string, .uri), (.uri, .string): return true
        case (.binaryData, .transformable), (.transformable, .binaryData): return true
        default: return false
        }
    }

    /// `value` as a value of `type`, or nil when it is not one and does not convert exactly (a
    /// string into a number, 2.5 into an integer, 70000 into an Integer 16).
    ///
    /// Numbers convert among the numeric types when the value is kept exactly, and to Boolean from
    /// 0 and 1 (Core Data keeps Booleans as numbers); nothing converts to or from strings, dates,
    /// UUIDs or data but the same kind.
    public static func convert(_ value: AttributeValue, to type: AttributeType) -> AttributeValue? {
        if value.matches(type) {
            if case .integer(let i) = value, let range = type.integerRange, !range.contains(i) { return nil }
            return value
        }
        switch (value, type) {
        case (.integer(let i), .double):
            let d = Double(i)
            return Int64(exactly: d) == i ? .double(d) : nil
        case (.integer(let i), .float):
            let f = Float(i)
            return Int64(exactly: f) == i ? .float(f) : nil
        case (.integer(let i), .decimal): return .decimal(Decimal(i))
        case (.integer(let i), .boolean) where i == 0 || i == 1: return .boolean(i == 1)
        case (.boolean(let b), .integer16), (.boolean(let b), .integer32), (.boolean(let b), .integer64):
            return .integer(b ? 1 : 0)
        case (.boolean(let b), .double): return .double(b ? 1 : 0)
        case (.boolean(let b), .float): return .float(b ? 1 : 0)
        case (.boolean(let b), .decimal): return .decimal(b ? 1 : 0)
        case (.double(let d), .integer16), (.double(let d), .integer32), (.double(let d), .integer64):
            guard let i = Int64(exactly: d), type.integerRange?.contains(i) == true else { return nil }
            return .integer(i)
        case (.double(let d), .float):
            let f = Float(d)
            return Double(f) == d || d.isNaN ? .float(f) : nil
        case (.double(let d), .decimal):
            guard d.isFinite else { return nil }
            let decimal = Decimal(d)
            return DecimalConversion.double(decimal) == d ? .decimal(decimal) : nil
        case (.float(let f), .double): return .double(Double(f))
        case (.float(let f), .integer16), (.float(let f), .integer32), (.float(let f), .integer64):
            guard let i = Int64(exactly: f), type.integerRange?.contains(i) == true else { return nil }
            return .integer(i)
        case (.float(let f), .decimal):
            guard f.isFinite else { return nil }
            return .decimal(Decimal(Double(f)))
        case (.decimal(let d), .integer16), (.decimal(let d), .integer32), (.decimal(let d), .integer64):
            guard let double = DecimalConversion.double(d), let i = Int64(exactly: double), Decimal(i) == d,
                type.integerRange?.contains(i) == true
            else { return nil }
            return .integer(i)
        case (.decimal(let d), .double):
            guard let double = DecimalConversion.double(d), Decimal(double) == d else { return nil }
            return .double(double)
        case (.data(let d), .binaryData), (.data(let d), .transformable): return .data(d)
        default: return nil
        }
    }

    /// A value as a short text for messages: the spelling Xcode uses for defaults.
    public static func describe(_ value: AttributeValue) -> String {
        switch value {
        case .string(let s): return "\"\(s.count > 40 ? String(s.prefix(40)) + "…" : s)\""
        case .data(let d): return "\(d.count) bytes"
        default: return XcodeValueFormat.string(for: value) ?? "\(value)"
        }
    }
}
