import Foundation

/// A value bound to a statement's placeholder: what both engines store, in SQLite's five storage
/// classes. PostgreSQL receives each as text in its column type's input form (the connection
/// spells it), SQLite binds it as it is.
///
/// Threading: a value; share it freely.
package enum SQLValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    /// What the value is, for messages: `TEXT 'abc'`, `REAL 1.5`, `a BLOB of 3 bytes`.
    package var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let v): "INTEGER \(v)"
        case .real(let v): "REAL \(v)"
        case .text(let s): "TEXT '\(s.prefix(40))\(s.count > 40 ? "…" : "")'"
        case .blob(let d): "a BLOB of \(d.count) bytes"
        }
    }
}

/// One statement: its text, with `?` for each bound value, and the values in order. Nothing a
/// user, a file or a model gave is ever spliced into the text: values are bound, names quoted
/// (``SQL/StringInterpolation/appendInterpolation(identifier:)``), and fragments come from the
/// dialect. Built by interpolation, as GRDB's `SQL` literals are:
///
///     let sql: SQL = "UPDATE \(identifier: table) SET \(identifier: column) = \(value) WHERE Z_PK = \(key)"
///
/// Threading: a value; share it freely.
package struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    package private(set) var text: String
    package private(set) var arguments: [SQLValue]

    package init(text: String, arguments: [SQLValue] = []) {
        self.text = text
        self.arguments = arguments
    }

    package init(stringLiteral value: String) {
        text = value
        arguments = []
    }

    package init(stringInterpolation: StringInterpolation) {
        text = stringInterpolation.text
        arguments = stringInterpolation.arguments
    }

    package var description: String { text }

    package var isEmpty: Bool { text.isEmpty }

    package static func + (a: SQL, b: SQL) -> SQL {
        SQL(text: a.text + b.text, arguments: a.arguments + b.arguments)
    }

    package static func += (a: inout SQL, b: SQL) {
        a.text += b.text
        a.arguments += b.arguments
    }

    /// `parts` joined by `separator` (a fixed text such as `", "` or `" AND "`).
    package static func joined(_ parts: some Sequence<SQL>, separator: String) -> SQL {
        var result = SQL(text: "")
        var first = true
        for part in parts {
            if !first { result.text += separator }
            first = false
            result += part
        }
        return result
    }

    /// A quoted identifier: a table or column name (Core Data's keep their case, `"ZBOOK"`).
    package static func identifier(_ name: String) -> String {
        // Names without a quote (all of Core Data's) skip Foundation's search: bulk saves quote
        // names per statement.
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    package struct StringInterpolation: StringInterpolationProtocol {
        var text = ""
        var arguments: [SQLValue] = []

        package init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 8)
        }

        package mutating func appendLiteral(_ literal: String) { text += literal }

        /// A bound value.
        package mutating func appendInterpolation(_ value: SQLValue) {
            text += "?"
            arguments.append(value)
        }

        /// A bound integer (a key, a Z_ENT, a version).
        package mutating func appendInterpolation(_ value: Int64) { appendInterpolation(SQLValue.integer(value)) }

        /// A bound text.
        package mutating func appendInterpolation(_ value: String) { appendInterpolation(SQLValue.text(value)) }

        /// A quoted name.
        package mutating func appendInterpolation(identifier name: String) { text += SQL.identifier(name) }

        /// `alias.name`, the name quoted.
        package mutating func appendInterpolation(_ alias: String, column name: String) {
            text += alias + "." + SQL.identifier(name)
        }

        /// A fragment with its own bound values.
        package mutating func appendInterpolation(_ fragment: SQL) {
            text += fragment.text
            arguments += fragment.arguments
        }
    }
}
