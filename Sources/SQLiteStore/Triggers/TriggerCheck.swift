import Foundation
import GRDB
import ObjectGraph

/// The check a store gets before it is opened for writing: can every trigger in it run here?
///
/// Core Data writes triggers that call functions it registers at run time (``CoreDataFunctions``).
/// A trigger that calls a function storefs does not provide would make every save that fires it
/// fail, or, were it stubbed, skip what it does; so such a store is refused for writing when it
/// opens, with a message naming the functions and triggers, and read-only mounts (which never
/// fire a trigger) need no check.
///
/// Nothing is run and no SQL is parsed to find them: preparing a statement makes SQLite compile
/// every trigger it may fire (and the triggers those fire), and preparing `INSERT`, `UPDATE` and
/// `DELETE` of each table that has triggers reports `no such function: X` or `wrong number of
/// arguments to function X()`. That happens on a separate read-only connection that is closed
/// afterwards; a missing name is stubbed there only, and preparing again finds the next one, so
/// one message lists them all. The file is left byte for byte as it was.
///
/// It also reads which columns triggers maintain (`UPDATE T SET C = …` in their bodies): the
/// derived attributes stored there are the store's to compute, not a user's to set.
struct TriggerCheck: Sendable {
    /// A function a trigger calls that cannot run here, or another reason a triggered table
    /// cannot be written (an SQLite module that is missing, say).
    struct Problem: Sendable, Hashable {
        var function: String?
        var table: String
        var triggers: [String]
        var reason: String
    }

    /// The hooks to register on the connection that writes: the known ones and those of their
    /// family the triggers call.
    var hooks: [String] = CoreDataFunctions.knownHooks
    var problems: [Problem] = []
    /// Columns set by triggers, by table; both upper-cased.
    var maintainedColumns: [String: Set<String>] = [:]
    /// How many triggers the store has.
    var triggerCount = 0

    /// Preparing one statement stops after this many missing functions, each stubbed in turn.
    static let maximumRounds = 64

