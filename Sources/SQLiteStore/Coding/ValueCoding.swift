import Foundation
import GRDB
import ObjectGraph

/// Converts what SQLite stores to attribute values, as Core Data lays them out.
///
/// Reading is strict and never traps. A value of another storage class than its column's (a
/// hand-edited store: TEXT in an INTEGER column, REAL in a TIMESTAMP column written as integer by
/// SQLite's NUMERIC affinity) is converted when the conversion loses nothing; anything else, and
/// integers outside an Integer 16/32 range, throws ``ObjectGraphError/Code/corruptStore`` naming
/// the entity, attribute, key and value, so that a bad row is reported instead of silently
/// read as nil. Float attributes are the one rounding conversion: Core Data stores them widened to
/// REAL, and a REAL that is not an exact float is read as the nearest float, as Core Data does.
///
/// Writing is ``SQLiteDialect/encode(_:as:entity:)``'s, which refuses what SQLite cannot hold:
/// NaN (SQLite stores it as NULL). -0.0 is stored by SQLite as the integer 0 in REAL-affinity
/// columns, so it reads back as +0.0; that is SQLite's representation, not something a store in
/// Core Data's schema can change.
enum ValueCoding {
    struct Place {
        var entity: String
        var attribute: String
        var key: Int64
    }

    // MARK: - Reading

    static func decode(_ value: DatabaseValue, as type: AttributeType, at place: Place) throws(ObjectGraphError)
        -> AttributeValue?
    {
        func bad(_ why: String = "") -> ObjectGraphError {
            ObjectGraphError(
                .corruptStore,
                "\(place.entity).\(place.attribute) of object p\(place.key) holds \(describe(value)), which is not a valid "
                    + "\(type.rawValue) value\(why); fix the row or open the store with a model that matches it")
        }
        switch value.storage {
        case .null:
            return nil
        case .int64(let v):
            switch type {
            case .integer16, .integer32, .integer64:
                guard type.fullIntegerRange.contains(v) else { throw bad(" (out of range)") }
                return .integer(v)
            case .boolean: return .boolean(v != 0)
            case .double:
                guard let d = Double(exactly: v) else { throw bad() }
                return .double(d)
            case .float:
                guard let f = Float(exactly: v) else { throw bad() }
                return .float(f)
            case .decimal: return .decimal(Decimal(v))
            case .date:
                guard let d = Double(exactly: v) else { throw bad() }
                return .date(Date(timeIntervalSinceReferenceDate: d))
            case .string, .uri: return .string(String(v))
            default: throw bad()
            }
        case .double(let v):
            switch type {
            case .integer16, .integer32, .integer64:
                guard let i = Int64(exactly: v), type.fullIntegerRange.contains(i) else { throw bad() }
                return .integer(i)
            case .boolean:
                guard v == 0 || v == 1 else { throw bad() }
                return .boolean(v == 1)
            case .double: return .double(v)
            case .float: return .float(Float(v))
            case .decimal:
                guard v.isFinite, let d = DecimalConversion.decimal("\(v)") else {
                    throw bad()
                }
                return .decimal(d)
            case .date: return .date(Date(timeIntervalSinceReferenceDate: v))
            case .string, .uri: return .string("\(v)")
            default: throw bad()
            }
        case .string(let s):
            switch type {
            case .string, .uri: return .string(s)
            case .integer16, .integer32, .integer64:
                guard let i = Int64(s), type.fullIntegerRange.contains(i) else { throw bad() }
                return .integer(i)
            case .boolean:
                guard let i = Int64(s), i == 0 || i == 1 else { throw bad() }
                return .boolean(i == 1)
            case .double:
                guard let d = Double(s) else { throw bad() }
                return .double(d)
            case .float:
                guard let f = Float(s) else { throw bad() }
                return .float(f)
            case .decimal:
                guard let d = DecimalConversion.decimal(s) else { throw bad() }
                return .decimal(d)
            case .date:
                guard let d = Double(s) else { throw bad() }
                return .date(Date(timeIntervalSinceReferenceDate: d))
            case .uuid:
                guard let u = UUID(uuidString: s) else { throw bad() }
                return .uuid(u)
            case .binaryData, .transformable: return .data(Data(s.utf8))
            default: throw bad()
            }
        case .blob(let data):
            switch type {
            case .binaryData, .transformable: return .data(data)
            case .uuid:
                guard data.count == 16 else { throw bad(" (a UUID is 16 bytes)") }
                let b = [UInt8](data)
                return .uuid(
                    UUID(
                        uuid: (
                            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                            b[14], b[15]
                        )))
            case .string, .uri:
                guard let s = String(data: data, encoding: .utf8) else { throw bad(" (not UTF-8)") }
                return .string(s)
            default: throw bad()
            }
        }
    }

    /// A short description of a stored value for error messages.
    static func describe(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: "NULL"
        case .int64(let v): "INTEGER \(v)"
        case .double(let v): "REAL \(v)"
        case .string(let s): "TEXT '\(s.prefix(40))\(s.count > 40 ? "…" : "")'"
        case .blob(let d): "a BLOB of \(d.count) bytes"
        }
    }
}

extension AttributeType {
    /// ``integerRange``, or every Int64 for a type without one (only integer types reach the
    /// callers; spelled without a force unwrap so no path from a file can trap on it).
    fileprivate var fullIntegerRange: ClosedRange<Int64> { integerRange ?? Int64.min...Int64.max }
}
