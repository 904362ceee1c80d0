import Foundation

/// Turns archived `NSPredicate` and `NSExpression` objects (fetched properties, fetch request
/// templates, validation rules and derivations of a compiled model) back into the format syntax
/// Xcode writes in a model's `contents` and ``PredicateParser`` reads.
///
/// Comparisons, compounds, constants, key paths, variables, aggregates and `@count` come out in the
/// syntax the parser reads back; functions and subqueries come out as NSExpression prints them,
/// so an export shows them even where storefs cannot evaluate them. Nesting is bounded; an
/// unknown class is an error naming it. Stateless; safe from any thread.
enum ArchivedPredicateFormat {
    /// How deep predicates and expressions may nest.
    static let maximumDepth = 64

    static func predicate(_ object: ArchivedObject, depth: Int = 0) throws(ObjectGraphError) -> String {
        guard depth <= maximumDepth else { throw failure(object, "nests deeper than \(maximumDepth) levels") }
        if object.isKind(of: "NSTruePredicate") { return "TRUEPREDICATE" }
        if object.isKind(of: "NSFalsePredicate") { return "FALSEPREDICATE" }
        if object.isKind(of: "NSCompoundPredicate") {
            let operands = try (try object.object("NSSubpredicates")?.elements() ?? []).map {
                (operand) throws(ObjectGraphError) in
                let text = try predicate(operand, depth: depth + 1)
                return operand.isKind(of: "NSCompoundPredicate") ? "(\(text))" : text
            }
            switch object.integer("NSCompoundPredicateType") {
            case 0:
                guard operands.count == 1 else { throw failure(object, "is a NOT of \(operands.count) operands") }
                return "NOT " + operands[0]
            case 1: return operands.isEmpty ? "TRUEPREDICATE" : operands.joined(separator: " AND ")
            case 2: return operands.isEmpty ? "FALSEPREDICATE" : operands.joined(separator: " OR ")
            case let other: throw failure(object, "has compound type \(other.map(String.init) ?? "none")")
            }
        }
        if object.isKind(of: "NSComparisonPredicate") {
            guard let left = try object.object("NSLeftExpression"), let right = try object.object("NSRightExpression"),
                let op = try object.object("NSPredicateOperator")
            else { throw failure(object, "lacks an expression or its operator") }
            let lhs = try expression(left, depth: depth + 1)
            let rhs = try expression(right, depth: depth + 1)
            let modifier =
                switch op.integer("NSModifier") ?? 0 {
                case 1: "ALL "
                case 2: "ANY "
                default: ""
                }
            let flags = op.integer("NSOptions") ?? op.integer("NSFlags") ?? 0
            var options = ""
            if flags & 1 != 0 { options += "c" }
            if flags & 2 != 0 { options += "d" }
            if !options.isEmpty { options = "[\(options)]" }
            let symbol: String
            switch op.integer("NSOperatorType") {
            case 0: symbol = "<"
            case 1: symbol = "<="
            case 2: symbol = ">"
            case 3: symbol = ">="
            case 4: symbol = op.bool("NSNegate") ? "!=" : "=="
            case 5: symbol = "!="
            case 6: symbol = "MATCHES"
            case 7: symbol = "LIKE"
            case 8: symbol = "BEGINSWITH"
            case 9: symbol = "ENDSWITH"
            case 10: symbol = "IN"
            case 99: symbol = "CONTAINS"
            case 100: symbol = "BETWEEN"
            case let other: throw failure(object, "has operator type \(other.map(String.init) ?? "none")")
            }
            return "\(modifier)\(lhs) \(symbol)\(options) \(rhs)"
        }
        throw failure(object, "is an unsupported predicate class")
    }