    /// Runs the check on a new read-only connection to `path`.
    static func run(path: String) throws(ObjectGraphError) -> TriggerCheck {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "storefs.trigger-check"
        configuration.busyMode = .timeout(10)
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in try check(db) }
        } catch let error as ObjectGraphError {
            throw error
        } catch {
            throw SQLiteStore.mapError(error, file: path)
        }
    }

    private static func check(_ db: Database) throws -> TriggerCheck {
        var result = TriggerCheck()
        let triggers = try Row.fetchAll(
            db, sql: "SELECT name, tbl_name, sql FROM main.sqlite_master WHERE type = 'trigger' ORDER BY name"
        ).map { (name: ($0[0] as String?) ?? "", table: ($0[1] as String?) ?? "", sql: ($0[2] as String?) ?? "") }
        result.triggerCount = triggers.count
        guard !triggers.isEmpty else { return result }
        for trigger in triggers {
            for (table, column) in assignedColumns(in: trigger.sql) {
                result.maintainedColumns[table.uppercased(), default: []].insert(column.uppercased())
            }
        }
        let sink = TriggerEffects()
        CoreDataFunctions.register(on: db, hooks: result.hooks, effects: sink)
        var stubbed: Set<String> = []
        func triggersCalling(_ function: String) -> [String] {
            triggers.filter { $0.sql.range(of: function, options: .caseInsensitive) != nil }.map(\.name)
        }
        for table in Set(triggers.map(\.table)).sorted() {
            let columns = try Row.fetchAll(db, sql: "PRAGMA main.table_info(\(table.quotedDatabaseIdentifier))")
                .compactMap { $0["name"] as String? }
            guard !columns.isEmpty else { continue }
            let quoted = columns.map(\.quotedDatabaseIdentifier)
            let t = "main." + table.quotedDatabaseIdentifier
            let statements = [
                "EXPLAIN INSERT INTO \(t) (\(quoted.joined(separator: ", "))) VALUES (\(quoted.map { _ in "NULL" }.joined(separator: ", ")))",
                "EXPLAIN UPDATE \(t) SET \(quoted.map { "\($0) = \($0)" }.joined(separator: ", ")) WHERE 0",
                "EXPLAIN DELETE FROM \(t) WHERE 0"
            ]
            for sql in statements {
                for _ in 0..<maximumRounds {
                    do {
                        _ = try db.makeStatement(sql: sql)  // compiled, never run
                        break
                    } catch let error as DatabaseError {
                        let message = error.message ?? "\(error)"
                        if let name = missingFunction(in: message) {
                            if CoreDataFunctions.isHookFamily(name) && !result.hooks.contains(name) {
                                result.hooks.append(name)
                                db.add(function: CoreDataFunctions.hook(name, effects: sink))
                                continue
                            }
                            if !stubbed.contains(name) {
                                result.problems.append(
                                    Problem(
                                        function: name, table: table, triggers: triggersCalling(name),
                                        reason: "not provided"))
                            }
                        } else if let name = wrongArity(in: message) {
                            if !stubbed.contains(name) {
                                result.problems.append(
                                    Problem(
                                        function: name, table: table, triggers: triggersCalling(name),
                                        reason: "called with another number of arguments than Core Data's"))
                            }
                        } else {
                            result.problems.append(Problem(function: nil, table: table, triggers: [], reason: message))
                            break
                        }
                        let name = missingFunction(in: message) ?? wrongArity(in: message) ?? ""
                        guard stubbed.insert(name).inserted else { break }
                        // Any number of arguments: only this connection, only to find the next.
                        db.add(function: DatabaseFunction(name, argumentCount: nil, pure: false) { _ in nil })
                    }
                }
            }
        }
        return result
    }

    /// The refusal to write, when something cannot run; nil when every trigger can.
    func refusal(file: String) -> ObjectGraphError? {
        guard !problems.isEmpty else { return nil }
        var seen: Set<String> = []
        var lines: [String] = []
        for problem in problems {
            let line: String
            if let function = problem.function {
                let where_ =
                    problem.triggers.isEmpty
                    ? "a trigger on \(problem.table)"
                    : "trigger \(problem.triggers.prefix(3).joined(separator: ", "))\(problem.triggers.count > 3 ? " and \(problem.triggers.count - 3) more" : "") on \(problem.table)"
                line = "  \(function) (\(where_)): \(problem.reason)"
            } else {
                line = "  triggers on \(problem.table): \(problem.reason)"
            }
            if seen.insert(line).inserted { lines.append(line) }
        }
        return ObjectGraphError(
            .unsupported,
            """
            \(file) cannot be written: its triggers call SQL functions storefs does not provide:
            \(lines.joined(separator: "\n"))
            Core Data registers these at run time; writing without them would fail or skip what they do. \
            Mount it read-only (-o ro) to browse it, or report the function names to the storefs developers.
            """)
    }

    /// `X` of SQLite's "no such function: X".
    static func missingFunction(in message: String) -> String? {
        guard let range = message.range(of: "no such function: ") else { return nil }
        let name = message[range.upperBound...].prefix { !$0.isWhitespace }
        return name.isEmpty ? nil : String(name)
    }

    /// `X` of SQLite's "wrong number of arguments to function X()".
    static func wrongArity(in message: String) -> String? {
        guard let range = message.range(of: "wrong number of arguments to function ") else { return nil }
        let name = message[range.upperBound...].prefix { $0 != "(" && !$0.isWhitespace }
        return name.isEmpty ? nil : String(name)
    }

    // MARK: - Columns triggers set

    /// The (table, column) pairs `UPDATE table SET column = …` statements of a trigger body set.
    static func assignedColumns(in sql: String) -> [(String, String)] {
        let tokens = SQLTokens(sql).all()
        var result: [(String, String)] = []
        var i = 0
        func keyword(_ index: Int, _ word: String) -> Bool {
            index < tokens.count && !tokens[index].quoted
                && tokens[index].text.caseInsensitiveCompare(word) == .orderedSame
        }
        while i < tokens.count {
            defer { i += 1 }
            guard keyword(i, "UPDATE") else { continue }
            var j = i + 1
            if keyword(j, "OR") { j += 2 }  // UPDATE OR REPLACE ...
            guard j < tokens.count, tokens[j].isIdentifier else { continue }
            var table = tokens[j].text
            if j + 2 < tokens.count, tokens[j + 1].text == ".", tokens[j + 2].isIdentifier {
                table = tokens[j + 2].text  // main.T
                j += 2
            }
            j += 1
            guard keyword(j, "SET") else { continue }
            j += 1
            while j + 1 < tokens.count, tokens[j].isIdentifier, tokens[j + 1].text == "=" {
                result.append((table, tokens[j].text))
                // Skip the expression: up to a comma at depth 0, or the end of the SET list.
                var depth = 0
                j += 2
                while j < tokens.count {
                    let token = tokens[j]
                    if !token.quoted {
                        if token.text == "(" {
                            depth += 1
                        } else if token.text == ")" {
                            depth -= 1
                        } else if depth == 0
                            && (token.text == "," || token.text == ";" || keyword(j, "WHERE") || keyword(j, "FROM")
                                || keyword(j, "END") || keyword(j, "RETURNING"))
                        {
                            break
                        }
                    }
                    j += 1
                }
                guard j < tokens.count, tokens[j].text == "," else { break }
                j += 1
            }
            i = j - 1
        }
        return result
    }
}

