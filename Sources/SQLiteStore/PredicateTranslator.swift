import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

/// Translates a predicate without variables into one SQL query over Core Data's tables, or
/// declines (nil) when SQL could not give exactly the objects ``PredicateEvaluator`` gives.
///
/// Every condition it writes is 0 or 1, never NULL: a comparison with a column that may be NULL
/// says what the evaluator says for nil (`nil != 5` is true, `nil < 5` false), so `NOT` and `OR`
/// keep their two-valued meaning. Values are compared as the evaluator compares them:
/// - integers with integers exactly, with doubles as doubles (`CAST(column AS REAL)`); doubles,
///   floats and dates as REAL, integers bound as doubles; decimals (stored as REAL) only with
///   integers up to 2^53, which compare exactly both ways (a decimal with a double goes through a
///   conversion SQL cannot reproduce, so it is left to memory);
/// - a string constant compared with a number is read as a number at translation time;
/// - strings byte-wise as BLOBs (UTF-8 byte order is Unicode scalar order; embedded NULs count);
///   `[c]`/`[d]`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`, `MATCHES` and `IN` with a string
///   call `storefs_compare_strings`, which runs the evaluator's own string comparison;
/// - objects by key and Z_ENT; to-one key paths `LEFT JOIN` the destination's table;
/// - to-many key paths become `EXISTS` / `NOT EXISTS` subqueries over the foreign key or join
///   table (several to-many steps join in one subquery, keeping duplicates as the evaluator's
///   flattening does), `@count` a `COUNT(*)` subquery, `@sum` of integers `SUM`, `@min`/`@max`
///   `MIN`/`MAX`.
///
/// Declined: key path against key path, `@avg`, `@sum` of non-integers, decimals against
/// doubles, strings against numbers, UUID and binary comparisons other than `==`/`!=` with
/// their literal forms, to-many steps after a to-one step, list equality, invalid regular
/// expressions, and keys the declared entity lacks (the evaluator reports those).
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

    /// The name of the SQL function that compares strings as the evaluator does.
    static let compareStringsFunctionName = "storefs_compare_strings"

    let model: ManagedObjectModel
    let layout: StoreLayout
    private(set) var arguments: [String: DatabaseValue] = [:]
    private var aliasCount = 0

    init(model: ManagedObjectModel, layout: StoreLayout) {
        self.model = model
        self.layout = layout
    }

    /// The query for the objects of `entities` (rows of `table`) that match `predicate`, by key;
    /// nil when the predicate cannot be translated exactly.
    func query(_ predicate: ObjectGraph.Predicate, entity: EntityID, table: String, zents: [Int64]) -> String? {
        let scope = Scope(alias: "t0", entity: entity)
        guard let condition = condition(predicate, scope) else { return nil }
        let entities = zents.map(String.init).joined(separator: ",")
        return "SELECT t0.Z_PK, t0.Z_ENT FROM \(table.quotedDatabaseIdentifier) t0 \(scope.joins.joined(separator: " ")) "
            + "WHERE t0.Z_ENT IN (\(entities)) AND \(condition) ORDER BY t0.Z_PK"
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
            return comparison(lhs, op, rhs, options, modifier, scope)
        }
    }

    private func compound(_ operands: [ObjectGraph.Predicate], _ word: String, empty: String, _ scope: Scope) -> String? {
        guard !operands.isEmpty else { return empty }
        var parts: [String] = []
        for operand in operands {
            guard let part = condition(operand, scope) else { return nil }
            parts.append(part)
        }
        return "(" + parts.joined(separator: " \(word) ") + ")"
    }

    private func comparison(
        _ lhs: ObjectGraph.Expression, _ op: ComparisonOperator, _ rhs: ObjectGraph.Expression, _ options: ComparisonOptions,
        _ modifier: ComparisonModifier, _ scope: Scope
    ) -> String? {
        if case .keyPath(let path) = lhs, let right = constant(rhs) {
            guard let operand = resolve(path[...], in: scope, from: scope.alias, entity: scope.entity, allowToMany: true)
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
                    // A collection CONTAINS a value: membership.
                    return equal(elements.element, right, options).map { "EXISTS (\(elements.subquery(where: $0)))" }
                }
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
            // non-string value (a string key path would be a substring test: left to memory).
            guard let operand = resolve(path[...], in: scope, from: scope.alias, entity: scope.entity, allowToMany: true)
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
            let key = path[index]
            let isLast = index == path.endIndex - 1
            let description = model[entity]
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
                // Through a nil to-one the evaluator sees nil, not an empty collection.
                guard allowToMany, !throughToOne else { return nil }
                return collection(key, of: entity, from: alias, destination: destination, rest: path[(index + 1)...])
            }
            guard let toOne = layout[entity].toOne.first(where: { $0.name == key }), let column = toOne.column else {
                return nil
            }
            let keySQL = "\(alias).\(column.quotedDatabaseIdentifier)"
            if isLast {
                return .scalar(.object(key: keySQL, zent: zent(of: toOne, alias)))
            }
            guard let table = layout[destination].table else { return nil }
            let joinKey = "\(alias).\(key)"
            if let existing = scope.joined[joinKey] {
                alias = existing
            } else {
                let next = newAlias()
                scope.joins.append("LEFT JOIN \(table.quotedDatabaseIdentifier) \(next) ON \(next).Z_PK = \(keySQL)")
                scope.joined[joinKey] = next
                alias = next
            }
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

    /// The tables that join to-many `name` of the rows `alias`: the table holding the link, the
    /// join to the destination rows (for a join table), the link to `alias`, and the destination
    /// rows' alias.
    private func toManyTables(_ name: String, of entity: EntityID, from alias: String)
        -> (table: String, destinationJoin: String, link: String, alias: String)?
    {
        guard let mapping = layout[entity].toMany[name] else { return nil }
        switch mapping {
        case .foreignKey(let table, let column, _, _):
            let a = newAlias()
            let link = "\(a).\(column.quotedDatabaseIdentifier) = \(alias).Z_PK"
            return ("\(table.quotedDatabaseIdentifier) \(a)", "", link, a)
        case .joinTable(let table, let sourceColumn, let destinationColumn, _, let destinationTable, _):
            let j = newAlias()
            let a = newAlias()
            return (
                "\(table.quotedDatabaseIdentifier) \(j)",
                "JOIN \(destinationTable.quotedDatabaseIdentifier) \(a) "
                    + "ON \(a).Z_PK = \(j).\(destinationColumn.quotedDatabaseIdentifier)",
                "\(j).\(sourceColumn.quotedDatabaseIdentifier) = \(alias).Z_PK", a
            )
        case .missing:
            return nil
        }
    }

    private func collection(
        _ name: String, of entity: EntityID, from alias: String, destination: EntityID, rest: ArraySlice<String>
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
            scope.joins.append("JOIN \(step.table) ON \(step.link) \(step.destinationJoin)")
            elementAlias = step.alias
            elementEntity = next
            rest = rest.dropFirst()
        }
        func make(_ element: Scalar) -> Collection {
            Collection(scope: scope, from: "\(start.table) \(start.destinationJoin)", link: start.link, element: element)
        }
        if let key = rest.first, key.hasPrefix("@") {
            let rows = make(.object(key: "\(elementAlias).Z_PK", zent: "\(elementAlias).Z_ENT"))
            let body = "FROM \(rows.from) \(scope.joins.joined(separator: " ")) WHERE \(rows.link)"
            switch key.lowercased() {
            case "@count" where rest.count == 1:
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
                    // addition, decimal sums on decimal arithmetic.
                    guard [.integer16, .integer32, .integer64, .boolean].contains(type) else { return nil }
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

    // MARK: - Comparing

    private enum Kind {
        case integer, decimal, double, string, uuid, data
    }

    private func kind(of type: AttributeType) -> Kind? {
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

    private func bind(_ value: DatabaseValue) -> String {
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
                var parts: [String] = []
                for item in items {
                    guard let part = equal(value, item, options) else { return nil }
                    parts.append(part)
                }
                return "(" + parts.joined(separator: " OR ") + ")"
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

    private func equal(_ value: Scalar, _ right: Constant, _ options: ComparisonOptions) -> String? {
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
            guard op == .equal, case .string(let text) = right, let uuid = UUID(uuidString: text) else { return "0" }
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
}
