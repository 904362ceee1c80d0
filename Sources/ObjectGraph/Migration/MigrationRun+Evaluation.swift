import Foundation

/// Evaluating value expressions: what `$source`, key paths, constants, `FUNCTION(...)` and the
/// built-in functions give for one object being migrated.
///
/// What runs: key paths from `$source` through attributes, to-ones and to-manys (and `@count`);
/// constants; the string, number, date, UUID and data methods of ``stringSelectors`` and the
/// others below; NSExpression's `uppercase:`, `lowercase:`, `add:to:`, `from:subtract:`,
/// `multiply:by:`, `divide:by:`, `modulus:by:`, `abs:`, `now` and `castObject:toType:` (to
/// NSString, NSNumber, NSDate); `$manager`'s `destinationInstancesForEntityMappingNamed:sourceInstances:`
/// and `$entityPolicy`'s `destinationInstancesForSourceRelationshipNamed:sourceInstances:`.
/// Anything else is refused with a message naming it, the mapping and the object.
extension MigrationRun {
    struct EvaluationContext {
        var source: ObjectID
        var destination: Int?
        var mapping: EntityMapping
        var property: String
        var relationship: RelationshipDescription? = nil
    }

    /// What an expression gives.
    enum Value {
        case null
        case scalar(AttributeValue)
        /// Objects of the old store.
        case sources([ObjectID])
        /// New objects (indices of ``MigrationRun/objects``).
        case destinations([Int])
        case manager
        case entityPolicy
        case list([Value])

        var summary: String {
            switch self {
            case .null: "nil"
            case .scalar(let value): "the value \(AttributeConversion.describe(value))"
            case .sources(let ids): "\(ids.count) object(s) of the old store"
            case .destinations(let list): "\(list.count) new object(s)"
            case .manager: "the migration manager"
            case .entityPolicy: "the entity migration policy"
            case .list(let items): "a collection of \(items.count)"
            }
        }
    }

    func failure(_ context: EvaluationContext, _ message: String) -> ObjectGraphError {
        let object = "\(sourceModel[context.source.entity].name) \(context.source.key)"
        return ObjectGraphError(
            .unsupported,
            "mapping model \(mapping.source): \(context.mapping.name).\(context.property) for \(object): \(message)",
            objects: [context.source])
    }

    func evaluate(_ expression: MappingExpression, _ context: EvaluationContext, depth: Int) throws(ObjectGraphError)
        -> Value
    {
        guard depth <= MappingExpression.maximumNesting else { throw failure(context, "the expression nests too deep") }
        switch expression {
        case .constant(let literal):
            switch literal {
            case .string(let s): return .scalar(.string(s))
            case .integer(let i): return .scalar(.integer(i))
            case .double(let d): return .scalar(.double(d))
            case .boolean(let b): return .scalar(.boolean(b))
            case .date(let t): return .scalar(.date(Date(timeIntervalSinceReferenceDate: t)))
            case .null: return .null
            case .object: throw failure(context, "an object constant cannot be migrated")
            }
        case .variable(let name, let path):
            let base: Value
            switch name {
            case "source": base = .sources([context.source])
            case "destination":
                guard let index = context.destination else {
                    throw failure(
                        context,
                        "$destination has no value while attributes are set (Core Data sets it for relationship mappings)"
                    )
                }
                base = .destinations([index])
            case "manager": base = .manager
            case "entityPolicy": base = .entityPolicy
            default:
                throw failure(
                    context,
                    "the variable $\(name) is not one a migration sets ($source, $destination, $manager, $entityPolicy)"
                )
            }
            return try follow(path, from: base, context)
        case .keyPath(let path):
            return try follow(path, from: .sources([context.source]), context)
        case .aggregate(let items):
            var values: [Value] = []
            for item in items { values.append(try evaluate(item, context, depth: depth + 1)) }
            return .list(values)
        case .function(let target, let selector, let arguments):
            let receiver = try evaluate(target, context, depth: depth + 1)
            var values: [Value] = []
            for argument in arguments { values.append(try evaluate(argument, context, depth: depth + 1)) }
            return try call(selector, on: receiver, with: values, context)
        case .builtin(let name, let arguments):
            var values: [Value] = []
            for argument in arguments { values.append(try evaluate(argument, context, depth: depth + 1)) }
            return try builtin(name, values, context)
        }
    }

