import Foundation
import ObjectGraph

/// A seeded random number generator (SplitMix64): the same seed gives the same predicates, so a
/// failure names the seed that reproduces it.
public struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &self) < probability }

    public mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }
}

/// Random predicates over any model, every form the predicate language has: key paths through
/// to-one and to-many relationships, ANY/ALL/NONE, @count/@sum/@avg/@min/@max, every operator
/// with [c]/[d]/[cd], IN with lists and strings, BETWEEN, nil, dates, key path against key path,
/// AND/OR/NOT. Constants come from the values the store holds (``values``), changed a little, so
/// the predicates select some objects and not all.
///
/// Every predicate it makes passes ``PredicateChecker`` (the tests hold it to that).
public struct PredicateGenerator {
    public typealias OGPredicate = ObjectGraph.Predicate
    public typealias OGExpression = ObjectGraph.Expression

    public let model: ManagedObjectModel
    /// Values seen per entity and attribute name (the entity's own and inherited attributes).
    public let values: [EntityID: [String: [AttributeValue]]]
    public var random: SeededRandom

    public init(model: ManagedObjectModel, values: [EntityID: [String: [AttributeValue]]], random: SeededRandom) {
        self.model = model
        self.values = values
        self.random = random
    }

    /// Where a key path ends.
    enum End {
        case attribute(AttributeDescription)
        case object(EntityID)
    }

    struct Path {
        var components: [String]
        var end: End
        /// Whether a to-many step was taken.
        var collection: Bool
        /// The components up to and including the first to-many step (for @count and aggregates).
        var toCollection: [String]?
        /// The entity the last step was taken from.
        var owner: EntityID
    }

    // MARK: - Predicates

