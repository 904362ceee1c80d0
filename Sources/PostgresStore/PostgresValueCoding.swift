import Foundation
import ObjectGraph

/// Attribute values in PostgreSQL's types and text forms.
///
/// Types: Integer 16/32/64 are smallint/integer/bigint, Boolean boolean, Double double precision,
/// Float real, Decimal numeric, String and URI text, UUID uuid, binary and transformable bytea.
/// Dates are kept as Core Data keeps them, seconds since 2001-01-01 in double precision: a
/// `timestamptz` holds microseconds only, and a date migrated from an SQLite store and back
/// must come back with the same bits.
///
/// What PostgreSQL cannot hold is refused when it is written (EINVAL at the write,
/// ``PostgresDialect/encode(_:as:entity:)``): a NUL character in a string. NaN and ±infinity of
/// doubles and floats are kept (SQLite cannot).
enum PostgresValueCoding {
    static func columnType(of type: AttributeType) -> String {
        switch type {
        case .integer16: "smallint"
        case .integer32: "integer"
        case .integer64: "bigint"
        case .boolean: "boolean"
        case .double, .date: "double precision"
        case .float: "real"
        case .decimal: "numeric"
        case .string, .uri: "text"
        case .uuid: "uuid"
        case .binaryData, .transformable, .objectID, .undefined: "bytea"
        }
    }

    // MARK: - Writing (values are encoded by PostgresDialect)

    /// A double's text: its shortest exact form, `Infinity`, `-Infinity`, `NaN` spelled out.
    static func text(of v: Double) -> String {
        v.isNaN ? "NaN" : v.isInfinite ? (v > 0 ? "Infinity" : "-Infinity") : "\(v)"
    }

    /// bytea's hex input form: `\x0a1b`.
    static func hex(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes = [UInt8](repeating: 0, count: 2 + data.count * 2)
        bytes[0] = UInt8(ascii: "\\")
        bytes[1] = UInt8(ascii: "x")
        var i = 2
        for byte in data {
            bytes[i] = digits[Int(byte >> 4)]
            bytes[i + 1] = digits[Int(byte & 15)]
            i += 2
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - Reading

    /// The value a column's text holds. A value that does not read as its type (another tool
    /// changed a column's type) throws ``ObjectGraphError/Code/corruptStore`` naming it.
    static func decode(_ bytes: UnsafeRawBufferPointer, as type: AttributeType, place: @autoclosure () -> String)
        throws(ObjectGraphError) -> AttributeValue
    {
        func bad() -> ObjectGraphError {
            ObjectGraphError(
                .corruptStore,
                "\(place()) holds \"\(String(decoding: bytes.prefix(40), as: UTF8.self))\", which is not a \(type.rawValue) value"
            )
        }
        func text() -> String { String(decoding: bytes, as: UTF8.self) }
        switch type {
        case .integer16, .integer32, .integer64:
            guard let v = Int64(text()), (type.integerRange ?? Int64.min...Int64.max).contains(v) else { throw bad() }
            return .integer(v)
        case .boolean:
            switch bytes.first {
            case UInt8(ascii: "t"): return .boolean(true)
            case UInt8(ascii: "f"): return .boolean(false)
            default: throw bad()
            }
        case .double:
            guard let v = double(text()) else { throw bad() }
            return .double(v)
        case .date:
            guard let v = double(text()) else { throw bad() }
            return .date(Date(timeIntervalSinceReferenceDate: v))
        case .float:
            guard let v = double(text()).map(Float.init) else { throw bad() }
            return .float(v)
        case .decimal:
            guard let v = DecimalConversion.decimal(text()) else { throw bad() }
            return .decimal(v)
        case .string, .uri: return .string(text())
        case .uuid:
            guard let v = UUID(uuidString: text()) else { throw bad() }
            return .uuid(v)
        case .binaryData, .transformable, .objectID, .undefined:
            guard let data = unhex(bytes) else { throw bad() }
            return .data(data)
        }
    }

    /// A double's text as PostgreSQL writes it (`Infinity`, `-Infinity`, `NaN` spelled out).
    static func double(_ text: String) -> Double? {
        switch text {
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        case "NaN": .nan
        default: Double(text)
        }
    }

    /// bytea's hex output form back to bytes; nil when it is not that form.
    static func unhex(_ bytes: UnsafeRawBufferPointer) -> Data? {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"), bytes.count % 2 == 0
        else {
            return nil
        }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out = [UInt8](repeating: 0, count: (bytes.count - 2) / 2)
        var i = 2
        var j = 0
        while i < bytes.count {
            guard let high = nibble(bytes[i]), let low = nibble(bytes[i + 1]) else { return nil }
            out[j] = high << 4 | low
            i += 2
            j += 1
        }
        return Data(out)
    }
}
