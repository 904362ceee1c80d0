import Foundation

/// A parsed Core Data predicate (the `NSPredicate` format syntax Xcode models store), as a value.
///
/// Compound predicates keep their operands as the text groups them: `a AND b AND c` is one `and`
/// of three, `(a AND b) AND c` an `and` whose first operand is itself an `and`. ``description``
/// prints a predicate back in format syntax so that parsing it gives the same value.
///
/// Threading: a value; share it freely.
public indirect enum Predicate: Sendable, Hashable, CustomStringConvertible {
    /// `TRUEPREDICATE` (true) or `FALSEPREDICATE` (false).
    case constant(Bool)
    /// `lhs op[options] rhs`, with `ANY`/`ALL`/`NONE` in front when `modifier` says so.
    case comparison(
        lhs: Expression, op: ComparisonOperator, rhs: Expression, options: ComparisonOptions = [],
        modifier: ComparisonModifier = .direct)
    /// True when every operand is (true for none).
    case and([Predicate])
    /// True when at least one operand is (false for none).
    case or([Predicate])
    case not(Predicate)
}

/// The operator of a comparison predicate.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    /// `*` matches any run of characters, `?` one character; the whole string must match.
    case like = "LIKE"
    case contains = "CONTAINS"
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    /// An ICU regular expression that must match the whole string.
    case matches = "MATCHES"
    /// Membership in an aggregate, a to-many key path, or (for strings) a substring test.
    case `in` = "IN"
    /// `lhs BETWEEN {low, high}`: both ends included.
    case between = "BETWEEN"

    /// Whether the operator is one of the string operators the `[c]`/`[d]` options apply to most.
    var isStringOperator: Bool {
        switch self {
        case .like, .contains, .beginsWith, .endsWith, .matches: true
        default: false
        }
    }
}

/// The `[c]`, `[d]` and `[cd]` options of a string comparison.
public struct ComparisonOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `[c]`: case-insensitive.
    public static let caseInsensitive = ComparisonOptions(rawValue: 1)
    /// `[d]`: diacritic-insensitive.
    public static let diacriticInsensitive = ComparisonOptions(rawValue: 2)

    /// The options as they follow the operator: `""`, `"[c]"`, `"[d]"` or `"[cd]"`.
    public var formatText: String {
        if isEmpty { return "" }
        return "[" + (contains(.caseInsensitive) ? "c" : "") + (contains(.diacriticInsensitive) ? "d" : "") + "]"
    }
}

/// How the left side of a comparison, when it is a collection, is compared.
public enum ComparisonModifier: String, Sendable, Hashable, CaseIterable {
    /// No modifier. A collection on the left is compared as by `ANY` (as Core Data's SQL store
    /// does), except for `CONTAINS`, which tests membership.
    case direct = ""
    /// `ANY` (also spelled `SOME`): at least one element matches.
    case any = "ANY"
    /// `ALL`: every element matches (true for an empty collection).
    case all = "ALL"
    /// `NONE`: no element matches.
    case none = "NONE"
}

/// One side of a comparison.
public indirect enum Expression: Sendable, Hashable, CustomStringConvertible {
    /// A key path from the evaluated object: `name`, `department.name`, `employees.@count`,
    /// `employees.@avg.salary`. `SELF` is the component `"SELF"` (alone or leading).
    case keyPath([String])
    case constant(Literal)
    /// `$NAME.key.path`: `$FETCH_SOURCE` (the object a fetched property belongs to),
    /// `$FETCHED_PROPERTY.userInfo.key`, or a variable the evaluator was given.
    case variable(String, keyPath: [String])
    /// `{a, b, ...}`.
    case aggregate([Expression])

    /// A literal value written in a predicate.
    public enum Literal: Sendable, Hashable {
        case string(String)
        case integer(Int64)
        case double(Double)
        case boolean(Bool)
        /// A date as seconds since 2001-01-01 (written `CAST(599443200, "NSDate")`, as Xcode's
        /// predicate editor writes date constants).
        case date(Double)
        /// `nil` or `NULL`.
        case null
        /// An object, as variable substitution produces it (`department == $FETCH_SOURCE` with the
        /// source's ID); it has no format syntax, so it prints as `<ID>` and does not parse back.
        case object(ObjectID)
    }

    /// `SELF`, the evaluated object.
    public static let evaluatedObject = Expression.keyPath(["SELF"])
}

// MARK: - Printing

extension Predicate {
    /// The predicate in format syntax; ``PredicateParser/parse(_:)`` gives back the same value
    /// (compounds of fewer than two operands print as their operand or a constant, so those two
    /// only round-trip by meaning).
    public var description: String {
        switch self {
        case .constant(let value):
            return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .comparison(let lhs, let op, let rhs, let options, let modifier):
            let prefix = modifier == .direct ? "" : modifier.rawValue + " "
            return "\(prefix)\(lhs) \(op.rawValue)\(options.formatText) \(rhs)"
        case .and(let operands):
            return Self.join(operands, "AND", empty: "TRUEPREDICATE")
        case .or(let operands):
            return Self.join(operands, "OR", empty: "FALSEPREDICATE")
        case .not(let operand):
            return "NOT " + operand.operandText
        }
    }

    /// Compound operands are parenthesized so they keep their grouping when printed.
    private var operandText: String {
        switch self {
        case .constant, .comparison: description
        case .and(let list), .or(let list): list.count == 1 ? list[0].operandText : "(\(description))"
        case .not: description
        }
    }

    private static func join(_ operands: [Predicate], _ word: String, empty: String) -> String {
        switch operands.count {
        case 0: empty
        case 1: operands[0].description
        default: operands.map(\.operandText).joined(separator: " \(word) ")
        }
    }
}

extension Expression {
    /// The expression in format syntax.
    public var description: String {
        switch self {
        case .keyPath(let components):
            return Self.keyPathText(components, leadingEscaped: true)
        case .constant(let literal):
            return literal.description
        case .variable(let name, let path):
            return "$" + name + (path.isEmpty ? "" : "." + Self.keyPathText(path, leadingEscaped: false))
        case .aggregate(let items):
            return "{" + items.map(\.description).joined(separator: ", ") + "}"
        }
    }

    /// A first component that is a reserved word is written `#word`, as NSPredicate requires;
    /// later components are read as names whatever they spell.
    private static func keyPathText(_ components: [String], leadingEscaped: Bool) -> String {
        components.enumerated().map { index, component in
            if index == 0 && leadingEscaped && component != "SELF"
                && PredicateLexer.reservedWords.contains(component.uppercased())
            {
                return "#" + component
            }
            return component
        }.joined(separator: ".")
    }
}

extension Expression.Literal: CustomStringConvertible {
    public var description: String {
        switch self {
        case .string(let s): Self.quoted(s)
        case .integer(let i): String(i)
        case .double(let d): Self.number(d)
        case .boolean(let b): b ? "YES" : "NO"
        case .date(let seconds): "CAST(\(Self.number(seconds)), \"NSDate\")"
        case .null: "nil"
        case .object(let id): "<\(id)>"
        }
    }

    /// Swift's shortest round-tripping form, which always has a `.` or an exponent.
    private static func number(_ d: Double) -> String { "\(d)" }

    private static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