    // MARK: - Key paths

    private func follow(_ path: [String], from start: Value, _ context: EvaluationContext) throws(ObjectGraphError)
        -> Value
    {
        var value = start
        for (position, key) in path.enumerated() {
            if key == "@count" {
                switch value {
                case .sources(let ids): value = .scalar(.integer(Int64(ids.count)))
                case .destinations(let list): value = .scalar(.integer(Int64(list.count)))
                case .list(let items): value = .scalar(.integer(Int64(items.count)))
                case .null: value = .scalar(.integer(0))
                default: throw failure(context, "@count applies to objects, not to \(value.summary)")
                }
                continue
            }
            if key.hasPrefix("@") {
                throw failure(context, "the collection operator \(key) is not supported (only @count)")
            }
            switch value {
            case .null: return .null
            case .sources(let ids):
                value = try sourceValue(of: key, for: ids, isLast: position == path.count - 1, context)
            case .scalar, .list:
                value = try call(key, on: value, with: [], context)
            case .destinations:
                throw failure(context, "key paths through new objects ($destination.\(key)) are not supported")
            case .manager, .entityPolicy:
                throw failure(context, "the migration manager's property \(key) is not supported")
            }
        }
        return value
    }

    /// `key` of old objects: an attribute's value (of one object), or the objects a relationship
    /// reaches (of all of them, in order, without repeats).
    private func sourceValue(of key: String, for ids: [ObjectID], isLast: Bool, _ context: EvaluationContext)
        throws(ObjectGraphError) -> Value
    {
        guard let first = ids.first else { return .sources([]) }
        let entity = sourceModel[first.entity]
        if let attribute = entity.attribute(named: key) {
            guard ids.count == 1 else {
                throw failure(context, "\(key) is read through a to-many relationship, which gives several values")
            }
            if attribute.isTransient { return .null }
            return snapshots[first]?.attributes[key].map(Value.scalar) ?? .null
        }
        guard let relationship = entity.relationship(named: key) else {
            throw failure(context, "\(entity.name) of the old model has no property \(key)")
        }
        var result: [ObjectID] = []
        var seen: Set<ObjectID> = []
        for id in ids {
            let reached: [ObjectID]
            if relationship.isToMany {
                reached = toMany[id]?[key] ?? []
            } else {
                reached = snapshots[id]?.toOne[key].map { [$0] } ?? []
            }
            for target in reached where seen.insert(target).inserted { result.append(target) }
        }
        if !relationship.isToMany && ids.count == 1 && result.isEmpty && isLast { return .null }
        return .sources(result)
    }

    // MARK: - Methods

    /// The methods storefs runs on values, by the kind of value they apply to.
    static let stringSelectors: Set<String> = [
        "uppercaseString", "lowercaseString", "capitalizedString", "length", "intValue", "integerValue",
        "longLongValue",
        "doubleValue", "floatValue", "boolValue", "description", "stringByAppendingString:", "substringToIndex:",
        "substringFromIndex:", "hasPrefix:", "hasSuffix:", "stringByReplacingOccurrencesOfString:withString:",
        "lastPathComponent", "pathExtension", "stringByDeletingPathExtension", "self"
    ]

