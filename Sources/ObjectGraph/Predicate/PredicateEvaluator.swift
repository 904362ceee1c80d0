import Foundation

/// Evaluates a ``Predicate`` against the objects of an ``ObjectContext``, with the semantics of
/// `NSPredicate` evaluated by Core Data.
///
/// Values compare as Core Data compares them:
/// - integers, decimals, doubles, floats and booleans (1/0, so `YES` equals `1`) compare as numbers:
///   exactly when both sides are integers or decimals, as doubles when either side is a double or
///   a float (as `NSNumber` does, so a Float `4.1` is not the double `4.1`);
/// - dates compare with dates, and with numbers as seconds since 2001-01-01;
/// - strings compare lexically (by Unicode scalar order), `[c]`/`[d]` folding both sides first;
/// - a string compared with a number or a date is read as a number (`"100000"` → 100000), as
///   SQLite's column affinity does when Core Data binds a string such as a fetched property's
///   `userInfo` value against a numeric column; a string that is not a number compares with
///   nothing (every comparison false, `!=` true);
/// - objects compare by ``ObjectID``; `nil == nil` is true, and `nil` is neither less nor greater
///   than anything; a key path through a nil to-one is nil;
/// - a to-many key path gives the collection of the destinations' values (flattened across
///   several to-many steps); compared without `ANY`/`ALL`/`NONE` it is compared as by `ANY`, as
///   Core Data's SQL store reads it, except that `CONTAINS` tests membership;
/// - `@count` counts a collection; `@sum`, `@avg`, `@min`, `@max` aggregate the values of the key
///   path after them (`employees.@avg.salary`); `@avg`, `@min` and `@max` of nothing are nil;
/// - `CONTAINS`, `BEGINSWITH` and `ENDSWITH` with an empty string are false, as with `NSString`.
///
/// Variables: `$FETCH_SOURCE` is `source`; `$FETCHED_PROPERTY.userInfo.key` is the string
/// `fetchedProperty.userInfo[key]` (nil when missing); other `$NAME`s come from `variables`.
///
/// Threading: a value holding a thread-safe context; use from any plain thread.
public struct PredicateEvaluator: Sendable {
    public let context: ObjectContext
    /// The object `$FETCH_SOURCE` names.
    public var source: ObjectID?
    /// The fetched property `$FETCHED_PROPERTY` names.
    public var fetchedProperty: FetchedPropertyDescription?
    /// Values of other `$NAME` variables (a fetch request template's substitution variables).
    public var variables: [String: AttributeValue]

    public init(
        context: ObjectContext, source: ObjectID? = nil, fetchedProperty: FetchedPropertyDescription? = nil,
        variables: [String: AttributeValue] = [:]
    ) {
        self.context = context
        self.source = source
        self.fetchedProperty = fetchedProperty
        self.variables = variables
    }

    /// Whether `object` matches `predicate`.
    ///
    /// - Throws: ``ObjectGraphError/Code/notFound`` for a key the object's entity does not have or a
    ///   variable without a value (naming them); ``ObjectGraphError/Code/unsupported`` for a key
    ///   path applied to a value that is not an object, or a fetched property in a key path; store
    ///   errors from reading the objects.
    public func evaluate(_ predicate: Predicate, on object: ObjectID) throws(ObjectGraphError) -> Bool {
        switch predicate {
        case .constant(let value):
            return value
        case .and(let operands):
            for operand in operands where !(try evaluate(operand, on: object)) { return false }
            return true
        case .or(let operands):
            for operand in operands where try evaluate(operand, on: object) { return true }
            return false
        case .not(let operand):
            return !(try evaluate(operand, on: object))
        case .comparison(let lhs, let op, let rhs, let options, let modifier):
            let left = try value(of: lhs, on: object)
            let right = try value(of: rhs, on: object)
            return try Self.compare(left, op, right, options, modifier)
        }
    }

