import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

/// Translates a predicate without variables into one SQL query over Core Data's tables, or
/// declines (nil) when the predicate is one ``PredicateEvaluator`` reports an error for.
///
/// Two ways, both exact:
/// - **Plain SQL** for the common forms, so SQLite can use its indexes and read no value it does
///   not need. Every condition it writes is 0 or 1, never NULL: a comparison with a column that
///   may be NULL says what the evaluator says for nil (`nil != 5` is true, `nil < 5` false), so
///   `NOT` and `OR` keep their two-valued meaning. Values are compared as the evaluator compares
///   them: integers with integers exactly, with doubles as doubles (`CAST(column AS REAL)`);
///   doubles, floats and dates as REAL; decimals (stored as REAL) only with integers up to 2^53; a
///   string constant compared with a number is read as a number at translation time; strings
///   byte-wise as BLOBs (UTF-8 byte order is Unicode scalar order), with `[c]`/`[d]`,
///   `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`, `MATCHES` and `IN` with a string calling
///   `storefs_compare_strings` (the evaluator's own string comparison); objects by key and Z_ENT;
///   to-one key paths `LEFT JOIN` the destination's table; to-many key paths become `EXISTS` /
///   `NOT EXISTS` subqueries over the foreign key or join table (several to-many steps join in one
///   subquery, keeping duplicates as the evaluator's flattening does), `@count` a `COUNT(*)`
///   subquery, `@sum` of integers `SUM`, `@min`/`@max` `MIN`/`MAX`.
/// - **The evaluator inside SQLite** for everything else (key path against key path, `@avg`, sums
///   of doubles and decimals, decimals against doubles, strings against numbers, UUIDs, list
///   equality, to-many steps after to-one steps, a collection compared without a modifier through
///   a to-one that may be nil): each side becomes an SQL expression that yields the evaluator's
///   value (``PredicateFunctions``: a column decoded as reading the row decodes it, a collection
///   gathered by a subquery in the order the store lists the relationship, so sums of doubles add
///   in the same order), and `storefs_compare` runs ``PredicateEvaluator/compare(_:_:_:_:_:)``.
///
/// Declined, so that the evaluator reports them as it always has: keys the entity lacks, fetched
/// properties and transient relationships in key paths, keys after values, collection operators
/// the evaluator refuses for the values met (`@sum` of strings, `@max` of UUIDs, anything after
/// `@count`, a nested operator after `@avg`/`@min`/`@max`), `MATCHES` without a valid constant
/// pattern, `BETWEEN` without `{low, high}`, and the values of binary attributes that allow
/// external storage (their bytes may live in a file beside the store). ``PredicateChecker`` refuses
/// all of these up front. Declined too: relationships and entities the file has no column or
/// table for (a model that does not match the file; they read as empty).
///
/// One difference stays: a binary attribute's reference to an external file that is missing is a
/// value here (`photo != nil`), where reading the row finds none.
///
/// Threading: a single-use value; make one per query.
final class PredicateTranslator {
    /// Rows of one table and the joins their key paths need.
    final class Scope {
        let alias: String
        let entity: EntityID
        var joins: [String] = []
        var joined: [String: String] = [:]

        init(alias: String, entity: EntityID) {
            self.alias = alias
            self.entity = entity
        }
    }

    /// A value per row: an attribute (or aggregate) of a type, or an object as key and Z_ENT.
    enum Scalar {
        case attribute(sql: String, type: AttributeType)
        case object(key: String, zent: String)
    }

    /// The elements of a to-many key path: the subquery's tables, its link to the outer row, and
    /// the element value.
    struct Collection {
        let scope: Scope
        let from: String
        let link: String
        let element: Scalar
        /// Whether a to-one step led to the relationship: where it is nil, the evaluator sees nil
        /// rather than an empty collection.
        let throughToOne: Bool

        func subquery(where condition: String) -> String {
            "SELECT 1 FROM \(from) \(scope.joins.joined(separator: " ")) WHERE \(link) AND \(condition)"
        }
    }

    enum Operand {
        case scalar(Scalar)
        case collection(Collection)
    }

    /// A constant side of a comparison.
    indirect enum Constant {
        case null
        case string(String)
        case integer(Int64)
        case double(Double)
        case object(ObjectID)
        case list([Constant])
    }

    /// The rows a predicate selects: what to select them from (the table as `t0` and the joins
    /// its key paths need) and the condition.
    struct Selection {
        let from: String
        let condition: String
    }

    /// The name of the SQL function that compares strings as the evaluator does.
    static let compareStringsFunctionName = "storefs_compare_strings"

    let model: ManagedObjectModel
    let layout: StoreLayout
    /// Whether an integer `@sum` may be SQL's `SUM`, which fails on overflow: a query that
    /// overflowed is translated again without it (the evaluator's sum goes on as a decimal).
    let plainIntegerSums: Bool
    private(set) var arguments: [String: DatabaseValue] = [:]
    private var aliasCount = 0

