import Foundation

/// The value expression of a property mapping, as `NSExpression` format text spells it:
/// `$source.title`, `"constant"`, `42`, `FUNCTION($source.name, "uppercaseString")`,
/// `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "PostToColor", $source)`,
/// and the functions of `NSExpression(forFunction:)` as an archived expression prints them
/// (`uppercase:($source.name)`, `add:to:($source.count, 1)`, `castObject:toType:($source.n, "NSString")`).
///
/// Parsing accepts that grammar only; ``MigrationRun`` evaluates what it can run and refuses the
/// rest by name (docs/MIGRATION.md lists both). Nesting is bounded: an expression comes from a
/// mapping model file, and is evaluated by recursion.
///
/// Threading: a value; share it freely.
public indirect enum MappingExpression: Sendable, Hashable, CustomStringConvertible {
    case constant(Expression.Literal)
    /// `$NAME.key.path`: `$source` (the object being migrated), `$manager`, `$entityPolicy`,
    /// `$destination`, `$entityMapping`, `$propertyMapping`.
    case variable(String, keyPath: [String])
    /// A key path without a variable, evaluated from `$source` (what a migration evaluates
    /// expressions with).
    case keyPath([String])
    /// `FUNCTION(target, "selector", arguments...)`: a method called on the target's value.
    case function(MappingExpression, selector: String, arguments: [MappingExpression])
    /// One of NSExpression's built-in functions, named by its selector without the last colon
    /// (`uppercase`, `add:to`, `now`), as an archive prints it: `uppercase:(...)`.
    case builtin(String, arguments: [MappingExpression])
    /// `{a, b}`.
    case aggregate([MappingExpression])

    static let keywords: Set<String> = ["YES", "NO", "TRUE", "FALSE", "NIL", "NULL", "FUNCTION", "CAST", "SELF"]

    /// How deep expressions may nest.
    public static let maximumNesting = 64

    /// Parses format text.
    ///
    /// - Throws: ``ObjectGraphError/Code/invalidModel`` quoting the expression, with the position
    ///   and what was expected there.
    public static func parse(_ text: String) throws(ObjectGraphError) -> MappingExpression {
        var parser = Parser(text: text)
        let expression = try parser.expression(depth: 0)
        parser.skipSpace()
        guard parser.index == parser.chars.count else { throw parser.error("expected the end of the expression") }
        return expression
    }

    public var description: String {
        switch self {
        case .constant(let literal): return literal.description
        case .variable(let name, let path): return "$" + name + path.map { "." + $0 }.joined()
        case .keyPath(let path):
            // A first key that spells a keyword is written #KEY, as NSExpression requires.
            guard let first = path.first, Self.keywords.contains(first.uppercased()) else {
                return path.joined(separator: ".")
            }
            return "#" + path.joined(separator: ".")
        case .function(let target, let selector, let arguments):
            return "FUNCTION(\(target), \(Expression.Literal.string(selector))\(arguments.map { ", \($0)" }.joined()))"
        case .builtin(let name, let arguments):
            return "\(name):(\(arguments.map(\.description).joined(separator: ", ")))"
        case .aggregate(let items): return "{" + items.map(\.description).joined(separator: ", ") + "}"
        }
    }

    // MARK: - Parsing

    /// Reads Unicode scalars, not characters: the printer escapes scalar by scalar, and a
    /// character would join a quote or a backslash with the combining mark after it.
    private struct Parser {
        let text: String
        let chars: [Unicode.Scalar]
        var index = 0

        init(text: String) {
            self.text = text
            self.chars = Array(text.unicodeScalars)
        }

        func string(_ range: Range<Int>) -> String {
            var view = String.UnicodeScalarView()
            view.append(contentsOf: chars[range])
            return String(view)
        }

        func error(_ expectation: String) -> ObjectGraphError {
            let quoted = text.count <= 200 ? "\"\(text)\"" : "\"\(text.prefix(100))…\" (\(text.count) characters)"
            return ObjectGraphError(
                .invalidModel, "value expression \(quoted) at position \(index + 1): \(expectation)")
        }

        mutating func skipSpace() {
            while index < chars.count, chars[index].properties.isWhitespace { index += 1 }
        }

        mutating func take(_ c: Unicode.Scalar) -> Bool {
            skipSpace()
            guard index < chars.count, chars[index] == c else { return false }
            index += 1
            return true
        }

        mutating func expect(_ c: Unicode.Scalar, _ context: String) throws(ObjectGraphError) {
            guard take(c) else { throw error("expected \"\(c)\" \(context)") }
        }

        static func isNameStart(_ c: Unicode.Scalar) -> Bool { c.properties.isAlphabetic || c == "_" }
        /// Letters, digits, `_` and the combining marks that follow a letter (a decomposed `é`).
        static func isNameCharacter(_ c: Unicode.Scalar) -> Bool {
            switch c.properties.generalCategory {
            case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber: true
            default: c.properties.isAlphabetic || c == "_"
            }
        }

        static func isDigit(_ c: Unicode.Scalar) -> Bool { c.isASCII && c.properties.numericType == .decimal }

        /// A name; with `colons`, a selector-like name (`add:to:`) as built-in functions print.
        mutating func name(colons: Bool = false) -> String {
            let start = index
            while index < chars.count, Self.isNameCharacter(chars[index]) || (colons && chars[index] == ":") {
                index += 1
            }
            return string(start..<index)
        }

        mutating func expression(depth: Int) throws(ObjectGraphError) -> MappingExpression {
            guard depth <= MappingExpression.maximumNesting else {
                throw error("nests deeper than \(MappingExpression.maximumNesting) levels")
            }
            skipSpace()
            guard index < chars.count else { throw error("expected a value, a key path or a function") }
            let c = chars[index]
            if c == "\"" || c == "'" { return .constant(.string(try string(quote: c))) }
            if Self.isDigit(c) || ((c == "-" || c == "+") && index + 1 < chars.count && Self.isDigit(chars[index + 1]))
            {
                return .constant(try number())
            }
            if c == "$" {
                index += 1
                guard index < chars.count, Self.isNameStart(chars[index]) else {
                    throw error("expected a variable name after \"$\"")
                }
                let variable = name()
                return .variable(variable, keyPath: try keyPathTail())
            }
            if c == "{" {
                index += 1
                var items: [MappingExpression] = []
                if take("}") { return .aggregate(items) }
                repeat { items.append(try expression(depth: depth + 1)) } while take(",")
                try expect("}", "to close the aggregate")
                return .aggregate(items)
            }
            if c == "(" {
                index += 1
                let inner = try expression(depth: depth + 1)
                try expect(")", "to close the parenthesis")
                return inner
            }
            if c == "#" {
                index += 1
                guard index < chars.count, Self.isNameStart(chars[index]) else {
                    throw error("expected a key after \"#\"")
                }
                let first = name()
                return .keyPath([first] + (try keyPathTail()))
            }
            guard Self.isNameStart(c) else { throw error("expected a value, a key path or a function, not \"\(c)\"") }
            let start = index
            let word = name(colons: true)
            if word.contains(":") {
                guard take("(") else {
                    index = start
                    throw error("expected \"(\" after the function name \(word)")
                }
                var selector = word
                if selector.hasSuffix(":") { selector.removeLast() }
                return .builtin(selector, arguments: try arguments(depth: depth))
            }
            switch word.uppercased() {
            case "YES", "TRUE": return .constant(.boolean(true))
            case "NO", "FALSE": return .constant(.boolean(false))
            case "NIL", "NULL": return .constant(.null)
            case "FUNCTION":
                try expect("(", "after FUNCTION")
                let target = try expression(depth: depth + 1)
                try expect(",", "between FUNCTION's target and its selector")
                skipSpace()
                guard index < chars.count, chars[index] == "\"" || chars[index] == "'" else {
                    throw error("expected FUNCTION's selector as a quoted string")
                }
                let selector = try string(quote: chars[index])
                var rest: [MappingExpression] = []
                while take(",") { rest.append(try expression(depth: depth + 1)) }
                try expect(")", "to close FUNCTION")
                return .function(target, selector: selector, arguments: rest)
            case "CAST":
                try expect("(", "after CAST")
                let value = try expression(depth: depth + 1)
                try expect(",", "in CAST")
                let type = try expression(depth: depth + 1)
                try expect(")", "to close CAST")
                if case .constant(.string("NSDate")) = type, case .constant(let literal) = value {
                    switch literal {
                    case .integer(let i): return .constant(.date(Double(i)))
                    case .double(let d): return .constant(.date(d))
                    default: break
                    }
                }
                return .builtin("castObject:toType", arguments: [value, type])
            case "SELF":
                let tail = try keyPathTail()
                return tail.isEmpty ? .variable("source", keyPath: []) : .keyPath(tail)
            default:
                if take("(") {
                    // `now()`, `uppercase(x)`: the function syntax without the colon.
                    return .builtin(word, arguments: try arguments(depth: depth))
                }
                return .keyPath([word] + (try keyPathTail()))
            }
        }

        /// Comma-separated arguments up to the closing parenthesis (the opening one is read).
        mutating func arguments(depth: Int) throws(ObjectGraphError) -> [MappingExpression] {
            var result: [MappingExpression] = []
            if take(")") { return result }
            repeat { result.append(try expression(depth: depth + 1)) } while take(",")
            try expect(")", "to close the function's arguments")
            return result
        }

        /// `.key.@count.key` after a variable or a first key.
        mutating func keyPathTail() throws(ObjectGraphError) -> [String] {
            var components: [String] = []
            while index < chars.count, chars[index] == "." {
                index += 1
                var component = ""
                if index < chars.count, chars[index] == "@" {
                    index += 1
                    component = "@"
                }
                let key = name()
                guard !key.isEmpty else { throw error("expected a key after \".\"") }
                components.append(component + key)
            }
            return components
        }

        mutating func string(quote: Unicode.Scalar) throws(ObjectGraphError) -> String {
            let start = index
            index += 1
            var value = ""
            while index < chars.count, chars[index] != quote {
                var c = chars[index]
                if c == "\\" {
                    index += 1
                    guard index < chars.count else { break }
                    c = chars[index]
                    switch c {
                    case "n": value.unicodeScalars.append("\n")
                    case "t": value.unicodeScalars.append("\t")
                    case "r": value.unicodeScalars.append("\r")
                    case "u":
                        let hex = index + 5 <= chars.count ? string((index + 1)..<(index + 5)) : ""
                        guard hex.count == 4, let code = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(code)
                        else {
                            throw error("expected four hexadecimal digits after \\u")
                        }
                        value.unicodeScalars.append(scalar)
                        index += 4
                    default: value.unicodeScalars.append(c)
                    }
                } else {
                    value.unicodeScalars.append(c)
                }
                index += 1
            }
            guard index < chars.count else {
                index = start
                throw error("expected a closing \(quote) for the string that starts here")
            }
            index += 1
            return value
        }

        mutating func number() throws(ObjectGraphError) -> Expression.Literal {
            let start = index
            if chars[index] == "-" || chars[index] == "+" { index += 1 }
            while index < chars.count,
                Self.isDigit(chars[index]) || chars[index] == "." || chars[index] == "e"
                    || chars[index] == "E"
                    || ((chars[index] == "-" || chars[index] == "+")
                        && (chars[index - 1] == "e" || chars[index - 1] == "E"))
            {
                index += 1
            }
            let text = string(start..<index)
            if let value = Int64(text) { return .integer(value) }
            guard let value = Double(text), value.isFinite else {
                index = start
                throw error("expected a number, not \(text)")
            }
            return .double(value)
        }
    }
}
