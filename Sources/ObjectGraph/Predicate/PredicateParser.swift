/// Parses the predicate format syntax of Xcode models (`NSPredicate(format:)` without arguments).
///
/// Precedence, loosest first: `OR`/`||`, `AND`/`&&`, `NOT`/`!`, then comparisons; keywords are
/// case-insensitive. Not supported (each an error naming the position): `%@`-style placeholders,
/// arithmetic, `SUBQUERY`, `FUNCTION`, and `CAST` to anything but `"NSDate"`. Date constants are
/// `CAST(seconds since 2001, "NSDate")` or, as storefs's own addition, `CAST("ISO 8601", "NSDate")`
/// in the forms attribute files accept (``ISO8601DateText``).
///
/// Parentheses, `NOT`s and aggregates nest at most ``maximumNesting`` levels: predicates are
/// evaluated, translated to SQL and freed by recursion, and a predicate comes from a model file
/// (possibly one a store carries), so its depth is input that must be bounded.
///
/// Threading: stateless; call from any thread.
public enum PredicateParser {
    /// How deep parentheses, `NOT` and `{...}` may nest (Xcode's predicate editor writes a few levels).
    public static let maximumNesting = 100

    /// Parses `text` into a ``Predicate``.
    ///
    /// - Throws: ``ObjectGraphError/Code/invalidModel`` with a message that quotes the predicate and
    ///   gives the 1-based character position and what was expected there.
    public static func parse(_ text: String) throws(ObjectGraphError) -> Predicate {
        var state = State(text: text, tokens: try PredicateLexer.tokens(of: text))
        let predicate = try state.orPredicate()
        guard state.peek.kind == .end else {
            throw state.error(
                at: state.peek, "expected AND, OR or the end of the predicate, not \(state.quoted(state.peek))")
        }
        return predicate
    }

    static func error(_ text: String, at position: Int, _ expectation: String) -> ObjectGraphError {
        // A long predicate (one from a hostile model can be megabytes) is quoted by its start.
        let quoted = text.count <= 200 ? "\"\(text)\"" : "\"\(text.prefix(100))…\" (\(text.count) characters)"
        return ObjectGraphError(.invalidModel, "predicate \(quoted) at position \(position): \(expectation)")
    }

    private struct State {
        typealias Token = PredicateLexer.Token
        let text: String
        let tokens: [Token]
        var index = 0
        /// Open parentheses, `NOT`s and aggregates around the current token.
        var nesting = 0

        init(text: String, tokens: [Token]) {
            self.text = text
            self.tokens = tokens
        }

        var peek: Token { tokens[index] }

        mutating func advance() -> Token {
            let token = tokens[index]
            if index < tokens.count - 1 { index += 1 }
            return token
        }

        func error(at token: Token, _ expectation: String) -> ObjectGraphError {
            PredicateParser.error(text, at: token.position, expectation)
        }

        func quoted(_ token: Token) -> String { token.kind == .end ? "the end" : "\"\(token.text)\"" }

        /// The keyword the next token spells (upper-cased), if it is an unescaped word.
        var keyword: String? {
            if case .word(let w, false) = peek.kind { return w.uppercased() }
            return nil
        }

        func isSymbol(_ s: String) -> Bool { peek.kind == .symbol(s) }

        /// Enters one more level of nesting at `token`, or throws beyond ``maximumNesting``.
        mutating func nest(at token: Token) throws(ObjectGraphError) {
            guard nesting < PredicateParser.maximumNesting else {
                throw error(
                    at: token,
                    "the predicate nests more than \(PredicateParser.maximumNesting) levels deep here; simplify it")
            }
            nesting += 1
        }

        // MARK: - Predicates

        mutating func orPredicate() throws(ObjectGraphError) -> Predicate {
            var operands = [try andPredicate()]
            while keyword == "OR" || isSymbol("||") {
                let op = advance()
                operands.append(try andPredicate(after: op))
            }
            return operands.count == 1 ? operands[0] : .or(operands)
        }

        mutating func andPredicate(after op: Token? = nil) throws(ObjectGraphError) -> Predicate {
            var operands = [try notPredicate(after: op)]
            while keyword == "AND" || isSymbol("&&") {
                let op = advance()
                operands.append(try notPredicate(after: op))
            }
            return operands.count == 1 ? operands[0] : .and(operands)
        }