    static func expression(_ object: ArchivedObject, depth: Int = 0) throws(ObjectGraphError) -> String {
        guard depth <= maximumDepth else { throw failure(object, "nests deeper than \(maximumDepth) levels") }
        if object.isKind(of: "NSSelfExpression") { return "SELF" }
        if object.isKind(of: "NSVariableExpression") {
            guard let name = try object.string("NSVariable"), !name.isEmpty else {
                throw failure(object, "has no variable name")
            }
            return "$" + name
        }
        if object.isKind(of: "NSKeyPathSpecifierExpression") {
            guard let path = try object.string("NSKeyPath") else { throw failure(object, "has no key path") }
            return path
        }
        if object.isKind(of: "NSConstantValueExpression") {
            return try constant(try object.object("NSConstantValue"), depth: depth + 1)
        }
        if object.isKind(of: "NSAggregateExpression") {
            let items = try (try object.object("NSCollection")?.elements() ?? []).map {
                (item) throws(ObjectGraphError) in try expression(item, depth: depth + 1)
            }
            return "{" + items.joined(separator: ", ") + "}"
        }
        if object.isKind(of: "NSSubqueryExpression") {
            guard let collection = try object.object("NSCollection"), let condition = try object.object("NSPredicate"),
                let variable = try object.string("NSVariable")
            else { throw failure(object, "lacks its collection, variable or predicate") }
            return "SUBQUERY(\(try expression(collection, depth: depth + 1)), $\(variable), "
                + "\(try predicate(condition, depth: depth + 1)))"
        }
        // Key paths and functions share NSFunctionExpression's encoding: an operand, a selector
        // and arguments.
        if object.isKind(of: "NSFunctionExpression") || object.isKind(of: "NSKeyPathExpression") {
            let selector = try object.string("NSSelectorName") ?? ""
            let arguments = try object.object("NSArguments")?.elements() ?? []
            let operand = try object.object("NSOperand")
            if selector == "valueForKey:" || selector == "valueForKeyPath:", arguments.count == 1 {
                let path = try expression(arguments[0], depth: depth + 1)
                guard let operand, !operand.isKind(of: "NSSelfExpression") else { return keyPath(path) }
                return try expression(operand, depth: depth + 1) + "." + path
            }
            let texts = try arguments.map { (argument) throws(ObjectGraphError) in
                try expression(argument, depth: depth + 1)
            }
            // Functions of the predicate utilities (count:, sum:, now ...) have a constant operand.
            guard let operand, !operand.isKind(of: "NSConstantValueExpression") else {
                if selector == "count:", texts.count == 1 { return texts[0] + ".@count" }
                // As NSExpression prints them: the selector, then the arguments (`now()`,
                // `lowercase:(name)`); the version hash of a derived attribute hashes this text.
                return "\(selector)(\(texts.joined(separator: ", ")))"
            }
            let target = try expression(operand, depth: depth + 1)
            return "FUNCTION(\(target), \"\(selector)\"\(texts.map { ", " + $0 }.joined()))"
        }
        throw failure(object, "is an unsupported expression class")
    }

    /// A constant: a string, number, date, nil or a collection of constants.
    private static func constant(_ value: ArchivedObject?, depth: Int) throws(ObjectGraphError) -> String {
        guard let value, depth <= maximumDepth else { return "nil" }
        switch value.value {
        case .string(let s): return Expression.Literal.string(s).description
        case .integer(let i): return String(i)
        case .real(let d): return Expression.Literal.double(d).description
        case .boolean(let b): return b ? "YES" : "NO"
        case .date(let t): return Expression.Literal.date(t).description
        default: break
        }
        if let s = try value.stringValue() { return Expression.Literal.string(s).description }
        if value.isKind(of: "NSDate"), case .real(let t)? = value["NS.time"] {
            return Expression.Literal.date(t).description
        }
        if value.isKind(of: "NSNull") { return "nil" }
        if value.isKind(of: "NSArray") || value.isKind(of: "NSSet") || value.isKind(of: "NSOrderedSet") {
            let items = try value.elements().map { (item) throws(ObjectGraphError) in
                try constant(item, depth: depth + 1)
            }
            return "{" + items.joined(separator: ", ") + "}"
        }
        throw failure(value, "is a constant of unsupported class")
    }

    /// A key path from SELF, with a reserved first word escaped as the parser requires.
    private static func keyPath(_ path: String) -> String {
        Expression.keyPath(path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)).description
    }

    private static func failure(_ object: ArchivedObject, _ message: String) -> ObjectGraphError {
        ObjectGraphError(
            .invalidModel,
            "\(object.archive.source): archived \(object.className ?? "value") (object \(object.uid)) \(message)")
    }
}