    /// The objects of `entity` (and its subentities) that match `predicate`, by key.
    ///
    /// Rows are read in batches of the coordinator's ``EngineConfiguration/batchSize``, together
    /// with the to-many relationships the predicate's key paths start with, so a filter over many
    /// objects costs a few store requests per batch rather than several per object.
    public func objects(of entity: EntityID, matching predicate: Predicate, includingSubentities: Bool = true)
        throws(ObjectGraphError) -> [ObjectID]
    {
        let budget = QueryBudget.current
        let ids = try context.objectIDs(of: entity, includingSubentities: includingSubentities)
        try budget?.hold(ids.count * MemoryLayout<ObjectID>.stride)
        let batchSize = max(1, context.coordinator.configuration.batchSize)
        let leadingKeys = Set(predicate.leadingKeys)
        let prepared = PreparedPredicate(predicate)
        var matched: [ObjectID] = []
        var start = 0
        while start < ids.count {
            try budget?.check()
            let batch = Array(ids[start..<min(start + batchSize, ids.count)])
            try context.prefetch(batch)
            for (entityID, members) in Dictionary(grouping: batch, by: \.entity) {
                let description = context.model[entityID]
                for key in leadingKeys {
                    if let relationship = description.relationship(named: key), relationship.isToMany {
                        try context.prefetch(key, for: members)
                    }
                }
            }
            for id in batch {
                try budget?.visit()
                // Listed a moment ago and deleted since (a change through the mount committed
                // meanwhile): it matches nothing now.
                guard try context.snapshot(of: id) != nil else { continue }
                if try evaluate(prepared, on: id) { matched.append(id) }
            }
            start += batchSize
        }
        return matched
    }

    // MARK: - Values

    /// A value met while evaluating: an attribute value, an object, or a collection of values.
    ///
    /// Public so that a store evaluating predicates itself (SQLite's SQL functions) compares with
    /// exactly the evaluator's rules: see ``compare(_:_:_:_:_:)`` and ``aggregate(_:of:)``.
    public enum Value: Sendable {
        case null
        case string(String)
        case integer(Int64)
        case decimal(Decimal)
        case double(Double)
        case boolean(Bool)
        /// Seconds since 2001-01-01.
        case date(Double)
        case data(Data)
        case uuid(UUID)
        case object(ObjectID)
        case list([Value])

        public init(_ value: AttributeValue?) {
            switch value {
            case nil: self = .null
            case .integer(let v): self = .integer(v)
            case .decimal(let v): self = .decimal(v)
            case .double(let v): self = .double(v)
            case .float(let v): self = .double(Double(v))
            case .string(let v): self = .string(v)
            case .boolean(let v): self = .boolean(v)
            case .date(let v): self = .date(v.timeIntervalSinceReferenceDate)
            case .data(let v): self = .data(v)
            case .uuid(let v): self = .uuid(v)
            }
        }

        public init(_ literal: Expression.Literal) {
            switch literal {
            case .string(let v): self = .string(v)
            case .integer(let v): self = .integer(v)
            case .double(let v): self = .double(v)
            case .boolean(let v): self = .boolean(v)
            case .date(let v): self = .date(v)
            case .null: self = .null
            case .object(let id): self = .object(id)
            }
        }

        var typeName: String {
            switch self {
            case .null: "nil"
            case .string: "string"
            case .integer, .decimal, .double: "number"
            case .boolean: "boolean"
            case .date: "date"
            case .data: "binary data"
            case .uuid: "UUID"
            case .object: "object"
            case .list: "collection"
            }
        }

        /// The elements `ANY`/`ALL`/`NONE` and the collection operators range over: a
        /// collection's, none for nil, else itself.
        public var elements: [Value] {
            switch self {
            case .list(let items): items
            case .null: []
            default: [self]
            }
        }
    }

    func value(of expression: Expression, on object: ObjectID) throws(ObjectGraphError) -> Value {
        switch expression {
        case .constant(let literal):
            return Value(literal)
        case .aggregate(let items):
            var values: [Value] = []
            for item in items { values.append(try value(of: item, on: object)) }
            return .list(values)
        case .keyPath(let path):
            let components = path.first == "SELF" ? Array(path.dropFirst()) : path
            return try resolve(components[...], from: .object(object), path: path)
        case .variable(let name, let path):
            return try variable(name, path)
        }
    }