        mutating func notPredicate(after op: Token?) throws(ObjectGraphError) -> Predicate {
            if keyword == "NOT" || isSymbol("!") {
                let op = advance()
                try nest(at: op)
                defer { nesting -= 1 }
                return .not(try notPredicate(after: op))
            }
            if peek.kind == .end, let op {
                throw error(at: peek, "expected a predicate after \"\(op.text)\"")
            }
            return try primary()
        }

        mutating func primary() throws(ObjectGraphError) -> Predicate {
            if isSymbol("(") {
                let open = advance()
                try nest(at: open)
                defer { nesting -= 1 }
                let inner = try orPredicate()
                guard isSymbol(")") else {
                    throw error(
                        at: peek,
                        "expected \")\" to close the \"(\" at position \(open.position), found \(quoted(peek))")
                }
                _ = advance()
                return inner
            }
            switch keyword {
            case "TRUEPREDICATE": _ = advance(); return .constant(true)
            case "FALSEPREDICATE": _ = advance(); return .constant(false)
            default: return try comparison()
            }
        }

        mutating func comparison() throws(ObjectGraphError) -> Predicate {
            var modifier = ComparisonModifier.direct
            switch keyword {
            case "ANY", "SOME": modifier = .any
            case "ALL": modifier = .all
            case "NONE": modifier = .none
            default: break
            }
            if modifier != .direct {
                let word = advance()
                switch peek.kind {
                case .word, .variable: break
                default:
                    throw error(at: peek, "expected a key path after \(word.text.uppercased()), found \(quoted(peek))")
                }
            }
            let lhsToken = peek
            let lhs = try expression(context: "a predicate")
            let (op, opToken) = try comparisonOperator(after: lhsToken)
            let options = try comparisonOptions()
            let rhs = try expression(context: "a value after \"\(opToken.text)\"")
            if op == .between, case .aggregate(let items) = rhs, items.count != 2 {
                throw error(at: opToken, "expected {low, high} with two values after BETWEEN")
            }
            return .comparison(lhs: lhs, op: op, rhs: rhs, options: options, modifier: modifier)
        }

        mutating func comparisonOperator(after lhs: Token) throws(ObjectGraphError)
            -> (ComparisonOperator, Token)
        {
            let token = peek
            let op: ComparisonOperator? =
                switch token.kind {
                case .symbol("=="), .symbol("="): .equal
                case .symbol("!="), .symbol("<>"): .notEqual
                case .symbol("<"): .less
                case .symbol("<="), .symbol("=<"): .lessOrEqual
                case .symbol(">"): .greater
                case .symbol(">="), .symbol("=>"): .greaterOrEqual
                case .word(let w, false):
                    switch w.uppercased() {
                    case "LIKE": .like
                    case "CONTAINS": .contains
                    case "BEGINSWITH": .beginsWith
                    case "ENDSWITH": .endsWith
                    case "MATCHES": .matches
                    case "IN": .in
                    case "BETWEEN": .between
                    default: nil
                    }
                default: nil
                }
            guard let op else {
                throw error(
                    at: token,
                    "expected a comparison operator (==, !=, <, <=, >, >=, LIKE, CONTAINS, BEGINSWITH, "
                        + "ENDSWITH, MATCHES, IN, BETWEEN) after \"\(lhs.text)\", found \(quoted(token))")
            }
            _ = advance()
            return (op, token)
        }

        mutating func comparisonOptions() throws(ObjectGraphError) -> ComparisonOptions {
            guard isSymbol("[") else { return [] }
            let open = advance()
            guard case .word(let letters, false) = peek.kind else {
                throw error(at: peek, "expected c, d or cd inside \"[\" at position \(open.position)")
            }
            var options: ComparisonOptions = []
            for letter in letters.lowercased() {
                switch letter {
                case "c": options.insert(.caseInsensitive)
                case "d": options.insert(.diacriticInsensitive)
                default: throw error(at: peek, "expected the options c, d or cd, not \"\(letters)\"")
                }
            }
            _ = advance()
            guard isSymbol("]") else {
                throw error(at: peek, "expected \"]\" to close the options at position \(open.position)")
            }
            _ = advance()
            return options
        }

        // MARK: - Expressions

