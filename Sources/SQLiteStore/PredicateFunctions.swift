import Foundation
import GRDB
import ObjectGraph

/// The SQL functions through which a predicate query evaluates, inside SQLite, what plain SQL
/// cannot decide exactly as ``PredicateEvaluator`` does: every comparison runs the evaluator's own
/// ``PredicateEvaluator/compare(_:_:_:_:_:)`` on values read from the row (and collections
/// gathered by subqueries), and aggregates its own ``PredicateEvaluator/aggregate(_:of:)``.
///
/// Values travel between them as ``PredicateValueCoding`` BLOBs:
/// - `storefs_value(type, column)`: a column's value decoded as the attribute type (Core Data's
///   `NSAttributeType` code), as reading the row would decode it;
/// - `storefs_object(zent, key)`: an object (nil for a NULL or non-positive key, as rows read);
/// - `storefs_list(value)` (aggregate) and `storefs_make_list(value, ...)`: a collection, in the
///   order of the rows or arguments;
/// - `storefs_count(value)`, `storefs_aggregate(op, value)`: `@count` and `@sum`/`@avg`/`@min`/`@max`;
/// - `storefs_compare(left, right, op, options, modifier)`: 1 when the comparison holds, else 0.
///
/// A value the row cannot be decoded as (a damaged row) fails the query with the error reading
/// the row would give.
///
/// Threading: stateless functions; SQLite calls them on the connection's thread.
enum PredicateFunctions {
    static let value = "storefs_value"
    static let object = "storefs_object"
    static let list = "storefs_list"
    static let makeList = "storefs_make_list"
    static let count = "storefs_count"
    static let aggregate = "storefs_aggregate"
    static let compare = "storefs_compare"

    static func add(to db: Database) {
        db.add(function: valueFunction)
        db.add(function: objectFunction)
        db.add(function: DatabaseFunction(list, argumentCount: 1, pure: true, aggregate: ListAggregate.self))
        db.add(function: makeListFunction)
        db.add(function: countFunction)
        db.add(function: aggregateFunction)
        db.add(function: compareFunction)
    }

    /// A literal for `value`'s encoding, to write into SQL (constants of the predicate).
    static func literal(_ value: PredicateEvaluator.Value) -> String {
        literal(bytes: PredicateValueCoding.encode(value))
    }

    static func literal(bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = Array("X'".utf8)
        text.reserveCapacity(bytes.count * 2 + 3)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        text.append(UInt8(ascii: "'"))
        return String(decoding: text, as: UTF8.self)
    }

    // MARK: - The functions

    private static let typesByCode: [Int: AttributeType] = Dictionary(
        uniqueKeysWithValues: AttributeType.allCases.map { ($0.coreDataCode, $0) })

    private static let valueFunction = DatabaseFunction(value, argumentCount: 2, pure: true) { values in
        guard let code = values[0].storedInteger, let type = typesByCode[Int(code)] else {
            throw DatabaseError(message: "\(value): unknown attribute type code")
        }
        let place = ValueCoding.Place(entity: "predicate", attribute: type.rawValue, key: 0)
        let decoded: AttributeValue?
        do {
            decoded = try ValueCoding.decode(values[1], as: type, at: place)
        } catch {
            throw DatabaseError(message: (error as? ObjectGraphError)?.message ?? "\(error)")
        }
        return Data(PredicateValueCoding.encode(PredicateEvaluator.Value(decoded)))
    }

    private static let objectFunction = DatabaseFunction(object, argumentCount: 2, pure: true) { values in
        // As a row's to-one reads: integer keys (or their digits as text), none below 1.
        guard let key = SQLiteStore.key(in: values[1]), key > 0 else {
            return Data(PredicateValueCoding.nullBytes)
        }
        let zent = SQLiteStore.key(in: values[0]) ?? -1
        return Data(PredicateValueCoding.encode(PredicateValueCoding.object(zent: zent, key: key)))
    }

    private static let makeListFunction = DatabaseFunction(makeList, argumentCount: nil, pure: true) { values in
        var bytes = PredicateValueCoding.listHeader(count: values.count)
        for value in values { bytes.append(contentsOf: try encoded(value)) }
        return Data(bytes)
    }

    private static let countFunction = DatabaseFunction(count, argumentCount: 1, pure: true) { values in
        let value = try decoded(values[0])
        return Data(PredicateValueCoding.encode(.integer(Int64(value.elements.count))))
    }

    private static let aggregateFunction = DatabaseFunction(aggregate, argumentCount: 2, pure: true) { values in
        guard let op = values[0].storedText else { throw DatabaseError(message: "\(aggregate): no operator") }
        let value = try decoded(values[1])
        do {
            return Data(PredicateValueCoding.encode(try PredicateEvaluator.aggregate(op, of: value.elements)))
        } catch {
            throw DatabaseError(message: (error as? ObjectGraphError)?.message ?? "\(error)")
        }
    }

    private static let compareFunction = DatabaseFunction(compare, argumentCount: 5, pure: true) { values in
        let left = try decoded(values[0])
        let right = try decoded(values[1])
        guard let opName = values[2].storedText, let op = ComparisonOperator(rawValue: opName),
            let rawOptions = values[3].storedInteger, let modifierName = values[4].storedText,
            let modifier = ComparisonModifier(rawValue: modifierName)
        else { throw DatabaseError(message: "\(compare): malformed call") }
        do {
            return try PredicateEvaluator.compare(
                left, op, right, ComparisonOptions(rawValue: Int(rawOptions)), modifier) ? 1 : 0
        } catch {
            throw DatabaseError(message: (error as? ObjectGraphError)?.message ?? "\(error)")
        }
    }

    private static func encoded(_ value: DatabaseValue) throws -> Data {
        guard case .blob(let data) = value.storage else {
            if value.isNull { return Data(PredicateValueCoding.nullBytes) }
            throw DatabaseError(message: "storefs predicate functions take encoded values")
        }
        return data
    }

    private static func decoded(_ value: DatabaseValue) throws -> PredicateEvaluator.Value {
        guard let value = PredicateValueCoding.decode(try encoded(value)) else {
            throw DatabaseError(message: "storefs predicate functions were given a value they did not encode")
        }
        return value
    }

    /// `storefs_list`: the encodings of the values it is given, in order, as one collection.
    private final class ListAggregate: DatabaseAggregate {
        private var bytes: [UInt8] = []
        private var count = 0

        init() {}

        func step(_ values: [DatabaseValue]) throws {
            let value = try PredicateFunctions.encoded(values[0])
            // Gathering is where a key path over to-many relationships multiplies: counted
            // against the query's budget (SQLite calls this on the thread running the query).
            if let budget = QueryBudget.current {
                try budget.visit()
                try budget.hold(value.count)
            }
            bytes.append(contentsOf: value)
            count += 1
        }

        func finalize() throws -> (any DatabaseValueConvertible)? {
            Data(PredicateValueCoding.listHeader(count: count) + bytes)
        }
    }
}