/// A rough SQL tokenizer, enough to find `UPDATE … SET` assignments in trigger bodies: words,
/// quoted identifiers, string literals (skipped whole) and single punctuation characters.
private struct SQLTokens {
    struct Token {
        var text: String
        var quoted: Bool
        var isString: Bool
        var isIdentifier: Bool {
            !isString && (quoted || text.first.map { $0.isLetter || $0 == "_" } == true)
        }
    }

    let scalars: [Unicode.Scalar]

    init(_ sql: String) { scalars = Array(sql.unicodeScalars) }

    func all() -> [Token] {
        var tokens: [Token] = []
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            if c.properties.isWhitespace {
                i += 1
            } else if c == "-" && i + 1 < scalars.count && scalars[i + 1] == "-" {
                while i < scalars.count && scalars[i] != "\n" { i += 1 }
            } else if c == "/" && i + 1 < scalars.count && scalars[i + 1] == "*" {
                i += 2
                while i + 1 < scalars.count && !(scalars[i] == "*" && scalars[i + 1] == "/") { i += 1 }
                i += 2
            } else if c == "'" || c == "\"" || c == "`" || c == "[" {
                let close: Unicode.Scalar = c == "[" ? "]" : c
                var text = String.UnicodeScalarView()
                i += 1
                while i < scalars.count {
                    if scalars[i] == close {
                        // A doubled quote is one quote character.
                        if close != "]" && i + 1 < scalars.count && scalars[i + 1] == close {
                            text.append(close)
                            i += 2
                            continue
                        }
                        break
                    }
                    text.append(scalars[i])
                    i += 1
                }
                i += 1
                tokens.append(Token(text: String(text), quoted: true, isString: c == "'"))
            } else if c.properties.isAlphabetic || c == "_" || ("0"..."9").contains(c) || c == "$" {
                var text = String.UnicodeScalarView()
                while i < scalars.count,
                    scalars[i].properties.isAlphabetic || scalars[i] == "_" || ("0"..."9").contains(scalars[i])
                        || scalars[i] == "$"
                {
                    text.append(scalars[i])
                    i += 1
                }
                tokens.append(Token(text: String(text), quoted: false, isString: false))
            } else {
                tokens.append(Token(text: String(c), quoted: false, isString: false))
                i += 1
            }
        }
        return tokens
    }
}
