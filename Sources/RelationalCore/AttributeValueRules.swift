import Foundation
import ObjectGraph

/// What every relational engine refuses in a value before it stores it: a value of another type
/// than its attribute's, an integer outside its type's range, and NaN where the engine's column
/// cannot hold it (SQLite turns it into NULL; PostgreSQL's numeric and Core Data's decimals have
/// none; an invalid date has no seconds). Refused as ``ObjectGraphError/Code/validation``, naming
/// the entity and attribute, so a write fails at the call that makes it.
package enum AttributeValueRules {
    /// Checks `value` for `attribute` of `entity`; `allowsNaN`: the engine keeps NaN in double
    /// and float columns.
    package static func check(
        _ value: AttributeValue, for attribute: AttributeDescription, entity: String, allowsNaN: Bool
    ) throws(ObjectGraphError) {
        func invalid(_ why: String) -> ObjectGraphError {
            ObjectGraphError(.validation, "\(entity).\(attribute.name): \(why)")
        }
        guard value.matches(attribute.type) else {
            throw invalid("value \(value) is not of type \(attribute.type.rawValue)")
        }
        switch value {
        case .integer(let v):
            if let range = attribute.type.integerRange, !range.contains(v) {
                throw invalid(
                    "\(v) is outside the range of \(attribute.type.rawValue) (\(range.lowerBound)...\(range.upperBound))"
                )
            }
        case .double(let v):
            if v.isNaN && !allowsNaN { throw invalid("NaN cannot be stored in this store (it would become NULL)") }
        case .float(let v):
            if v.isNaN && !allowsNaN { throw invalid("NaN cannot be stored in this store (it would become NULL)") }
        case .decimal(let v):
            if v.isNaN { throw invalid("NaN cannot be stored as a Decimal") }
        case .date(let v):
            if v.timeIntervalSinceReferenceDate.isNaN { throw invalid("an invalid date (NaN) cannot be stored") }
        case .boolean, .string, .data, .uuid:
            break
        }
    }

    /// The representation both engines share: integers and booleans as integers, doubles, floats
    /// and dates (seconds since 2001) as reals, strings as text, bytes as blobs. Decimals and
    /// UUIDs are the dialect's to spell (nil here).
    package static func common(_ value: AttributeValue) -> SQLValue? {
        switch value {
        case .integer(let v): .integer(v)
        case .boolean(let v): .integer(v ? 1 : 0)
        case .double(let v): .real(v)
        case .float(let v): .real(Double(v))
        case .date(let v): .real(v.timeIntervalSinceReferenceDate)
        case .string(let v): .text(v)
        case .data(let v): .blob(v)
        case .decimal, .uuid: nil
        }
    }
}