    private func call(_ selector: String, on receiver: Value, with arguments: [Value], _ context: EvaluationContext)
        throws(ObjectGraphError) -> Value
    {
        switch receiver {
        case .manager:
            guard selector == "destinationInstancesForEntityMappingNamed:sourceInstances:" else {
                throw failure(context, "the migration manager method \(selector) is not supported")
            }
            guard arguments.count == 2, case .scalar(.string(let name)) = arguments[0] else {
                throw failure(context, "\(selector) takes an entity mapping's name and objects of the old store")
            }
            guard
                let table = associations[name] ?? mapping.entityMapping(named: name).flatMap({ associations[$0.name] })
            else {
                if mapping.entityMapping(named: name) != nil { return .destinations([]) }
                throw failure(
                    context, "\(selector) names the entity mapping \(name), which the mapping model does not have")
            }
            return .destinations(try sources(arguments[1], context).flatMap { table[$0] ?? [] })
        case .entityPolicy:
            guard selector == "destinationInstancesForSourceRelationshipNamed:sourceInstances:" else {
                throw failure(context, "the entity migration policy method \(selector) is not supported")
            }
            guard arguments.count == 2, case .scalar(.string) = arguments[0] else {
                throw failure(context, "\(selector) takes a relationship name and objects of the old store")
            }
            let target = context.relationship.flatMap { destinationModel.entityID(named: $0.destinationEntityName) }
            return .destinations(
                try sources(arguments[1], context).flatMap { id in
                    (madeFrom[id] ?? []).filter { index in
                        target.map { destinationModel.entity(objects[index].entity, isKindOf: $0) } ?? true
                    }
                })
        case .null:
            return .null
        case .scalar(let value):
            return try scalarMethod(selector, on: value, with: arguments, context)
        case .list(let items):
            if selector == "count" { return .scalar(.integer(Int64(items.count))) }
            throw failure(context, "the method \(selector) of a collection is not supported")
        case .sources, .destinations:
            if selector == "count" {
                if case .sources(let ids) = receiver { return .scalar(.integer(Int64(ids.count))) }
                if case .destinations(let list) = receiver { return .scalar(.integer(Int64(list.count))) }
            }
            if selector == "valueForKey:" || selector == "valueForKeyPath:", arguments.count == 1,
                case .scalar(.string(let path)) = arguments[0]
            {
                return try follow(path.split(separator: ".").map(String.init), from: receiver, context)
            }
            throw failure(context, "the method \(selector) of an object is not supported (an app's own code)")
        }
    }

    private func sources(_ value: Value, _ context: EvaluationContext) throws(ObjectGraphError) -> [ObjectID] {
        switch value {
        case .null: return []
        case .sources(let ids): return ids
        default: throw failure(context, "expected objects of the old store, got \(value.summary)")
        }
    }

    /// Every method of a value ``scalarMethod(_:on:with:_:)`` runs, whatever the value's type.
    static let valueMethods: Set<String> = [
        "self", "uppercaseString", "lowercaseString", "capitalizedString", "length", "intValue", "integerValue",
        "longLongValue", "doubleValue", "floatValue", "boolValue", "description", "stringByAppendingString:",
        "substringToIndex:", "substringFromIndex:", "hasPrefix:", "hasSuffix:",
        "stringByReplacingOccurrencesOfString:withString:", "lastPathComponent", "pathExtension",
        "stringByDeletingPathExtension", "stringValue", "timeIntervalSinceReferenceDate", "timeIntervalSince1970",
        "UUIDString"
    ]