    init(model: ManagedObjectModel, layout: StoreLayout, plainIntegerSums: Bool = true) {
        self.model = model
        self.layout = layout
        self.plainIntegerSums = plainIntegerSums
    }

    /// The rows of `entities` (rows of `table`, Z_ENT in `zents`) that are objects and match
    /// `predicate`; nil when it is declined (see the type's summary).
    ///
    /// `pageAfter`: the rows are read in pages by key, those after the key bound to `:pageAfter`
    /// (not negative), by key. That bound comes first and is the only one on the key: SQLite starts
    /// its walk at the first range it meets, and with `Z_PK > 0` first every page walked the table
    /// from its start. Several entities are tested with `+Z_ENT` (no index), or SQLite would take
    /// the Z_ENT index and sort everything after the bound for every page; one entity takes the
    /// index, which holds its keys in order.
    func selection(
        _ predicate: ObjectGraph.Predicate, entity: EntityID, table: String, zents: [Int64], pageAfter: Bool = false
    ) -> Selection? {
        let scope = Scope(alias: "t0", entity: entity)
        guard let condition = condition(predicate, scope), arguments.count <= Self.maximumBoundValues else {
            return nil
        }
        let entities = zents.map(String.init).joined(separator: ",")
        // The rows that are objects, as objectIDs(of:) reads them: a positive integer key.
        let objects =
            pageAfter
            ? "t0.Z_PK > :pageAfter AND \(zents.count > 1 ? "+" : "")t0.Z_ENT IN (\(entities)) AND typeof(t0.Z_PK) = 'integer'"
            : "t0.Z_ENT IN (\(entities)) AND typeof(t0.Z_PK) = 'integer' AND t0.Z_PK > 0"
        return Selection(
            from: "\(table.quotedDatabaseIdentifier) t0 \(scope.joins.joined(separator: " "))",
            condition: "\(objects) AND \(condition)")
    }

    /// The query for the objects of `entities` (rows of `table`) that match `predicate`, by key;
    /// nil when it is declined.
    func query(_ predicate: ObjectGraph.Predicate, entity: EntityID, table: String, zents: [Int64]) -> String? {
        guard let selection = selection(predicate, entity: entity, table: table, zents: zents) else { return nil }
        return "SELECT t0.Z_PK, t0.Z_ENT FROM \(selection.from) WHERE \(selection.condition) ORDER BY t0.Z_PK"
    }

    // MARK: - Predicates

    func condition(_ predicate: ObjectGraph.Predicate, _ scope: Scope) -> String? {
        switch predicate {
        case .constant(let value):
            return value ? "1" : "0"
        case .and(let operands):
            return compound(operands, "AND", empty: "1", scope)
        case .or(let operands):
            return compound(operands, "OR", empty: "0", scope)
        case .not(let operand):
            return condition(operand, scope).map { "(NOT \($0))" }
        case .comparison(let lhs, let op, let rhs, let options, let modifier):
            // Plain SQL where it is exact; its bindings are kept only when it is.
            let bound = arguments
            if let plain = comparison(lhs, op, rhs, options, modifier, scope) { return plain }
            arguments = bound
            return evaluated(lhs, op, rhs, options, modifier, scope)
        }
    }

    private func compound(_ operands: [ObjectGraph.Predicate], _ word: String, empty: String, _ scope: Scope) -> String?
    {
        guard !operands.isEmpty else { return empty }
        var parts: [String] = []
        for operand in operands {
            guard let part = condition(operand, scope) else { return nil }
            parts.append(part)
        }
        return Self.balanced(parts, word)
    }

    /// `parts` joined by `word` (AND, OR) as a balanced tree of parentheses: SQLite's parser
    /// nests `a OR b OR c …` one level per operand, and refuses an expression nested more than
    /// 1,000 levels ("Expression tree is too large"), so 6,000 ORs written flat would fail where
    /// the tree nests 13 levels.
    static func balanced(_ parts: [String], _ word: String) -> String {
        guard parts.count > flatOperands else { return "(" + parts.joined(separator: " \(word) ") + ")" }
        var level = parts
        while level.count > flatOperands {
            var next: [String] = []
            next.reserveCapacity(level.count / flatOperands + 1)
            var start = 0
            while start < level.count {
                let end = min(start + flatOperands, level.count)
                next.append("(" + level[start..<end].joined(separator: " \(word) ") + ")")
                start = end
            }
            level = next
        }
        return level.count == 1 ? level[0] : "(" + level.joined(separator: " \(word) ") + ")"
    }

    /// Operands written flat in one pair of parentheses before ``balanced(_:_:)`` nests them.
    static let flatOperands = 64

