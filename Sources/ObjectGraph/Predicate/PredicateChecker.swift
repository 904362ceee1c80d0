/// Checks a predicate a user typed against the entity it selects from, before any object is read.
///
/// ``PredicateEvaluator`` finds a key the entity lacks only when it reaches an object (and not at
/// all when the entity has no objects); a query (`storefs export --where`, a query folder) should
/// say at once what is wrong with it, as Core Data's fetch does ("keypath nmae not found in entity
/// Employee"). What is refused, each with a message naming the key path:
/// - a key that is not a persistent attribute or relationship of the entity reached (subentities'
///   keys included: Core Data refuses them too), a fetched property, a transient property;
/// - a key after an attribute value (`lastName.first`), a collection operator after one value
///   or one object (`lastName.@count`, `level.@sum`, `manager.@count`: they count and aggregate
///   a collection, which only a to-many relationship makes), anything after `@count`;
/// - `@sum` and `@avg` of values that are not numbers or booleans, `@min` and `@max` of values that
///   do not order (binary data, UUIDs, objects), an unknown collection operator;
/// - variables (`$FETCH_SOURCE`, `$NAME`): a query has no source object and no substitutions;
/// - a `MATCHES` pattern that is not a regular expression, `BETWEEN` without `{low, high}`;
/// - Binary Data and Transformable values compared with anything but nil (the language has no
///   literal for bytes, and a store may keep them in files beside it).
///
/// A predicate that passes is one every store evaluates without an error; an SQLite store
/// evaluates it in SQL (but for relationships and entities the file has no column or table for,
/// when a model does not match its file: those read as empty, and are evaluated in memory).
///
/// Threading: stateless; call from any thread.
public enum PredicateChecker {
    /// What a key path reaches.
    private enum Reach {
        /// Objects of an entity: one (to-one steps only) or a collection (after a to-many step).
        case objects(EntityID, collection: Bool)
        /// Values of an attribute type, one or a collection.
        case values(AttributeType, collection: Bool)
        /// A number (`@count`, `@sum`, `@avg`) or an aggregate's value.
        case result(AttributeType?)
    }

    /// Checks `predicate` for the objects of `entity`.
    ///
    /// - Throws: ``ObjectGraphError/Code/validation`` saying what is wrong, quoting the key path.
    public static func check(_ predicate: Predicate, for entity: EntityID, in model: ManagedObjectModel)
        throws(ObjectGraphError)
    {
        switch predicate {
        case .constant:
            return
        case .and(let operands), .or(let operands):
            for operand in operands { try check(operand, for: entity, in: model) }
        case .not(let operand):
            try check(operand, for: entity, in: model)
        case .comparison(let lhs, let op, let rhs, let options, _):
            let left = try check(lhs, entity, model)
            let right = try check(rhs, entity, model)
            let isNil = { (e: Expression) in if case .constant(.null) = e { true } else { false } }
            for (side, reach, other) in [(lhs, left, rhs), (rhs, right, lhs)] {
                guard case .values(let type, _)? = reach, type == .binaryData || type == .transformable else {
                    continue
                }
                guard isNil(other), op == .equal || op == .notEqual else {
                    throw ObjectGraphError(
                        .validation,
                        "\(side) holds \(type.rawValue) values, which a query compares only with nil (== nil, != nil)")
                }
            }
            if op == .matches, case .constant(.string(let pattern)) = rhs,
                !PredicateEvaluator.isValidRegularExpression(pattern)
            {
                throw ObjectGraphError(
                    .validation, "MATCHES\(options.formatText) \"\(pattern)\" is not a valid regular expression")
            }
            if op == .between {
                guard case .aggregate(let bounds) = rhs, bounds.count == 2 else {
                    throw ObjectGraphError(.validation, "BETWEEN needs two values written {low, high}, not \(rhs)")
                }
            }
        }
    }

    /// Checks `expression`; returns what a key path reaches (nil for other expressions).
    @discardableResult
    private static func check(_ expression: Expression, _ entity: EntityID, _ model: ManagedObjectModel)
        throws(ObjectGraphError) -> Reach?
    {
        switch expression {
        case .constant:
            return nil
        case .aggregate(let items):
            for item in items {
                if case .values(let type, _)? = try check(item, entity, model),
                    type == .binaryData || type == .transformable
                {
                    throw ObjectGraphError(
                        .validation,
                        "\(item) holds \(type.rawValue) values, which a query compares only with nil (== nil, != nil)")
                }
            }
            return nil
        case .variable(let name, let path):
            let written = "$" + ([name] + path).joined(separator: ".")
            throw ObjectGraphError(
                .validation,
                "\(written): a query has no variables (no $FETCH_SOURCE, no substitutions); write the value itself")
        case .keyPath(let path):
            let components = path.first == "SELF" ? Array(path.dropFirst()) : path
            return try reach(components[...], from: .objects(entity, collection: false), path, model)
        }
    }