    private func scalarMethod(
        _ selector: String, on value: AttributeValue, with arguments: [Value], _ context: EvaluationContext
    )
        throws(ObjectGraphError) -> Value
    {
        func stringArgument(_ index: Int) throws(ObjectGraphError) -> String {
            guard index < arguments.count, case .scalar(.string(let s)) = arguments[index] else {
                throw failure(context, "\(selector) takes a string as argument \(index + 1)")
            }
            return s
        }
        func integerArgument(_ index: Int) throws(ObjectGraphError) -> Int {
            guard index < arguments.count, case .scalar(let v) = arguments[index],
                let i = Self.number(v).flatMap({ Int(exactly: $0) })
            else { throw failure(context, "\(selector) takes an integer as argument \(index + 1)") }
            return i
        }
        // A selector storefs does not run (dealloc, an app's own method) is refused as that, before
        // its arguments are counted: "takes 0 arguments" would suggest it runs with none.
        guard Self.valueMethods.contains(selector) else {
            throw failure(
                context,
                "the method \(selector) is not a supported function: storefs runs no app or runtime code, only the value "
                    + "methods of docs/MIGRATION.md (uppercaseString, length, stringValue, …)")
        }
        let expected = selector.filter { $0 == ":" }.count
        guard arguments.count == expected else {
            throw failure(context, "\(selector) takes \(expected) argument(s), got \(arguments.count)")
        }
        if selector == "self" { return .scalar(value) }
        switch value {
        case .string(let s):
            switch selector {
            case "uppercaseString": return .scalar(.string(s.uppercased()))
            case "lowercaseString": return .scalar(.string(s.lowercased()))
            case "capitalizedString": return .scalar(.string(s.capitalized))
            case "length": return .scalar(.integer(Int64(s.utf16.count)))
            case "intValue": return .scalar(.integer(Self.leadingInteger(s, bits: 32)))
            case "integerValue", "longLongValue": return .scalar(.integer(Self.leadingInteger(s, bits: 64)))
            case "doubleValue": return .scalar(.double(Self.leadingDouble(s)))
            case "floatValue": return .scalar(.float(Float(Self.leadingDouble(s))))
            case "boolValue": return .scalar(.boolean(Self.leadingBool(s)))
            case "description": return .scalar(.string(s))
            case "stringByAppendingString:": return .scalar(.string(s + (try stringArgument(0))))
            case "substringToIndex:", "substringFromIndex:":
                let index = try integerArgument(0)
                let units = Array(s.utf16)
                guard index >= 0, index <= units.count else {
                    throw failure(context, "\(selector) \(index) is outside the string's \(units.count) UTF-16 units")
                }
                let part = selector == "substringToIndex:" ? units[..<index] : units[index...]
                return .scalar(.string(String(decoding: part, as: UTF16.self)))
            case "hasPrefix:": return .scalar(.boolean(s.hasPrefix(try stringArgument(0))))
            case "hasSuffix:": return .scalar(.boolean(s.hasSuffix(try stringArgument(0))))
            case "stringByReplacingOccurrencesOfString:withString:":
                let target = try stringArgument(0)
                guard !target.isEmpty else { return .scalar(.string(s)) }
                return .scalar(.string(s.replacingOccurrences(of: target, with: try stringArgument(1))))
            case "lastPathComponent": return .scalar(.string((s as NSString).lastPathComponent))
            case "pathExtension": return .scalar(.string((s as NSString).pathExtension))
            case "stringByDeletingPathExtension": return .scalar(.string((s as NSString).deletingPathExtension))
            default: break
            }
        case .integer, .double, .float, .decimal, .boolean:
            switch selector {
            case "stringValue", "description": return .scalar(.string(Self.numberText(value)))
            case "intValue":
                guard let d = Self.number(value) else { break }
                return .scalar(.integer(Self.clamp(d, bits: 32)))
            case "integerValue", "longLongValue":
                guard let d = Self.number(value) else { break }
                if case .integer(let i) = value { return .scalar(.integer(i)) }
                return .scalar(.integer(Self.clamp(d, bits: 64)))
            case "doubleValue": return Self.number(value).map { .scalar(.double($0)) } ?? .null
            case "floatValue": return Self.number(value).map { .scalar(.float(Float($0))) } ?? .null
            case "boolValue": return .scalar(.boolean((Self.number(value) ?? 0) != 0))
            default: break
            }
        case .date(let date):
            switch selector {
            case "timeIntervalSinceReferenceDate": return .scalar(.double(date.timeIntervalSinceReferenceDate))
            case "timeIntervalSince1970": return .scalar(.double(date.timeIntervalSince1970))
            case "description": return .scalar(.string(XcodeValueFormat.displayString(for: date)))
            default: break
            }
        case .uuid(let uuid):
            if selector == "UUIDString" || selector == "description" { return .scalar(.string(uuid.uuidString)) }
        case .data(let data):
            if selector == "length" { return .scalar(.integer(Int64(data.count))) }
        }
        throw failure(context, "the method \(selector) of \(Self.kind(of: value)) values is not one storefs runs")
    }

    // MARK: - NSExpression's functions