    private func comparison(
        _ lhs: ObjectGraph.Expression, _ op: ComparisonOperator, _ rhs: ObjectGraph.Expression,
        _ options: ComparisonOptions,
        _ modifier: ComparisonModifier, _ scope: Scope
    ) -> String? {
        if case .keyPath(let path) = lhs, let right = constant(rhs) {
            guard
                let operand = resolve(path[...], in: scope, from: scope.alias, entity: scope.entity, allowToMany: true)
            else { return nil }
            switch operand {
            case .scalar(let value):
                guard let test = compare(value, op, right, options) else { return nil }
                switch modifier {
                case .direct: return test
                case .any: return "(\(isNull(value, false)) AND \(test))"
                case .all: return "(\(isNull(value, true)) OR \(test))"
                case .none: return "(\(isNull(value, true)) OR NOT \(test))"
                }
            case .collection(let elements):
                if modifier == .direct && op == .contains {
                    // A collection CONTAINS a value: membership (false for nil, as for none).
                    return equal(elements.element, right, options).map { "EXISTS (\(elements.subquery(where: $0)))" }
                }
                // Compared without a modifier, a nil reached through a to-one is compared as nil,
                // not as an empty collection: left to the evaluator's comparison.
                if modifier == .direct && elements.throughToOne { return nil }
                if modifier == .direct, case .list = right, op == .equal || op == .notEqual { return nil }
                guard let test = compare(elements.element, op, right, options) else { return nil }
                switch modifier {
                case .direct, .any: return "EXISTS (\(elements.subquery(where: test)))"
                case .all: return "(NOT EXISTS (\(elements.subquery(where: "NOT (\(test))"))))"
                case .none: return "(NOT EXISTS (\(elements.subquery(where: test))))"
                }
            }
        }
        if case .keyPath(let path) = rhs, let left = constant(lhs), op == .in, modifier == .direct {
            // `value IN keyPath`: membership in a collection, equality with an object or a
            // non-string value (a string key path would be a substring test).
            guard
                let operand = resolve(path[...], in: scope, from: scope.alias, entity: scope.entity, allowToMany: true)
            else { return nil }
            switch operand {
            case .collection(let elements):
                return equal(elements.element, left, options).map { "EXISTS (\(elements.subquery(where: $0)))" }
            case .scalar(let value):
                if case .null = left { return "0" }
                if case .attribute(_, let type) = value, type == .string || type == .uri { return nil }
                return equal(value, left, options)
            }
        }
        return nil
    }

    private func constant(_ expression: ObjectGraph.Expression) -> Constant? {
        switch expression {
        case .constant(let literal):
            switch literal {
            case .null: return .null
            case .string(let s): return .string(s)
            case .integer(let i): return .integer(i)
            case .double(let d): return .double(d)
            case .boolean(let b): return .integer(b ? 1 : 0)
            // A date constant compares as its seconds, like a double.
            case .date(let d): return .double(d)
            case .object(let id): return .object(id)
            }
        case .aggregate(let items):
            var values: [Constant] = []
            for item in items {
                guard let value = constant(item) else { return nil }
                values.append(value)
            }
            return .list(values)
        case .keyPath, .variable:
            return nil
        }
    }

    // MARK: - Key paths

