/// A predicate made ready to test many objects: its constant `IN` lists (`employeeID IN {0, …,
/// 5999}`) become ``MembershipSet``s, so testing an object costs a lookup per list instead of a
/// comparison per element (and the list's values are not made again for every object).
///
/// Threading: a value; share freely.
indirect enum PreparedPredicate: Sendable {
    case constant(Bool)
    case and([PreparedPredicate])
    case or([PreparedPredicate])
    case not(PreparedPredicate)
    case comparison(
        lhs: Expression, op: ComparisonOperator, rhs: Expression, options: ComparisonOptions,
        modifier: ComparisonModifier)
    /// `lhs IN {constants}` with the constants as a set.
    case membership(lhs: Expression, in: MembershipSet, options: ComparisonOptions, modifier: ComparisonModifier)

    /// Lists shorter than this are compared element by element: a set costs more to build than
    /// it saves on a few values.
    static let smallestSet = 16

    init(_ predicate: Predicate) {
        switch predicate {
        case .constant(let value): self = .constant(value)
        case .and(let operands): self = .and(operands.map(PreparedPredicate.init))
        case .or(let operands): self = .or(operands.map(PreparedPredicate.init))
        case .not(let operand): self = .not(PreparedPredicate(operand))
        case .comparison(let lhs, let op, let rhs, let options, let modifier):
            if op == .in, case .aggregate(let items) = rhs, items.count >= Self.smallestSet {
                var values: [PredicateEvaluator.Value] = []
                values.reserveCapacity(items.count)
                for item in items {
                    guard case .constant(let literal) = item else { break }
                    values.append(PredicateEvaluator.Value(literal))
                }
                if values.count == items.count {
                    self = .membership(lhs: lhs, in: MembershipSet(values), options: options, modifier: modifier)
                    return
                }
            }
            self = .comparison(lhs: lhs, op: op, rhs: rhs, options: options, modifier: modifier)
        }
    }
}

/// The values of a constant list, looked up as ``PredicateEvaluator``'s `IN` compares: the
/// answer is exactly `values.contains { equal(value, $0, options) }`.
///
/// Integers, strings and objects are hashed; a value of one of these kinds is then compared only
/// with the list's values of other kinds (a string `"5"` equals the integer 5, as the evaluator
/// reads a string compared with a number as a number). Strings are hashed by their UTF-8 bytes
/// (equal Unicode scalars, the evaluator's string equality) and only for comparisons without
/// `[c]`/`[d]`; other values and options compare element by element.
///
/// Threading: a value; share freely.
struct MembershipSet: Sendable {
    let values: [PredicateEvaluator.Value]
    private let integers: Set<Int64>
    private let notIntegers: [PredicateEvaluator.Value]
    private let strings: Set<[UInt8]>
    private let notStrings: [PredicateEvaluator.Value]
    private let objects: Set<ObjectID>

    init(_ values: [PredicateEvaluator.Value]) {
        self.values = values
        var integers = Set<Int64>()
        var notIntegers: [PredicateEvaluator.Value] = []
        var strings = Set<[UInt8]>()
        var notStrings: [PredicateEvaluator.Value] = []
        var objects = Set<ObjectID>()
        for value in values {
            if case .integer(let i) = value { integers.insert(i) } else { notIntegers.append(value) }
            if case .string(let s) = value { strings.insert(Array(s.utf8)) } else { notStrings.append(value) }
            if case .object(let id) = value { objects.insert(id) }
        }
        self.integers = integers
        self.notIntegers = notIntegers
        self.strings = strings
        self.notStrings = notStrings
        self.objects = objects
    }

    /// Whether `value` equals one of the values.
    func contains(_ value: PredicateEvaluator.Value, _ options: ComparisonOptions) -> Bool {
        switch value {
        case .integer(let i):
            return integers.contains(i) || notIntegers.contains { PredicateEvaluator.equal(value, $0, options) }
        case .string(let s) where options.isEmpty:
            return strings.contains(Array(s.utf8))
                || notStrings.contains { PredicateEvaluator.equal(value, $0, options) }
        case .object(let id):
            // An object equals only an object.
            return objects.contains(id)
        default:
            return values.contains { PredicateEvaluator.equal(value, $0, options) }
        }
    }
}

extension PredicateEvaluator {
    /// ``evaluate(_:on:)`` of a prepared predicate: the same answer.
    func evaluate(_ predicate: PreparedPredicate, on object: ObjectID) throws(ObjectGraphError) -> Bool {
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
        case .membership(let lhs, let set, let options, let modifier):
            // As compare(_:_:_:_:_:) decides `IN` with each modifier.
            let left = try value(of: lhs, on: object)
            switch modifier {
            case .direct:
                if case .list(let items) = left { return items.contains { set.contains($0, options) } }
                return set.contains(left, options)
            case .any: return left.elements.contains { set.contains($0, options) }
            case .all: return left.elements.allSatisfy { set.contains($0, options) }
            case .none: return !left.elements.contains { set.contains($0, options) }
            }
        }
    }
}