    private func builtin(_ name: String, _ arguments: [Value], _ context: EvaluationContext) throws(ObjectGraphError)
        -> Value
    {
        func scalar(_ index: Int) -> AttributeValue? {
            if index < arguments.count, case .scalar(let v) = arguments[index] { return v }
            return nil
        }
        func isNull(_ index: Int) -> Bool {
            if index < arguments.count, case .null = arguments[index] { return true }
            return false
        }
        func arithmetic(_ op: (Int64, Int64) -> (Int64, Bool), _ real: (Double, Double) -> Double)
            throws(ObjectGraphError) -> Value
        {
            guard arguments.count == 2 else { throw failure(context, "\(name): takes two numbers") }
            if isNull(0) || isNull(1) { return .null }
            guard let a = scalar(0), let b = scalar(1), let x = Self.number(a), let y = Self.number(b) else {
                throw failure(context, "\(name): takes two numbers")
            }
            if case .integer(let i) = a, case .integer(let j) = b {
                let (result, overflow) = op(i, j)
                if !overflow { return .scalar(.integer(result)) }
            }
            return .scalar(.double(real(x, y)))
        }
        switch name {
        case "uppercase", "lowercase":
            if isNull(0) { return .null }
            guard arguments.count == 1, case .string(let s)? = scalar(0) else {
                throw failure(context, "\(name): takes a string")
            }
            return .scalar(.string(name == "uppercase" ? s.uppercased() : s.lowercased()))
        case "add:to": return try arithmetic({ $0.addingReportingOverflow($1) }, +)
        case "from:subtract": return try arithmetic({ $0.subtractingReportingOverflow($1) }, -)
        case "multiply:by": return try arithmetic({ $0.multipliedReportingOverflow(by: $1) }, *)
        case "divide:by":
            guard arguments.count == 2 else { throw failure(context, "\(name): takes two numbers") }
            if isNull(0) || isNull(1) { return .null }
            guard let x = scalar(0).flatMap(Self.number), let y = scalar(1).flatMap(Self.number) else {
                throw failure(context, "\(name): takes two numbers")
            }
            guard y != 0 else { throw failure(context, "divide:by: divides by zero") }
            return .scalar(.double(x / y))
        case "modulus:by":
            guard arguments.count == 2, case .integer(let a)? = scalar(0), case .integer(let b)? = scalar(1) else {
                if isNull(0) || isNull(1) { return .null }
                throw failure(context, "\(name): takes two integers")
            }
            guard b != 0 else { throw failure(context, "modulus:by: divides by zero") }
            let (result, overflow) = a.remainderReportingOverflow(dividingBy: b)
            guard !overflow else { throw failure(context, "modulus:by: overflows") }
            return .scalar(.integer(result))
        case "abs":
            if isNull(0) { return .null }
            guard arguments.count == 1, let v = scalar(0) else { throw failure(context, "abs: takes a number") }
            if case .integer(let i) = v {
                guard i != .min else { throw failure(context, "abs: of \(i) overflows") }
                return .scalar(.integer(Swift.abs(i)))
            }
            guard let d = Self.number(v) else { throw failure(context, "abs: takes a number") }
            return .scalar(.double(Swift.abs(d)))
        case "now":
            guard arguments.isEmpty else { throw failure(context, "now takes no argument") }
            return .scalar(.date(Date()))
        case "castObject:toType":
            guard arguments.count == 2, case .string(let type)? = scalar(1) else {
                throw failure(context, "CAST takes a value and a class name")
            }
            if isNull(0) { return .null }
            guard let value = scalar(0) else {
                throw failure(context, "CAST of \(arguments[0].summary) is not supported")
            }
            switch (type, value) {
            case ("NSString", .string): return .scalar(value)
            case ("NSString", .integer), ("NSString", .double), ("NSString", .float), ("NSString", .decimal),
                ("NSString", .boolean):
                return .scalar(.string(Self.numberText(value)))
            case ("NSNumber", .string(let s)):
                if let i = Int64(s.trimmingCharacters(in: .whitespaces)) { return .scalar(.integer(i)) }
                if let d = Double(s.trimmingCharacters(in: .whitespaces)), d.isFinite { return .scalar(.double(d)) }
                throw failure(context, "CAST(\"\(s)\", \"NSNumber\"): not a number")
            case ("NSNumber", .integer), ("NSNumber", .double), ("NSNumber", .float), ("NSNumber", .decimal),
                ("NSNumber", .boolean):
                return .scalar(value)
            case ("NSNumber", .date(let d)): return .scalar(.double(d.timeIntervalSinceReferenceDate))
            case ("NSDate", .date): return .scalar(value)
            case ("NSDate", _):
                guard let seconds = Self.number(value), seconds.isFinite else { break }
                return .scalar(.date(Date(timeIntervalSinceReferenceDate: seconds)))
            default: break
            }
            throw failure(context, "CAST of \(Self.kind(of: value)) to \(type) is not supported")
        case "noindex":
            guard arguments.count == 1 else { throw failure(context, "noindex: takes one value") }
            return arguments[0]
        default:
            throw failure(context, "the function \(name): is not one storefs runs")
        }
    }

    // MARK: - Setting attributes

