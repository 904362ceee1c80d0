/// Splits predicate format text into tokens, each with its 1-based character position for error
/// messages.
struct PredicateLexer {
    enum Kind: Equatable {
        /// A name or keyword as written (`#name` has the `#` removed and `escaped` set).
        case word(String, escaped: Bool)
        /// `$NAME`.
        case variable(String)
        /// `@count`, `@avg`, ...
        case collectionOperator(String)
        case string(String)
        case integer(Int64)
        case double(Double)
        /// Operators and punctuation: `==`, `(`, `&&`, `,` ...
        case symbol(String)
        case end
    }

    struct Token {
        var kind: Kind
        /// 1-based character position of the token's first character.
        var position: Int
        /// The token as written, for messages.
        var text: String
    }

    /// Words that mean something to the parser; as the first component of a key path they need a
    /// `#` in front.
    static let reservedWords: Set<String> = [
        "AND", "OR", "NOT", "ANY", "ALL", "NONE", "SOME", "IN", "LIKE", "CONTAINS", "BEGINSWITH",
        "ENDSWITH", "MATCHES", "BETWEEN", "TRUEPREDICATE", "FALSEPREDICATE", "YES", "NO", "TRUE",
        "FALSE", "NIL", "NULL", "SELF", "CAST", "SUBQUERY", "FUNCTION"
    ]

    let text: String
    /// Unicode scalars, not characters: the printer escapes scalar by scalar, and a character
    /// would join a quote, a backslash or a `\u` digit with the combining mark after it.
    private let chars: [Unicode.Scalar]
    private var index = 0

    init(_ text: String) {
        self.text = text
        self.chars = Array(text.unicodeScalars)
    }

    private func string(_ range: Range<Int>) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: chars[range])
        return String(view)
    }

    private static func isDigit(_ c: Unicode.Scalar) -> Bool { c.isASCII && c.properties.numericType == .decimal }

    /// Every token, ending with `.end`.
    static func tokens(of text: String) throws(ObjectGraphError) -> [Token] {
        var lexer = PredicateLexer(text)
        var result: [Token] = []
        while true {
            let token = try lexer.next()
            result.append(token)
            if token.kind == .end { return result }
        }
    }

    func error(at position: Int, _ expectation: String) -> ObjectGraphError {
        PredicateParser.error(text, at: position, expectation)
    }

    private mutating func next() throws(ObjectGraphError) -> Token {
        while index < chars.count, chars[index].properties.isWhitespace { index += 1 }
        let start = index
        let position = start + 1
        guard index < chars.count else { return Token(kind: .end, position: position, text: "") }
        let c = chars[index]

        if c == "\"" || c == "'" { return try string(quote: c, start: start) }
        if Self.isDigit(c) { return try number(start: start) }
        if c == "-" || c == "+" || c == ".", index + 1 < chars.count, Self.isDigit(chars[index + 1]) {
            return try number(start: start)
        }
        if isNameStart(c) {
            let name = readName()
            return Token(kind: .word(name, escaped: false), position: position, text: name)
        }
        if c == "#" || c == "$" || c == "@" {
            index += 1
            guard index < chars.count, isNameStart(chars[index]) else {
                throw error(at: position + 1, "expected a name after \"\(c)\"")
            }
            let name = readName()
            let kind: Kind =
                switch c {
                case "#": .word(name, escaped: true)
                case "$": .variable(name)
                default: .collectionOperator(name)
                }
            return Token(kind: kind, position: position, text: String(c) + name)
        }
        if c == "%" {
            throw error(
                at: position,
                "expected a key path or a value; format placeholders such as %@ are not supported in model predicates")
        }
        for symbol in ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||"] where matches(symbol) {
            index += 2
            return Token(kind: .symbol(symbol), position: position, text: symbol)
        }
        if "=<>!(){}[],.".unicodeScalars.contains(c) {
            index += 1
            return Token(kind: .symbol(String(c)), position: position, text: String(c))
        }
        throw error(at: position, "expected a key path, a value or an operator, not \"\(c)\"")
    }

    private func matches(_ symbol: String) -> Bool {
        let s = Array(symbol.unicodeScalars)
        return index + s.count <= chars.count && Array(chars[index..<index + s.count]) == s
    }

    private func isNameStart(_ c: Unicode.Scalar) -> Bool { c.properties.isAlphabetic || c == "_" }

    /// Letters, digits, `_` and the combining marks that follow a letter (a decomposed `é`).
    private func isNameCharacter(_ c: Unicode.Scalar) -> Bool {
        switch c.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber: true
        default: c.properties.isAlphabetic || c == "_"
        }
    }

    private mutating func readName() -> String {
        let start = index
        while index < chars.count, isNameCharacter(chars[index]) { index += 1 }
        return string(start..<index)
    }

    private mutating func number(start: Int) throws(ObjectGraphError) -> Token {
        if chars[index] == "-" || chars[index] == "+" { index += 1 }
        var isInteger = true
        func digits() { while index < chars.count, Self.isDigit(chars[index]) { index += 1 } }
        digits()
        if index < chars.count, chars[index] == ".", index + 1 < chars.count, Self.isDigit(chars[index + 1]) {
            isInteger = false
            index += 1
            digits()
        }
        if index < chars.count, chars[index] == "e" || chars[index] == "E" {
            let mark = index
            index += 1
            if index < chars.count, chars[index] == "-" || chars[index] == "+" { index += 1 }
            if index < chars.count, Self.isDigit(chars[index]) {
                isInteger = false
                digits()
            } else {
                index = mark
            }
        }
        let text = string(start..<index)
        if index < chars.count, isNameStart(chars[index]) {
            throw error(at: index + 1, "expected an operator or a space after the number \(text)")
        }
        if isInteger, let value = Int64(text) {
            return Token(kind: .integer(value), position: start + 1, text: text)
        }
        guard let value = Double(text) else {
            throw error(at: start + 1, "expected a number, not \(text)")
        }
        return Token(kind: .double(value), position: start + 1, text: text)
    }

    private mutating func string(quote: Unicode.Scalar, start: Int) throws(ObjectGraphError) -> Token {
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
                case "0": value.unicodeScalars.append("\0")
                case "u":
                    let hex = index + 5 <= chars.count ? string((index + 1)..<(index + 5)) : ""
                    guard hex.count == 4, let code = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(code) else {
                        throw error(at: index, "expected four hexadecimal digits after \\u")
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
            throw error(at: start + 1, "expected a closing \(quote) for the string that starts here")
        }
        index += 1
        return Token(kind: .string(value), position: start + 1, text: string(start..<index))
    }
}