    private func variable(_ name: String, _ path: [String]) throws(ObjectGraphError) -> Value {
        let written = "$" + ([name] + path).joined(separator: ".")
        switch name {
        case "FETCH_SOURCE":
            guard let source else {
                throw ObjectGraphError(
                    .notFound, "\(written) has no value: the predicate is evaluated without a source object")
            }
            return try resolve(path[...], from: .object(source), path: [written])
        case "FETCHED_PROPERTY":
            guard let fetchedProperty else {
                throw ObjectGraphError(
                    .notFound, "\(written) has no value: the predicate is evaluated outside a fetched property")
            }
            switch path.count {
            case 1 where path[0] == "name":
                return .string(fetchedProperty.name)
            case 2 where path[0] == "userInfo":
                return fetchedProperty.userInfo[path[1]].map(Value.string) ?? .null
            default:
                throw ObjectGraphError(
                    .unsupported,
                    "\(written): only $FETCHED_PROPERTY.userInfo.<key> and $FETCHED_PROPERTY.name are supported")
            }
        default:
            guard let bound = variables[name] else {
                throw ObjectGraphError(.notFound, "variable $\(name) in \(written) has no value")
            }
            guard path.isEmpty else {
                throw ObjectGraphError(.unsupported, "\(written): a key path after a value variable is not supported")
            }
            return Value(bound)
        }
    }

    /// Follows `components` from `start`, through objects and collections.
    private func resolve(_ components: ArraySlice<String>, from start: Value, path: [String]) throws(ObjectGraphError)
        -> Value
    {
        var current = start
        var index = components.startIndex
        while index < components.endIndex {
            let key = components[index]
            if key.hasPrefix("@") {
                let rest = components[(index + 1)...]
                switch key.lowercased() {
                case "@count":
                    current = .integer(Int64(current.elements.count))
                case "@sum", "@avg", "@min", "@max":
                    var values: [Value] = []
                    for element in current.elements {
                        values += try resolve(rest, from: element, path: path).elements
                    }
                    let present = values.filter { if case .null = $0 { false } else { true } }
                    return try Self.aggregate(key.lowercased(), present, path)
                default:
                    throw ObjectGraphError(
                        .unsupported,
                        "key path \(path.joined(separator: ".")): \(key) is not supported "
                            + "(use @count, @sum, @avg, @min or @max)")
                }
            } else {
                if let (element, next) = compositeElement(of: current, components, at: index) {
                    current = try step(current, element, path)
                    index = next
                    continue
                }
                current = try step(current, key, path)
            }
            index += 1
        }
        return current
    }

    /// A composite's element the components spell from `index` (`author.person`), for the
    /// objects `value` holds.
    private func compositeElement(of value: Value, _ components: ArraySlice<String>, at index: Int)
        -> (key: String, next: Int)?
    {
        let entity: EntityID
        switch value {
        case .object(let id): entity = id.entity
        case .list(let items):
            guard case .object(let id)? = items.first else { return nil }
            entity = id.entity
        default: return nil
        }
        return context.model[entity].compositeElement(in: components, at: index)
    }

    private func step(_ value: Value, _ key: String, _ path: [String]) throws(ObjectGraphError) -> Value {
        switch value {
        case .null:
            return .null
        case .object(let id):
            return try property(key, of: id, path)
        case .list(let items):
            // Flattening multiplies: each step over a to-many relationship gathers its elements'
            // destinations, so the budget counts every value gathered (QueryLimits says why).
            let budget = QueryBudget.current
            var result: [Value] = []
            for item in items {
                let next = try step(item, key, path)
                if case .list(let inner) = next {
                    try budget?.visit(inner.count)
                    try budget?.hold(inner.count * MemoryLayout<Value>.stride)
                    result += inner
                } else {
                    try budget?.visit()
                    result.append(next)
                }
            }
            return .list(result)
        default:
            throw ObjectGraphError(
                .unsupported, "key path \(path.joined(separator: ".")): a \(value.typeName) value has no key \(key)")
        }
    }

    private func property(_ key: String, of id: ObjectID, _ path: [String]) throws(ObjectGraphError) -> Value {
        let entity = context.model[id.entity]
        if entity.attribute(named: key) != nil || entity.relationship(named: key) != nil {
            do {
                return try storedProperty(key, of: id, entity)
            } catch  where error.code == .notFound {
                // Reached a moment ago and deleted since by a change that committed meanwhile:
                // a key path through it is nil, as through a nil to-one.
                if try context.snapshot(of: id) == nil { return .null }
                throw error
            }
        }
        if entity.fetchedProperty(named: key) != nil {
            throw ObjectGraphError(
                .unsupported,
                "key path \(path.joined(separator: ".")): fetched property \(entity.name).\(key) "
                    + "cannot be used inside a predicate")
        }
        throw ObjectGraphError(
            .notFound,
            "key path \(path.joined(separator: ".")): entity \(entity.name) has no attribute or "
                + "relationship named \(key)")
    }