        mutating func expression(context: String) throws(ObjectGraphError) -> Expression {
            let token = peek
            switch token.kind {
            case .string(let s): _ = advance(); return .constant(.string(s))
            case .integer(let i): _ = advance(); return .constant(.integer(i))
            case .double(let d): _ = advance(); return .constant(.double(d))
            case .variable(let name):
                _ = advance()
                return .variable(name, keyPath: try keyPathTail())
            case .symbol("{"):
                return try aggregate()
            case .word(let w, let escaped):
                if !escaped {
                    switch w.uppercased() {
                    case "YES", "TRUE": _ = advance(); return .constant(.boolean(true))
                    case "NO", "FALSE": _ = advance(); return .constant(.boolean(false))
                    case "NIL", "NULL": _ = advance(); return .constant(.null)
                    case "SELF":
                        _ = advance()
                        return .keyPath(["SELF"] + (try keyPathTail()))
                    case "CAST": return try cast()
                    case "SUBQUERY", "FUNCTION":
                        throw error(at: token, "expected a key path or a value; \(w.uppercased()) is not supported")
                    case let k where PredicateLexer.reservedWords.contains(k):
                        throw error(
                            at: token, "expected \(context), found the keyword \(w) (write #\(w) for a key named so)")
                    default: break
                    }
                }
                _ = advance()
                return .keyPath([w] + (try keyPathTail()))
            case .end:
                throw error(at: token, "expected \(context)")
            default:
                throw error(at: token, "expected \(context), found \(quoted(token))")
            }
        }

        /// `.name.@count.name...` after the first component; names after a dot may spell keywords.
        mutating func keyPathTail() throws(ObjectGraphError) -> [String] {
            var components: [String] = []
            while isSymbol(".") {
                let dot = advance()
                switch peek.kind {
                case .word(let w, _): components.append(w)
                case .collectionOperator(let op): components.append("@" + op)
                default: throw error(at: peek, "expected a key after \".\" at position \(dot.position)")
                }
                _ = advance()
            }
            return components
        }

        mutating func aggregate() throws(ObjectGraphError) -> Expression {
            let open = advance()
            try nest(at: open)
            defer { nesting -= 1 }
            var items: [Expression] = []
            if isSymbol("}") {
                _ = advance()
                return .aggregate(items)
            }
            while true {
                items.append(try expression(context: "a value in the aggregate at position \(open.position)"))
                if isSymbol(",") {
                    _ = advance()
                    continue
                }
                guard isSymbol("}") else {
                    throw error(at: peek, "expected \",\" or \"}\" in the aggregate at position \(open.position)")
                }
                _ = advance()
                return .aggregate(items)
            }
        }

        /// `CAST(number, "NSDate")`: a date constant, as Xcode's predicate editor writes one;
        /// `CAST("2024-05-01T12:30:00Z", "NSDate")`: the same from ISO 8601 text.
        mutating func cast() throws(ObjectGraphError) -> Expression {
            let word = advance()
            guard isSymbol("(") else { throw error(at: peek, "expected \"(\" after CAST") }
            _ = advance()
            let seconds: Double
            switch peek.kind {
            case .integer(let i): seconds = Double(i)
            case .double(let d): seconds = d
            case .string(let text):
                // An ISO 8601 date, as attribute files show dates (storefs's own form: NSPredicate
                // casts only numbers to dates).
                guard let date = ISO8601DateText.date(from: text) else {
                    throw error(
                        at: peek,
                        "expected an ISO 8601 date such as \"2024-05-01\", \"2024-05-01T12:30:00Z\" or "
                            + "\"2024-05-01T12:30:00.25+02:00\" in CAST, not \"\(text)\"")
                }
                seconds = date.timeIntervalSinceReferenceDate
            default:
                throw error(
                    at: peek,
                    "expected a number of seconds since 2001 or a quoted ISO 8601 date in CAST at position \(word.position)"
                )
            }
            _ = advance()
            guard isSymbol(",") else { throw error(at: peek, "expected \",\" in CAST at position \(word.position)") }
            _ = advance()
            guard case .string("NSDate") = peek.kind else {
                throw error(at: peek, "expected \"NSDate\" (the only CAST supported) at position \(peek.position)")
            }
            _ = advance()
            guard isSymbol(")") else {
                throw error(at: peek, "expected \")\" to close CAST at position \(word.position)")
            }
            _ = advance()
            return .constant(.date(seconds))
        }
    }
}