    /// The value `value` gives `attribute`: converted where the conversion is exact, refused
    /// (naming the object) where it is not.
    func attributeValue(
        _ value: Value, for attribute: AttributeDescription, of entity: EntityDescription, context: EvaluationContext
    )
        throws(ObjectGraphError) -> AttributeValue?
    {
        switch value {
        case .null: return nil
        case .scalar(let scalar):
            if let converted = AttributeConversion.convert(scalar, to: attribute.type) { return converted }
            throw failure(
                context,
                "gives \(AttributeConversion.describe(scalar)), which is not a value of \(entity.name).\(attribute.name) "
                    + "(\(attribute.type.rawValue))")
        default:
            throw failure(
                context, "gives \(value.summary), not a value for the attribute \(entity.name).\(attribute.name)")
        }
    }

    // MARK: - Value helpers

    static func number(_ value: AttributeValue) -> Double? {
        switch value {
        case .integer(let i): Double(i)
        case .double(let d): d
        case .float(let f): Double(f)
        case .decimal(let d): DecimalConversion.double(d)
        case .boolean(let b): b ? 1 : 0
        default: nil
        }
    }

    static func kind(of value: AttributeValue) -> String {
        switch value {
        case .string: "string"
        case .integer, .double, .float, .decimal, .boolean: "number"
        case .date: "date"
        case .uuid: "UUID"
        case .data: "data"
        }
    }

    /// A number as NSNumber's `stringValue` spells it: integers plainly, other numbers in their
    /// shortest form without a trailing `.0`.
    static func numberText(_ value: AttributeValue) -> String {
        switch value {
        case .integer(let i): return String(i)
        case .boolean(let b): return b ? "1" : "0"
        case .decimal(let d): return DecimalConversion.text(d)
        case .double(let d):
            if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
            return "\(d)"
        case .float(let f):
            if f == f.rounded(), abs(f) < 1e7 { return String(Int64(f)) }
            return "\(f)"
        default: return ""
        }
    }

    static func clamp(_ d: Double, bits: Int) -> Int64 {
        let limit = bits == 32 ? Double(Int32.max) : 9.223372036854775e18
        if d.isNaN { return 0 }
        if d >= limit { return bits == 32 ? Int64(Int32.max) : .max }
        if d <= -limit { return bits == 32 ? Int64(Int32.min) : .min }
        return Int64(d.rounded(.towardZero))
    }

    /// NSString's `intValue`/`integerValue`: leading spaces, a sign and digits; 0 when there are
    /// none; the bound of the type when the digits overflow it.
    static func leadingInteger(_ s: String, bits: Int) -> Int64 {
        var scalars = Substring(s).unicodeScalars.drop { $0 == " " || $0 == "\t" || $0 == "\n" }
        var negative = false
        if let sign = scalars.first, sign == "-" || sign == "+" {
            negative = sign == "-"
            scalars = scalars.dropFirst()
        }
        let upper: Int64 = bits == 32 ? Int64(Int32.max) : .max
        let lower: Int64 = bits == 32 ? Int64(Int32.min) : .min
        var value: Int64 = 0
        for scalar in scalars {
            guard let digit = scalar.properties.numericType == .decimal ? Int64(String(scalar)) : nil, scalar.isASCII
            else { break }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            if o1 || o2 || sum > upper || sum < lower { return negative ? lower : upper }
            value = sum
        }
        return value
    }

    /// NSString's `doubleValue`: the longest leading number; 0 when there is none.
    static func leadingDouble(_ s: String) -> Double {
        // A number has at most a few dozen characters; longer text is not scanned further.
        let trimmed = s.drop { $0 == " " || $0 == "\t" || $0 == "\n" }.prefix(64)
        var best = 0.0
        var end = trimmed.startIndex
        while end < trimmed.endIndex {
            end = trimmed.index(after: end)
            if let d = Double(trimmed[trimmed.startIndex..<end]) { best = d }
        }
        return best.isFinite ? best : 0
    }

    /// NSString's `boolValue`: true when the first non-space character is Y, y, T, t or 1-9
    /// (after an optional sign and zeros).
    static func leadingBool(_ s: String) -> Bool {
        var rest = Substring(s).drop { $0 == " " || $0 == "\t" || $0 == "\n" }
        if let first = rest.first, first == "+" || first == "-" { rest = rest.dropFirst() }
        rest = rest.drop { $0 == "0" }
        guard let c = rest.first else { return false }
        return "YyTt123456789".contains(c)
    }
}