    private func storedProperty(_ key: String, of id: ObjectID, _ entity: EntityDescription) throws(ObjectGraphError)
        -> Value
    {
        if entity.attribute(named: key) != nil {
            return Value(try context.value(of: key, for: id))
        }
        guard let relationship = entity.relationship(named: key), relationship.isToMany else {
            return try context.destination(of: key, for: id).map(Value.object) ?? .null
        }
        let destinations = try context.destinations(of: key, for: id)
        try QueryBudget.current?.visit(destinations.count)
        return .list(destinations.map(Value.object))
    }

    /// `@sum`, `@avg`, `@min` or `@max` (`op`, lower-cased) of non-nil `values`, in their order.
    ///
    /// - Throws: ``ObjectGraphError/Code/unsupported`` for values the aggregate cannot take (a sum
    ///   of strings, the maximum of UUIDs).
    public static func aggregate(_ op: String, of values: [Value]) throws(ObjectGraphError) -> Value {
        let present = values.filter { if case .null = $0 { false } else { true } }
        return try aggregate(op.lowercased(), present, [op])
    }

    private static func aggregate(_ op: String, _ values: [Value], _ path: [String]) throws(ObjectGraphError) -> Value {
        switch op {
        case "@min", "@max":
            var best: Value?
            for value in values {
                guard let current = best else { best = value; continue }
                guard let order = Self.order(value, current, []) else {
                    throw ObjectGraphError(
                        .unsupported, "key path \(path.joined(separator: ".")): \(op) of values that do not compare")
                }
                if (op == "@min" && order == .orderedAscending) || (op == "@max" && order == .orderedDescending) {
                    best = value
                }
            }
            return best ?? .null
        default:
            var numbers: [Number] = []
            for value in values {
                guard let number = Number(value) else {
                    throw ObjectGraphError(
                        .unsupported, "key path \(path.joined(separator: ".")): \(op) of a \(value.typeName) value")
                }
                numbers.append(number)
            }
            if op == "@avg" && numbers.isEmpty { return .null }
            let sum = numbers.reduce(Number.integer(0), Number.adding)
            guard op == "@avg" else { return sum.value }
            switch sum {
            case .double(let d): return .double(d / Double(numbers.count))
            default: return .decimal(sum.decimal / Decimal(numbers.count))
            }
        }
    }
}

// MARK: - Comparing

extension PredicateEvaluator {
    /// A number in the widest exact form it has.
    enum Number {
        case integer(Int64)
        case decimal(Decimal)
        case double(Double)

        init?(_ value: Value) {
            switch value {
            case .integer(let v): self = .integer(v)
            case .decimal(let v): self = .decimal(v)
            case .double(let v): self = .double(v)
            case .boolean(let v): self = .integer(v ? 1 : 0)
            default: return nil
            }
        }

        /// A string read as a number: an integer, else a double; nil when it is not one.
        init?(parsing text: String) {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if let i = Int64(trimmed) {
                self = .integer(i)
            } else if let d = Double(trimmed), d.isFinite {
                self = .double(d)
            } else {
                return nil
            }
        }

        var decimal: Decimal {
            switch self {
            case .integer(let i): Decimal(i)
            case .decimal(let d): d
            case .double(let d): Decimal(d)
            }
        }

        var double: Double {
            switch self {
            case .integer(let i): Double(i)
            case .decimal(let d): NSDecimalNumber(decimal: d).doubleValue
            case .double(let d): d
            }
        }

        var value: Value {
            switch self {
            case .integer(let i): .integer(i)
            case .decimal(let d): .decimal(d)
            case .double(let d): .double(d)
            }
        }

        static func adding(_ a: Number, _ b: Number) -> Number {
            switch (a, b) {
            case (.integer(let x), .integer(let y)):
                let (sum, overflow) = x.addingReportingOverflow(y)
                return overflow ? .decimal(Decimal(x) + Decimal(y)) : .integer(sum)
            case (.double, _), (_, .double): return .double(a.double + b.double)
            default: return .decimal(a.decimal + b.decimal)
            }
        }