    public mutating func predicate(for entity: EntityID, depth: Int = 2) -> OGPredicate {
        if depth > 0 && random.chance(0.3) {
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                return .and(
                    (0..<Int.random(in: 2...3, using: &random)).map { _ in predicate(for: entity, depth: depth - 1) })
            case 1:
                return .or(
                    (0..<Int.random(in: 2...3, using: &random)).map { _ in predicate(for: entity, depth: depth - 1) })
            default:
                return .not(predicate(for: entity, depth: depth - 1))
            }
        }
        if random.chance(0.02) { return .constant(random.chance(0.5)) }
        return comparison(for: entity)
    }

    private var stringOptions: ComparisonOptions {
        mutating get {
            random.pick([[], [], .caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive]])
        }
    }

    public mutating func comparison(for entity: EntityID) -> OGPredicate {
        let path = keyPath(from: entity)
        let key = OGExpression.keyPath(path.components)
        if let through = path.toCollection, random.chance(0.3) {
            return aggregateComparison(path, through: through)
        }
        if random.chance(0.1), let other = comparablePath(like: path, from: entity) {
            // Key path against key path.
            let op = random.pick([ComparisonOperator.equal, .notEqual, .less, .greaterOrEqual])
            return .comparison(lhs: key, op: op, rhs: .keyPath(other), options: [], modifier: modifier(path))
        }
        switch path.end {
        case .object(let destination):
            if random.chance(0.3), let other = objectPath(to: destination, from: entity, avoiding: path.components) {
                // `manager IN department.employees`, `department == manager.department`.
                if other.collection && !path.collection {
                    return .comparison(lhs: key, op: .in, rhs: .keyPath(other.components))
                }
                return .comparison(
                    lhs: key, op: random.pick([.equal, .notEqual]), rhs: .keyPath(other.components),
                    modifier: modifier(path))
            }
            return .comparison(
                lhs: key, op: random.pick([.equal, .notEqual]), rhs: .constant(.null), modifier: modifier(path))
        case .attribute(let attribute):
            return attributeComparison(key, attribute, modifier: modifier(path), owner: path.owner)
        }
    }

    private mutating func modifier(_ path: Path) -> ComparisonModifier {
        guard path.collection || random.chance(0.05) else { return .direct }
        return random.pick([.direct, .any, .all, .none])
    }

    private mutating func attributeComparison(
        _ key: OGExpression, _ attribute: AttributeDescription, modifier: ComparisonModifier, owner: EntityID
    ) -> OGPredicate {
        let seen = values[owner]?[attribute.name] ?? []
        if random.chance(0.1) {
            return .comparison(
                lhs: key, op: random.pick([.equal, .notEqual]), rhs: .constant(.null), modifier: modifier)
        }
        switch attribute.type {
        case .string, .uri:
            let text = seenString(seen)
            let options = stringOptions
            switch Int.random(in: 0..<10, using: &random) {
            case 0:
                return .comparison(
                    lhs: key, op: random.pick([.equal, .notEqual, .less, .greaterOrEqual]),
                    rhs: .constant(.string(vary(text))), options: options, modifier: modifier)
            case 1:
                return .comparison(
                    lhs: key, op: .beginsWith,
                    rhs: .constant(.string(vary(String(text.prefix(Int.random(in: 0...4, using: &random)))))),
                    options: options, modifier: modifier)
            case 2:
                return .comparison(
                    lhs: key, op: .endsWith,
                    rhs: .constant(.string(vary(String(text.suffix(Int.random(in: 0...3, using: &random)))))),
                    options: options, modifier: modifier)
            case 3:
                return .comparison(
                    lhs: key, op: .contains, rhs: .constant(.string(vary(middle(text)))), options: options,
                    modifier: modifier)
            case 4:
                return .comparison(
                    lhs: key, op: .like, rhs: .constant(.string(likePattern(text))), options: options,
                    modifier: modifier)
            case 5:
                let pattern =
                    NSRegularExpression.escapedPattern(for: String(text.prefix(2)))
                    + random.pick([".*", ".+", "\\w*.*", ""])
                return .comparison(
                    lhs: key, op: .matches, rhs: .constant(.string(pattern)), options: options, modifier: modifier)
            case 6:
                let items = (0..<Int.random(in: 0...3, using: &random)).map { _ in
                    OGExpression.constant(.string(vary(seenString(seen))))
                }
                return .comparison(lhs: key, op: .in, rhs: .aggregate(items), options: options, modifier: modifier)
            case 7:
                let haystack = (0..<3).map { _ in seenString(seen) }.joined(separator: ", ")
                return .comparison(
                    lhs: key, op: .in, rhs: .constant(.string(haystack)), options: options, modifier: modifier)
            case 8:
                let bounds = [seenString(seen), seenString(seen)].sorted()
                return .comparison(
                    lhs: key, op: .between, rhs: .aggregate(bounds.map { .constant(.string($0)) }), options: options,
                    modifier: modifier)
            default:
                // A string attribute against a number: read as a number, as SQLite's affinity does.
                return .comparison(
                    lhs: key, op: random.pick([.equal, .greater, .less]),
                    rhs: .constant(.integer(Int64.random(in: -5...100, using: &random))), modifier: modifier)
            }
        case .integer16, .integer32, .integer64, .decimal, .double, .float:
            let number = seenNumber(seen)
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1:
                return .comparison(
                    lhs: key, op: random.pick([.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual]),
                    rhs: number, modifier: modifier)
            case 2:
                return .comparison(
                    lhs: key, op: .between, rhs: .aggregate([seenNumber(seen), seenNumber(seen)]), modifier: modifier)
            case 3:
                return .comparison(
                    lhs: key, op: .in,
                    rhs: .aggregate((0..<Int.random(in: 1...4, using: &random)).map { _ in seenNumber(seen) }),
                    modifier: modifier)
            case 4:
                // A number written as a string: read as a number.
                var text = "12"
                if case .constant(.integer(let i)) = number { text = String(i) }
                if case .constant(.double(let d)) = number { text = String(d) }
                return .comparison(
                    lhs: key, op: random.pick([.greater, .lessOrEqual, .equal]), rhs: .constant(.string(text)),
                    modifier: modifier)
            default:
                return .comparison(lhs: key, op: random.pick([.greater, .less]), rhs: number, modifier: modifier)
            }
        case .boolean:
            let literal: OGExpression.Literal =
                random.chance(0.5) ? .boolean(random.chance(0.5)) : .integer(Int64.random(in: 0...1, using: &random))
            return .comparison(
                lhs: key, op: random.pick([.equal, .notEqual]), rhs: .constant(literal), modifier: modifier)
        case .date:
            let seconds = seenDate(seen)
            if random.chance(0.3) {
                return .comparison(
                    lhs: key, op: .between,
                    rhs: .aggregate([.constant(.date(seconds - 86_400 * 400)), .constant(.date(seconds))]),
                    modifier: modifier)
            }
            return .comparison(
                lhs: key, op: random.pick([.less, .lessOrEqual, .greater, .equal, .notEqual]),
                rhs: .constant(.date(seconds)), modifier: modifier)
        case .uuid:
            var text = UUID().uuidString
            for value in seen where random.chance(0.5) {
                if case .uuid(let uuid) = value {
                    text = random.chance(0.5) ? uuid.uuidString : uuid.uuidString.lowercased()
                }
            }
            return .comparison(
                lhs: key, op: random.pick([.equal, .notEqual]), rhs: .constant(.string(text)), modifier: modifier)
        case .binaryData, .transformable, .objectID, .undefined:
            return .comparison(
                lhs: key, op: random.pick([.equal, .notEqual]), rhs: .constant(.null), modifier: modifier)
        }
    }

    private mutating func aggregateComparison(_ path: Path, through: [String]) -> OGPredicate {
        if case .attribute(let attribute) = path.end, random.chance(0.6) {
            let numeric: Set<AttributeType> = [.integer16, .integer32, .integer64, .decimal, .double, .float, .boolean]
            let rest = Array(path.components.dropFirst(through.count))
            var ops = ["@min", "@max"]
            if numeric.contains(attribute.type) { ops += ["@sum", "@avg", "@sum", "@avg"] }
            if numeric.contains(attribute.type) || [.date, .string, .uri].contains(attribute.type) {
                let op = random.pick(ops)
                let seen = values[path.owner]?[attribute.name] ?? []
                let rhs: OGExpression
                switch attribute.type {
                case .date: rhs = .constant(.date(seenDate(seen)))
                case .string, .uri: rhs = .constant(.string(seenString(seen)))
                case .boolean: rhs = .constant(.integer(Int64.random(in: 0...3, using: &random)))
                default:
                    rhs =
                        op == "@sum"
                        ? .constant(.double(Double.random(in: -10...1_000_000, using: &random).rounded()))
                        : seenNumber(seen)
                }
                return .comparison(
                    lhs: .keyPath(through + [op] + rest),
                    op: random.pick([.less, .greater, .equal, .notEqual, .greaterOrEqual]), rhs: rhs)
            }
        }
        return .comparison(
            lhs: .keyPath(through + ["@count"]), op: random.pick([.equal, .notEqual, .greater, .less, .lessOrEqual]),
            rhs: .constant(.integer(Int64.random(in: 0...6, using: &random))))
    }

    // MARK: - Key paths

    /// A random key path from `entity`: up to three relationship steps, then (mostly) an attribute.
    mutating func keyPath(from entity: EntityID) -> Path {
        var components: [String] = []
        var current = entity
        var collection = false
        var toCollection: [String]?
        for step in 0..<3 {
            let description = model[current]
            let attributes = description.persistentAttributes
            let relationships = description.persistentRelationships.filter {
                model.entityID(named: $0.destinationEntityName) != nil
            }
            let wantsRelationship =
                !relationships.isEmpty && (attributes.isEmpty || random.chance(step == 0 ? 0.5 : 0.3))
            if wantsRelationship {
                let relationship = random.pick(relationships)
                components.append(relationship.name)
                let destination = model.entityID(named: relationship.destinationEntityName)!
                if relationship.isToMany {
                    if !collection { toCollection = components }
                    collection = true
                }
                if random.chance(0.15) || step == 2 {
                    return Path(
                        components: components, end: .object(destination), collection: collection,
                        toCollection: toCollection, owner: current)
                }
                current = destination
                continue
            }
            if attributes.isEmpty { break }
            let attribute = random.pick(attributes)
            components.append(attribute.name)
            return Path(
                components: components, end: .attribute(attribute), collection: collection, toCollection: toCollection,
                owner: current)
        }
        if components.isEmpty { components = ["SELF"] }
        return Path(
            components: components, end: .object(current), collection: collection, toCollection: toCollection,
            owner: current)
    }

    /// Another key path from `entity` that ends in an attribute of the same kind as `path`'s.
    private mutating func comparablePath(like path: Path, from entity: EntityID) -> [String]? {
        guard case .attribute(let attribute) = path.end else { return nil }
        for _ in 0..<8 {
            let other = keyPath(from: entity)
            // Binary values compare only with nil in a query.
            if case .attribute(let found) = other.end, Self.kind(found.type) == Self.kind(attribute.type),
                Self.kind(found.type) < 4
            {
                return other.components
            }
        }
        return nil
    }

    /// Another key path from `entity` that reaches objects of `destination`.
    private mutating func objectPath(to destination: EntityID, from entity: EntityID, avoiding: [String]) -> Path? {
        let root = model[destination].rootID
        for _ in 0..<12 {
            let other = keyPath(from: entity)
            if case .object(let found) = other.end, model[found].rootID == root, other.components != avoiding {
                return other
            }
        }
        return nil
    }

    private static func kind(_ type: AttributeType) -> Int {
        switch type {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean: 0
        case .string, .uri: 1
        case .date: 2
        case .uuid: 3
        default: 4
        }
    }

    // MARK: - Constants

    private mutating func seenString(_ seen: [AttributeValue]) -> String {
        let strings = seen.compactMap { if case .string(let s) = $0 { s } else { nil } }
        if strings.isEmpty || random.chance(0.1) { return random.pick(["", "a", "É", "Zürich", "ß", "New", "e"]) }
        return random.pick(strings)
    }

    /// The same text with its case or accents changed now and then, so [c] and [d] matter.
    private mutating func vary(_ text: String) -> String {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return text.uppercased()
        case 1: return text.lowercased()
        case 2: return text.replacingOccurrences(of: "e", with: "é")
        case 3: return text.folding(options: .diacriticInsensitive, locale: nil)
        default: return text
        }
    }

    private mutating func middle(_ text: String) -> String {
        let characters = Array(text)
        guard characters.count > 2 else { return text }
        let start = Int.random(in: 0..<(characters.count - 1), using: &random)
        let length = Int.random(in: 1...min(3, characters.count - start), using: &random)
        return String(characters[start..<(start + length)])
    }

    private mutating func likePattern(_ text: String) -> String {
        var characters = Array(vary(text))
        for index in characters.indices where random.chance(0.2) { characters[index] = "?" }
        var pattern = String(characters)
        if random.chance(0.5), !pattern.isEmpty {
            pattern = String(pattern.prefix(Int.random(in: 0...pattern.count, using: &random))) + "*"
        }
        if random.chance(0.3) {
            pattern = "*" + String(pattern.suffix(Int.random(in: 0...pattern.count, using: &random)))
        }
        return pattern
    }

    private mutating func seenNumber(_ seen: [AttributeValue]) -> OGExpression {
        var numbers: [Double] = []
        var integers: [Int64] = []
        for value in seen {
            switch value {
            case .integer(let i): integers.append(i)
            case .double(let d) where d.isFinite: numbers.append(d)
            case .float(let f) where f.isFinite: numbers.append(Double(f))
            case .decimal(let d): numbers.append(NSDecimalNumber(decimal: d).doubleValue)
            default: break
            }
        }
        if let integer = integers.randomElement(using: &random), random.chance(0.8) {
            return .constant(.integer(integer &+ Int64.random(in: -1...1, using: &random)))
        }
        if let number = numbers.randomElement(using: &random), random.chance(0.8) {
            switch Int.random(in: 0..<3, using: &random) {
            case 0: return .constant(.double(number))
            case 1: return .constant(.integer(Int64(number.rounded())))
            default: return .constant(.double(number * 1.01))
            }
        }
        return .constant(
            random.chance(0.5)
                ? .integer(Int64.random(in: -3...100, using: &random))
                : .double(Double.random(in: -1...1000, using: &random)))
    }

    private mutating func seenDate(_ seen: [AttributeValue]) -> Double {
        let dates = seen.compactMap { if case .date(let d) = $0 { d.timeIntervalSinceReferenceDate } else { nil } }
        return dates.randomElement(using: &random).map { random.chance(0.5) ? $0 : $0 + 1 }
            ?? Double.random(in: -1e9...1e9, using: &random).rounded()
    }
}