    private func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount)"
    }

    /// The alias of the rows to-one `key` of the rows `alias` leads to, joined once per scope.
    private func joinToOne(
        _ key: String, keySQL: String, table: String, from alias: String, in scope: Scope
    ) -> String {
        let joinKey = "\(alias).\(key)"
        if let existing = scope.joined[joinKey] { return existing }
        let next = newAlias()
        scope.joins.append("LEFT JOIN \(table.quotedDatabaseIdentifier) \(next) ON \(next).Z_PK = \(keySQL)")
        scope.joined[joinKey] = next
        return next
    }

    /// Resolves `path` from the rows `alias` of `entity` (in `scope`, which gets the joins).
    private func resolve(
        _ path: ArraySlice<String>, in scope: Scope, from alias: String, entity: EntityID, allowToMany: Bool
    ) -> Operand? {
        var path = path
        if path.first == "SELF" { path = path.dropFirst() }
        var alias = alias
        var entity = entity
        var throughToOne = false
        var index = path.startIndex
        while index < path.endIndex {
            var key = path[index]
            let description = model[entity]
            if let (element, next) = description.compositeElement(in: path, at: index) {
                // A composite's element: its components name one attribute (`author.person`).
                key = element
                index = next - 1
            }
            let isLast = index == path.endIndex - 1
            if let attribute = description.attribute(named: key) {
                guard isLast else { return nil }
                let column = layout[entity].attributes.first { $0.attribute.name == key }?.column
                let sql = column.map { "\(alias).\($0.quotedDatabaseIdentifier)" } ?? "NULL"
                return .scalar(.attribute(sql: sql, type: attribute.type))
            }
            guard let relationship = description.relationship(named: key), !relationship.isTransient,
                let destination = model.entityID(named: relationship.destinationEntityName)
            else { return nil }
            if relationship.isToMany {
                guard allowToMany else { return nil }
                return collection(
                    key, of: entity, from: alias, destination: destination, rest: path[(index + 1)...],
                    throughToOne: throughToOne)
            }
            guard let toOne = layout[entity].toOne.first(where: { $0.name == key }), let column = toOne.column else {
                return nil
            }
            let keySQL = "\(alias).\(column.quotedDatabaseIdentifier)"
            if isLast {
                return .scalar(.object(key: keySQL, zent: zent(of: toOne, alias)))
            }
            guard let table = layout[destination].table else { return nil }
            alias = joinToOne(key, keySQL: keySQL, table: table, from: alias, in: scope)
            entity = destination
            throughToOne = true
            index += 1
        }
        return .scalar(.object(key: "\(alias).Z_PK", zent: "\(alias).Z_ENT"))
    }

    /// The SQL for the Z_ENT of a to-one's destination, as reading a row decides it.
    private func zent(of toOne: StoreLayout.ToOneColumn, _ alias: String) -> String {
        let declared = layout[toOne.destination].zent.map(String.init) ?? "NULL"
        guard let entityColumn = toOne.entityColumn else { return declared }
        return "IFNULL(\(alias).\(entityColumn.quotedDatabaseIdentifier), \(declared))"
    }

    /// The tables that join to-many `name` of the rows `alias`: the table holding the link (with
    /// its alias), the link to `alias`, the destination table and its join condition (for a join
    /// table), the destination rows' alias, and the columns that order the destinations as the
    /// store lists them.
    private struct ToManyTables {
        var table: String
        var link: String
        var destination: (table: String, on: String)?
        var alias: String
        var order: [String]

        /// The tables joined after earlier ones: inner, or left (a row of NULLs when there is none).
        func joined(left: Bool) -> String {
            let word = left ? "LEFT JOIN" : "JOIN"
            var sql = "\(word) \(table) ON \(link)"
            if let destination { sql += " \(word) \(destination.table) ON \(destination.on)" }
            return sql
        }

        /// The tables as the start of a FROM clause (the link goes to WHERE).
        var from: String {
            guard let destination else { return table }
            return "\(table) JOIN \(destination.table) ON \(destination.on)"
        }
    }

    private func toManyTables(_ name: String, of entity: EntityID, from alias: String) -> ToManyTables? {
        guard let mapping = layout[entity].toMany[name] else { return nil }
        switch mapping {
        case .foreignKey(let table, let column, let orderColumn, _):
            let a = newAlias()
            let link = "\(a).\(column.quotedDatabaseIdentifier) = \(alias).Z_PK"
            let order = (orderColumn.map { ["\(a).\($0.quotedDatabaseIdentifier)"] } ?? []) + ["\(a).Z_PK"]
            return ToManyTables(
                table: "\(table.quotedDatabaseIdentifier) \(a)", link: link, destination: nil, alias: a, order: order)
        case .joinTable(let table, let sourceColumn, let destinationColumn, let orderColumn, let destinationTable, _):
            let j = newAlias()
            let a = newAlias()
            let order =
                (orderColumn.map { ["\(j).\($0.quotedDatabaseIdentifier)"] } ?? []) + [
                    "\(j).\(destinationColumn.quotedDatabaseIdentifier)"
                ]
            return ToManyTables(
                table: "\(table.quotedDatabaseIdentifier) \(j)",
                link: "\(j).\(sourceColumn.quotedDatabaseIdentifier) = \(alias).Z_PK",
                destination: (
                    "\(destinationTable.quotedDatabaseIdentifier) \(a)",
                    "\(a).Z_PK = \(j).\(destinationColumn.quotedDatabaseIdentifier)"
                ),
                alias: a, order: order)
        case .missing:
            return nil
        }
    }

    private func collection(
        _ name: String, of entity: EntityID, from alias: String, destination: EntityID, rest: ArraySlice<String>,
        throughToOne: Bool
    ) -> Operand? {
        guard let start = toManyTables(name, of: entity, from: alias) else { return nil }
        let scope = Scope(alias: start.alias, entity: destination)
        var elementAlias = start.alias
        var elementEntity = destination
        var rest = rest
        // Further to-many steps join in the same subquery: one row per flattened element.
        while let key = rest.first, let relationship = model[elementEntity].relationship(named: key),
            relationship.isToMany, !relationship.isTransient,
            let next = model.entityID(named: relationship.destinationEntityName)
        {
            guard let step = toManyTables(key, of: elementEntity, from: elementAlias) else { return nil }
            scope.joins.append(step.joined(left: false))
            elementAlias = step.alias
            elementEntity = next
            rest = rest.dropFirst()
        }
        func make(_ element: Scalar) -> Collection {
            Collection(scope: scope, from: start.from, link: start.link, element: element, throughToOne: throughToOne)
        }
        if let key = rest.first, key.hasPrefix("@") {
            let rows = make(.object(key: "\(elementAlias).Z_PK", zent: "\(elementAlias).Z_ENT"))
            switch key.lowercased() {
            case "@count" where rest.count == 1:
                // Through a nil to-one the evaluator counts nil's elements: none, as COUNT does.
                let body = "FROM \(rows.from) \(scope.joins.joined(separator: " ")) WHERE \(rows.link)"
                return .scalar(.attribute(sql: "(SELECT COUNT(*) \(body))", type: .integer64))
            case "@sum", "@min", "@max":
                guard
                    case .scalar(.attribute(let sql, let type))? = resolve(
                        rest.dropFirst(), in: scope, from: elementAlias, entity: elementEntity, allowToMany: false)
                else { return nil }
                // Recompute the body: resolving may have added joins.
                let body = "FROM \(rows.from) \(scope.joins.joined(separator: " ")) WHERE \(rows.link)"
                if key.lowercased() == "@sum" {
                    // Integer sums are exact both ways; sums of doubles depend on the order of
                    // addition, decimal sums on decimal arithmetic (both left to the evaluator's).
                    guard plainIntegerSums, [.integer16, .integer32, .integer64, .boolean].contains(type) else {
                        return nil
                    }
                    return .scalar(.attribute(sql: "(SELECT IFNULL(SUM(\(sql)), 0) \(body))", type: .integer64))
                }
                guard kind(of: type) != nil, ![.uuid, .binaryData, .transformable].contains(type) else { return nil }
                let function = key.lowercased() == "@min" ? "MIN" : "MAX"
                return .scalar(.attribute(sql: "(SELECT \(function)(\(sql)) \(body))", type: type))
            default:
                return nil
            }
        }
        guard
            case .scalar(let element)? = resolve(
                rest, in: scope, from: elementAlias, entity: elementEntity, allowToMany: false)
        else { return nil }
        return .collection(make(element))
    }

    // MARK: - Comparing in plain SQL

    enum Kind {
        case integer, decimal, double, string, uuid, data
    }

    func kind(of type: AttributeType) -> Kind? {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: .integer
        case .decimal: .decimal
        case .double, .float, .date: .double
        case .string, .uri: .string
        case .uuid: .uuid
        case .binaryData, .transformable: .data
        case .objectID, .undefined: nil
        }
    }

    /// `(value IS NULL)` or, with `positive` false, `(value IS NOT NULL)`.
    private func isNull(_ value: Scalar, _ positive: Bool) -> String {
        let sql: String
        switch value {
        case .attribute(let s, _): sql = s
        case .object(let key, _): sql = key
        }
        return "(\(sql) IS \(positive ? "" : "NOT ")NULL)"
    }

    func bind(_ value: DatabaseValue) -> String {
        let name = "p\(arguments.count)"
        arguments[name] = value
        return ":" + name
    }

    private func compare(_ value: Scalar, _ op: ComparisonOperator, _ right: Constant, _ options: ComparisonOptions)
        -> String?
    {
        switch op {
        case .equal:
            return equal(value, right, options)
        case .notEqual:
            return equal(value, right, options).map { "(NOT \($0))" }
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            return order(value, op, right, options)
        case .between:
            guard case .list(let bounds) = right, bounds.count == 2,
                let low = order(value, .greaterOrEqual, bounds[0], options),
                let high = order(value, .lessOrEqual, bounds[1], options)
            else { return nil }
            return "(\(low) AND \(high))"
        case .in:
            switch right {
            case .list(let items):
                guard !items.isEmpty else { return "0" }
                return membership(value, items, options)
            case .string(let haystack):
                return strings(value, .in, haystack, options)
            case .null:
                return "0"
            default:
                return equal(value, right, options)
            }
        case .contains, .beginsWith, .endsWith, .like, .matches:
            guard case .string(let pattern) = right else { return "0" }
            return strings(value, op, pattern, options)
        }
    }

    func equal(_ value: Scalar, _ right: Constant, _ options: ComparisonOptions) -> String? {
        if case .null = right { return isNull(value, true) }
        switch value {
        case .object(let key, let zent):
            guard case .object(let id) = right else { return "0" }
            guard id.entity.rawValue >= 1, id.entity.rawValue <= layout.entities.count,
                let z = layout[id.entity].zent
            else { return "0" }
            let entityTest = zent == String(z) ? "" : " AND \(zent) = \(z)"
            return "(\(key) IS NOT NULL AND \(key) = \(id.key.rawValue)\(entityTest))"
        case .attribute(let sql, let type):
            switch right {
            case .object, .list: return "0"
            default: return attribute(sql, type, .equal, right, options)
            }
        }
    }

    private func order(_ value: Scalar, _ op: ComparisonOperator, _ right: Constant, _ options: ComparisonOptions)
        -> String?
    {
        guard case .attribute(let sql, let type) = value else { return "0" }
        switch right {
        case .null, .object, .list: return "0"
        default: return attribute(sql, type, op, right, options)
        }
    }

    /// An attribute compared (`==`, `<`, `<=`, `>`, `>=`) with a string or number.
    private func attribute(
        _ sql: String, _ type: AttributeType, _ op: ComparisonOperator, _ right: Constant, _ options: ComparisonOptions
    ) -> String? {
        guard let kind = kind(of: type) else { return nil }
        let sqlOp = op == .equal ? "=" : op.rawValue
        switch kind {
        case .string:
            guard case .string(let text) = right else { return nil }
            if options.isEmpty {
                return "(\(sql) IS NOT NULL AND CAST(\(sql) AS BLOB) \(sqlOp) \(bind(Data(text.utf8).databaseValue)))"
            }
            return strings(.attribute(sql: sql, type: type), op, text, options)
        case .uuid:
            guard op == .equal, case .string(let text) = right, let uuid = UUID(uuidString: text) else { return nil }
            let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
            return "(\(sql) IS NOT NULL AND \(sql) = \(bind(bytes.databaseValue)))"
        case .data:
            return "0"
        case .integer, .decimal, .double:
            var number = right
            if case .string(let text) = right {
                // Read as a number, as the evaluator (and SQLite's affinity) reads it.
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                if let i = Int64(trimmed) {
                    number = .integer(i)
                } else if let d = Double(trimmed), d.isFinite {
                    number = .double(d)
                } else {
                    return "0"
                }
            }
            let guarded = { (test: String) in "(\(sql) IS NOT NULL AND \(test))" }
            switch (kind, number) {
            case (.integer, .integer(let i)):
                return guarded("\(sql) \(sqlOp) \(bind(i.databaseValue))")
            case (.integer, .double(let d)):
                return guarded("CAST(\(sql) AS REAL) \(sqlOp) \(bind(d.databaseValue))")
            case (.double, .integer(let i)):
                return guarded("\(sql) \(sqlOp) \(bind(Double(i).databaseValue))")
            case (.double, .double(let d)):
                return guarded("\(sql) \(sqlOp) \(bind(d.databaseValue))")
            case (.decimal, .integer(let i)) where i.magnitude <= 1 << 53:
                return guarded("\(sql) \(sqlOp) \(bind(i.databaseValue))")
            default:
                return nil
            }
        }
    }

    /// A string operator through the evaluator's own string comparison.
    private func strings(_ value: Scalar, _ op: ComparisonOperator, _ pattern: String, _ options: ComparisonOptions)
        -> String?
    {
        guard case .attribute(let sql, let type) = value, type == .string || type == .uri else { return "0" }
        switch op {
        case .contains, .beginsWith, .endsWith:
            if pattern.isEmpty { return "0" }
        case .matches:
            guard PredicateEvaluator.isValidRegularExpression(pattern) else { return nil }
        default:
            break
        }
        let call =
            "\(Self.compareStringsFunctionName)(CAST(\(sql) AS BLOB), '\(op.rawValue)', \(options.rawValue), "
            + "\(bind(Data(pattern.utf8).databaseValue)))"
        return "(\(sql) IS NOT NULL AND \(call))"
    }

    // MARK: - Comparing with the evaluator's values

    /// What a key path reaches, for the collection operators' checks.
    private enum Reached {
        case attribute(AttributeType)
        case objects
    }

    /// SQL yielding a value (``PredicateValueCoding``) and what it is.
    private struct ValueSQL {
        var sql: String
        var reached: Reached?
    }

    /// The comparison through `storefs_compare`, both sides as the evaluator's values.
    private func evaluated(
        _ lhs: ObjectGraph.Expression, _ op: ComparisonOperator, _ rhs: ObjectGraph.Expression,
        _ options: ComparisonOptions,
        _ modifier: ComparisonModifier, _ scope: Scope
    ) -> String? {
        // The evaluator's comparison throws for these; it reports them itself.
        if op == .matches {
            guard case .constant(.string(let pattern)) = rhs, PredicateEvaluator.isValidRegularExpression(pattern)
            else {
                return nil
            }
        }
        if op == .between {
            guard case .aggregate(let bounds) = rhs, bounds.count == 2 else { return nil }
        }
        // Compared with nil for (in)equality, only whether a value is there matters: externally
        // stored bytes then need no reading (as for @count).
        let withNil = (op == .equal || op == .notEqual) && (lhs == .constant(.null) || rhs == .constant(.null))
        guard let left = value(lhs, scope, counting: withNil), let right = value(rhs, scope, counting: withNil) else {
            return nil
        }
        return "(\(PredicateFunctions.compare)(\(left.sql), \(right.sql), '\(op.rawValue)', \(options.rawValue), "
            + "'\(modifier.rawValue)') = 1)"
    }

    /// `counting`: only whether each value is nil matters (see ``pathValue(_:_:counting:)``).
    private func value(_ expression: ObjectGraph.Expression, _ scope: Scope, counting: Bool = false) -> ValueSQL? {
        switch expression {
        case .constant(let literal):
            var value = PredicateEvaluator.Value(literal)
            if case .object(let id) = literal {
                // Objects travel as Z_ENT and key (see PredicateValueCoding).
                let zent =
                    id.entity.rawValue >= 1 && id.entity.rawValue <= layout.entities.count
                    ? layout[id.entity].zent : nil
                value = PredicateValueCoding.object(zent: zent ?? -1, key: id.key.rawValue)
            }
            return ValueSQL(sql: PredicateFunctions.literal(value), reached: nil)
        case .aggregate(let items):
            guard !items.isEmpty else { return ValueSQL(sql: PredicateFunctions.literal(.list([])), reached: nil) }
            var parts: [String] = []
            for item in items {
                guard let part = value(item, scope) else { return nil }
                parts.append(part.sql)
            }
            return ValueSQL(sql: "\(PredicateFunctions.makeList)(\(parts.joined(separator: ", ")))", reached: nil)
        case .variable:
            return nil
        case .keyPath(let path):
            var components = path[...]
            if components.first == "SELF" { components = components.dropFirst() }
            guard let at = components.firstIndex(where: { $0.hasPrefix("@") }) else {
                return pathValue(components, scope, counting: counting)
            }
            let op = components[at].lowercased()
            let before = components[..<at]
            let rest = components[(at + 1)...]
            switch op {
            case "@count":
                guard rest.isEmpty, let counted = pathValue(before, scope, counting: true) else { return nil }
                return ValueSQL(sql: "\(PredicateFunctions.count)(\(counted.sql))", reached: .attribute(.integer64))
            case "@sum", "@avg", "@min", "@max":
                // The evaluator aggregates the values of `rest` from each element of `before`:
                // the values of the whole path, flattened, with nils left out. A second operator
                // in `rest` aggregates per element, which that would not.
                guard !rest.contains(where: { $0.hasPrefix("@") }),
                    let values = pathValue(before + rest, scope), case .attribute(let type)? = values.reached
                else { return nil }
                let numeric: Set<AttributeType> = [
                    .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean
                ]
                let ordered = numeric.union([.date, .string, .uri])
                guard (op == "@sum" || op == "@avg" ? numeric : ordered).contains(type) else { return nil }
                let result: AttributeType = op == "@min" || op == "@max" ? type : .decimal
                return ValueSQL(
                    sql: "\(PredicateFunctions.aggregate)('\(op)', \(values.sql))", reached: .attribute(result))
            default:
                return nil
            }
        }
    }

    /// The value of a key path without collection operators from the rows of `scope`.
    /// `counting`: only whether each value is nil matters (`@count`), so externally stored bytes
    /// need not be read.
    private func pathValue(_ path: ArraySlice<String>, _ scope: Scope, counting: Bool = false) -> ValueSQL? {
        var alias = scope.alias
        var entity = scope.entity
        var throughToOne = false
        var index = path.startIndex
        while index < path.endIndex {
            var key = path[index]
            if let (element, next) = model[entity].compositeElement(in: path, at: index) {
                key = element
                index = next - 1
            }
            let isLast = index == path.endIndex - 1
            switch step(key, of: entity) {
            case nil:
                return nil
            case .attribute(let attribute)?:
                guard isLast else { return nil }
                return attributeValue(attribute, of: entity, alias, counting: counting)
            case .toMany(let relationship, let destination)?:
                guard
                    let list = collectionValue(
                        relationship.name, of: entity, from: alias, destination, path[(index + 1)...],
                        counting: counting)
                else { return nil }
                // Through a nil to-one the evaluator sees nil, not an empty collection.
                let sql =
                    throughToOne
                    ? "CASE WHEN \(alias).Z_PK IS NULL THEN \(PredicateFunctions.literal(bytes: PredicateValueCoding.nullBytes)) ELSE \(list.sql) END"
                    : list.sql
                return ValueSQL(sql: sql, reached: list.reached)
            case .toOne(let toOne, let column, let destination)?:
                let keySQL = "\(alias).\(column.quotedDatabaseIdentifier)"
                if isLast {
                    return ValueSQL(
                        sql: "\(PredicateFunctions.object)(\(zent(of: toOne, alias)), \(keySQL))", reached: .objects)
                }
                guard let table = layout[destination].table else { return nil }
                alias = joinToOne(toOne.name, keySQL: keySQL, table: table, from: alias, in: scope)
                entity = destination
                throughToOne = true
            }
            index += 1
        }
        return ValueSQL(sql: "\(PredicateFunctions.object)(\(alias).Z_ENT, \(alias).Z_PK)", reached: .objects)
    }

    /// The collection to-many `name` of the rows `alias` leads to along `rest`, gathered by a
    /// subquery whose rows are the evaluator's elements in its order: one per destination,
    /// flattened over further to-many steps; a nil reached by a to-one step is one nil element
    /// (a to-many step from it stays that one nil), as the evaluator's steps make them.
    private func collectionValue(
        _ name: String, of entity: EntityID, from alias: String, _ destination: EntityID, _ rest: ArraySlice<String>,
        counting: Bool
    ) -> ValueSQL? {
        guard let start = toManyTables(name, of: entity, from: alias) else { return nil }
        let scope = Scope(alias: start.alias, entity: destination)
        var conditions = [start.link]
        var order = start.order
        var elementAlias = start.alias
        var elementEntity = destination
        var mayBeNil = false
        var element: ValueSQL?
        var index = rest.startIndex
        while index < rest.endIndex, element == nil {
            let key = rest[index]
            let isLast = index == rest.endIndex - 1
            switch step(key, of: elementEntity) {
            case nil:
                return nil
            case .attribute(let attribute)?:
                guard isLast, let value = attributeValue(attribute, of: elementEntity, elementAlias, counting: counting)
                else { return nil }
                element = value
            case .toMany(let relationship, let next)?:
                guard let step = toManyTables(relationship.name, of: elementEntity, from: elementAlias) else {
                    return nil
                }
                scope.joins.append(step.joined(left: mayBeNil))
                if mayBeNil { conditions.append("(\(elementAlias).Z_PK IS NULL OR \(step.alias).Z_PK IS NOT NULL)") }
                order += step.order
                elementAlias = step.alias
                elementEntity = next
            case .toOne(let toOne, let column, let next)?:
                let keySQL = "\(elementAlias).\(column.quotedDatabaseIdentifier)"
                if isLast {
                    element = ValueSQL(
                        sql: "\(PredicateFunctions.object)(\(zent(of: toOne, elementAlias)), \(keySQL))",
                        reached: .objects)
                    break
                }
                guard let table = layout[next].table else { return nil }
                elementAlias = joinToOne(toOne.name, keySQL: keySQL, table: table, from: elementAlias, in: scope)
                elementEntity = next
                mayBeNil = true
            }
            index += 1
        }
        let value =
            element
            ?? ValueSQL(
                sql: "\(PredicateFunctions.object)(\(elementAlias).Z_ENT, \(elementAlias).Z_PK)", reached: .objects)
        let rows =
            "SELECT \(value.sql) AS v FROM \(start.from) \(scope.joins.joined(separator: " ")) "
            + "WHERE \(conditions.joined(separator: " AND ")) ORDER BY \(order.joined(separator: ", "))"
        // SQLite keeps a subquery's ORDER BY under an aggregate (it never flattens one into the
        // other), so the elements arrive in the store's order of the relationship.
        return ValueSQL(sql: "(SELECT \(PredicateFunctions.list)(v) FROM (\(rows)))", reached: value.reached)
    }

    /// What `key` names in `entity`, for the evaluator's values; nil for what it reports.
    private enum Step {
        case attribute(AttributeDescription)
        case toMany(RelationshipDescription, EntityID)
        case toOne(StoreLayout.ToOneColumn, column: String, EntityID)
    }

    private func step(_ key: String, of entity: EntityID) -> Step? {
        let description = model[entity]
        if let attribute = description.attribute(named: key) { return .attribute(attribute) }
        guard let relationship = description.relationship(named: key), !relationship.isTransient,
            let destination = model.entityID(named: relationship.destinationEntityName)
        else { return nil }
        if relationship.isToMany { return .toMany(relationship, destination) }
        guard let toOne = layout[entity].toOne.first(where: { $0.name == key }), let column = toOne.column else {
            return nil
        }
        return .toOne(toOne, column: column, destination)
    }

    /// An attribute's value from the rows `alias`, decoded as reading the row decodes it.
    private func attributeValue(
        _ attribute: AttributeDescription, of entity: EntityID, _ alias: String, counting: Bool = false
    ) -> ValueSQL? {
        guard let column = layout[entity].attributes.first(where: { $0.attribute.name == attribute.name })?.column
        else {
            return ValueSQL(
                sql: PredicateFunctions.literal(bytes: PredicateValueCoding.nullBytes),
                reached: .attribute(attribute.type))
        }
        var sql = "\(alias).\(column.quotedDatabaseIdentifier)"
        if attribute.allowsExternalBinaryDataStorage {
            // Externally stored bytes are in files the SQL functions do not read; counting needs
            // only whether there is a value (a reference counts, whether its file exists or not).
            guard counting else { return nil }
            sql = "CASE WHEN \(sql) IS NULL THEN NULL ELSE X'' END"
        }
        // As rows are read: text as a BLOB, so an embedded NUL does not cut it.
        if attribute.type == .string || attribute.type == .uri { sql = "CAST(\(sql) AS BLOB)" }
        return ValueSQL(
            sql: "\(PredicateFunctions.value)(\(attribute.type.coreDataCode), \(sql))",
            reached: .attribute(attribute.type))
    }
}