        static func compare(_ a: Number, _ b: Number) -> ComparisonResult? {
            switch (a, b) {
            case (.integer(let x), .integer(let y)):
                return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
            case (.double, _), (_, .double):
                let x = a.double
                let y = b.double
                if x.isNaN || y.isNaN { return nil }
                return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
            default:
                let x = a.decimal
                let y = b.decimal
                if x.isNaN || y.isNaN { return nil }
                return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
            }
        }
    }

    static func fold(_ text: String, _ options: ComparisonOptions) -> String {
        var folding: String.CompareOptions = []
        if options.contains(.caseInsensitive) { folding.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { folding.insert(.diacriticInsensitive) }
        return folding.isEmpty ? text : text.folding(options: folding, locale: nil)
    }

    /// The order of two values, or nil when they do not compare (different kinds, nil, objects).
    static func order(_ a: Value, _ b: Value, _ options: ComparisonOptions) -> ComparisonResult? {
        switch (a, b) {
        case (.string(let x), .string(let y)):
            let fx = fold(x, options)
            let fy = fold(y, options)
            return fx.unicodeScalars.lexicographicallyPrecedes(fy.unicodeScalars)
                ? .orderedAscending
                : fx.unicodeScalars.elementsEqual(fy.unicodeScalars) ? .orderedSame : .orderedDescending
        case (.date(let x), .date(let y)):
            return Number.compare(.double(x), .double(y))
        case (.date(let x), _):
            guard let y = number(b) else { return nil }
            return Number.compare(.double(x), y)
        case (_, .date(let y)):
            guard let x = number(a) else { return nil }
            return Number.compare(x, .double(y))
        default:
            guard let x = number(a), let y = number(b) else { return nil }
            // Two strings compared above; here at most one side is a string, read as a number.
            return Number.compare(x, y)
        }
    }

    /// A value as a number: numbers and booleans as they are, strings when they read as one.
    private static func number(_ value: Value) -> Number? {
        if case .string(let s) = value { return Number(parsing: s) }
        return Number(value)
    }

    static func equal(_ a: Value, _ b: Value, _ options: ComparisonOptions) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case (.object(let x), .object(let y)): return x == y
        case (.object, _), (_, .object): return false
        case (.data(let x), .data(let y)): return x == y
        case (.uuid(let x), .uuid(let y)): return x == y
        case (.uuid(let x), .string(let y)), (.string(let y), .uuid(let x)): return UUID(uuidString: y) == x
        case (.list(let x), .list(let y)):
            return x.count == y.count
                && x.allSatisfy { item in y.contains { equal(item, $0, options) } }
                && y.allSatisfy { item in x.contains { equal(item, $0, options) } }
        default: return order(a, b, options) == .orderedSame
        }
    }

    /// Whether `left op[options] right` holds with `modifier` in front, as a comparison predicate
    /// whose sides evaluated to these values decides.
    ///
    /// - Throws: ``ObjectGraphError/Code/validation`` for `BETWEEN` without two bounds,
    ///   ``ObjectGraphError/Code/invalidModel`` for a `MATCHES` pattern that is not a regular
    ///   expression.
    public static func compare(
        _ left: Value, _ op: ComparisonOperator, _ right: Value, _ options: ComparisonOptions,
        _ modifier: ComparisonModifier
    ) throws(ObjectGraphError) -> Bool {
        switch modifier {
        case .direct:
            if case .list(let items) = left, op != .contains {
                if case .list = right, op == .equal || op == .notEqual {
                    return try compare(left, op, right, options)
                }
                for item in items where try compare(item, op, right, options) { return true }
                return false
            }
            return try compare(left, op, right, options)
        case .any:
            for item in left.elements where try compare(item, op, right, options) { return true }
            return false
        case .all:
            for item in left.elements where !(try compare(item, op, right, options)) { return false }
            return true
        case .none:
            for item in left.elements where try compare(item, op, right, options) { return false }
            return true
        }
    }

    private static func compare(_ left: Value, _ op: ComparisonOperator, _ right: Value, _ options: ComparisonOptions)
        throws(ObjectGraphError) -> Bool
    {
        switch op {
        case .equal: return Self.equal(left, right, options)
        case .notEqual: return !Self.equal(left, right, options)
        case .less: return Self.order(left, right, options) == .orderedAscending
        case .lessOrEqual: return [.orderedAscending, .orderedSame].contains(Self.order(left, right, options))
        case .greater: return Self.order(left, right, options) == .orderedDescending
        case .greaterOrEqual: return [.orderedDescending, .orderedSame].contains(Self.order(left, right, options))
        case .in:
            switch right {
            case .list(let items): return items.contains { Self.equal(left, $0, options) }
            case .string(let haystack):
                guard case .string(let needle) = left, !needle.isEmpty else { return false }
                return Self.fold(haystack, options).contains(Self.fold(needle, options))
            case .null: return false
            default: return Self.equal(left, right, options)
            }
        case .between:
            let bounds = right.elements
            guard bounds.count == 2 else {
                throw ObjectGraphError(
                    .validation, "BETWEEN needs two values {low, high}; it was given \(bounds.count)")
            }
            return [.orderedDescending, .orderedSame].contains(Self.order(left, bounds[0], options))
                && [.orderedAscending, .orderedSame].contains(Self.order(left, bounds[1], options))
        case .contains:
            if case .list(let items) = left { return items.contains { Self.equal($0, right, options) } }
            guard case .string(let text) = left, case .string(let part) = right, !part.isEmpty else { return false }
            return Self.fold(text, options).contains(Self.fold(part, options))
        case .beginsWith, .endsWith:
            guard case .string(let text) = left, case .string(let part) = right, !part.isEmpty else { return false }
            let t = Self.fold(text, options)
            let p = Self.fold(part, options)
            return op == .beginsWith ? t.hasPrefix(p) : t.hasSuffix(p)
        case .like:
            guard case .string(let text) = left, case .string(let pattern) = right else { return false }
            return Self.like(Array(Self.fold(text, options)), Array(Self.fold(pattern, options)))
        case .matches:
            guard case .string(let text) = left, case .string(let pattern) = right else { return false }
            return try Self.matches(text, pattern, options)
        }
    }

    /// `LIKE`: `*` is any run of characters, `?` one character, `\` makes the next one literal;
    /// the whole text must match.
    static func like(_ text: [Character], _ pattern: [Character]) -> Bool {
        var t = 0
        var p = 0
        var starP = -1
        var starT = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "*" {
                starP = p
                starT = t
                p += 1
            } else if p < pattern.count, pattern[p] == "?" {
                t += 1
                p += 1
            } else if p < pattern.count, pattern[p] == "\\", p + 1 < pattern.count, pattern[p + 1] == text[t] {
                t += 1
                p += 2
            } else if p < pattern.count, pattern[p] != "\\", pattern[p] == text[t] {
                t += 1
                p += 1
            } else if starP >= 0 {
                p = starP + 1
                starT += 1
                t = starT
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// `MATCHES`: an ICU regular expression over the whole string.
    static func matches(_ text: String, _ pattern: String, _ options: ComparisonOptions) throws(ObjectGraphError)
        -> Bool
    {
        let regex: NSRegularExpression
        do {
            regex = try NSRegularExpression(
                pattern: "\\A(?:" + pattern + ")\\z",
                options: options.contains(.caseInsensitive) ? [.caseInsensitive] : [])
        } catch {
            throw ObjectGraphError(.invalidModel, "MATCHES \"\(pattern)\" is not a valid regular expression: \(error)")
        }
        let subject = options.contains(.diacriticInsensitive) ? fold(text, [.diacriticInsensitive]) : text
        let range = NSRange(subject.startIndex..<subject.endIndex, in: subject)
        return regex.firstMatch(in: subject, options: [], range: range) != nil
    }
}

extension Predicate {
    /// The first key of every key path from the evaluated object (for prefetching).
    var leadingKeys: [String] {
        switch self {
        case .constant: []
        case .and(let list), .or(let list): list.flatMap(\.leadingKeys)
        case .not(let operand): operand.leadingKeys
        case .comparison(let lhs, _, let rhs, _, _): lhs.leadingKeys + rhs.leadingKeys
        }
    }
}

extension Expression {
    var leadingKeys: [String] {
        switch self {
        case .keyPath(let path):
            (path.first == "SELF" ? path.dropFirst().first : path.first).map { [$0] } ?? []
        case .aggregate(let items): items.flatMap(\.leadingKeys)
        case .constant, .variable: []
        }
    }
}