    private static func reach(
        _ components: ArraySlice<String>, from start: Reach, _ path: [String], _ model: ManagedObjectModel
    ) throws(ObjectGraphError) -> Reach {
        let written = path.joined(separator: ".")
        var current = start
        var index = components.startIndex
        while index < components.endIndex {
            let key = components[index]
            if key.hasPrefix("@") {
                let rest = components[(index + 1)...]
                let before = components[components.startIndex..<index].joined(separator: ".")
                switch current {
                case .values(_, collection: false), .result:
                    throw ObjectGraphError(
                        .validation,
                        "key path \(written): \(before.isEmpty ? "SELF" : before) is one value, which has no key \(key) "
                            + "(collection operators count and aggregate the objects or values of a to-many relationship)"
                    )
                case .objects(_, collection: false):
                    throw ObjectGraphError(
                        .validation,
                        "key path \(written): \(before.isEmpty ? "SELF" : before) is one object, which has no key \(key) "
                            + "(collection operators count and aggregate the objects or values of a to-many relationship)"
                    )
                default:
                    break
                }
                switch key.lowercased() {
                case "@count":
                    guard rest.isEmpty else {
                        throw ObjectGraphError(.validation, "key path \(written): nothing can follow @count")
                    }
                    return .result(.integer64)
                case "@sum", "@avg", "@min", "@max":
                    let values: Reach
                    if rest.isEmpty {
                        values = current
                    } else {
                        guard case .objects(let entity, _) = current else {
                            throw ObjectGraphError(
                                .validation,
                                "key path \(written): \(key) follows values, which have no key \(rest.first!)")
                        }
                        values = try reach(rest, from: .objects(entity, collection: true), path, model)
                    }
                    let type: AttributeType?
                    switch values {
                    case .values(let t, _): type = t
                    case .result(let t): type = t
                    case .objects: type = nil
                    }
                    let numeric: Set<AttributeType> = [
                        .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean
                    ]
                    let ordered = numeric.union([.date, .string, .uri])
                    let allowed = key.lowercased() == "@sum" || key.lowercased() == "@avg" ? numeric : ordered
                    guard let type, allowed.contains(type) else {
                        let what = type.map { "\($0.rawValue) values" } ?? "objects"
                        throw ObjectGraphError(
                            .validation,
                            "key path \(written): \(key) of \(what) is not defined (\(key == "@sum" || key == "@avg" ? "numbers" : "numbers, dates or strings") only)"
                        )
                    }
                    return .result(key.lowercased() == "@min" || key.lowercased() == "@max" ? type : .decimal)
                default:
                    throw ObjectGraphError(
                        .validation,
                        "key path \(written): \(key) is not a collection operator (@count, @sum, @avg, @min, @max)")
                }
            }
            guard case .objects(let id, let collection) = current else {
                throw ObjectGraphError(.validation, "key path \(written): a value has no key \(key)")
            }
            let entity = model[id]
            if let (element, next) = entity.compositeElement(in: components, at: index),
                let attribute = entity.attribute(named: element)
            {
                guard !attribute.isTransient else {
                    throw ObjectGraphError(
                        .validation,
                        "key path \(written): \(entity.name).\(element) is transient (not stored), so it cannot be queried"
                    )
                }
                current = .values(attribute.type, collection: collection)
                index = next
                continue
            }
            if let attribute = entity.attribute(named: key) {
                guard !attribute.isTransient else {
                    throw ObjectGraphError(
                        .validation,
                        "key path \(written): \(entity.name).\(key) is transient (not stored), so it cannot be queried")
                }
                current = .values(attribute.type, collection: collection)
            } else if let relationship = entity.relationship(named: key) {
                guard !relationship.isTransient else {
                    throw ObjectGraphError(
                        .validation,
                        "key path \(written): \(entity.name).\(key) is transient (not stored), so it cannot be queried")
                }
                guard let destination = model.entityID(named: relationship.destinationEntityName) else {
                    throw ObjectGraphError(
                        .validation, "key path \(written): \(entity.name).\(key) leads to an entity the model lacks")
                }
                current = .objects(destination, collection: collection || relationship.isToMany)
            } else if entity.fetchedProperty(named: key) != nil {
                throw ObjectGraphError(
                    .validation,
                    "key path \(written): \(entity.name).\(key) is a fetched property, which a query cannot use")
            } else {
                throw ObjectGraphError(
                    .validation,
                    "key path \(written): entity \(entity.name) has no attribute or relationship named \(key)")
            }
            index += 1
        }
        return current
    }
}
