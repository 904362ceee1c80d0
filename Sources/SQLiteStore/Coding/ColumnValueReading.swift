import Foundation
import GRDB
import GRDBSQLite
import ObjectGraph

extension ValueCoding {
    /// The value of column `index` of the current row of `statement`, read straight from SQLite
    /// for the cases a store holds nearly always: a column of its attribute's own storage class
    /// (integers and booleans as INTEGER, doubles, floats and dates as REAL, strings as the BLOB
    /// their CAST gives, data and UUIDs as BLOB). `.some(nil)` is NULL; nil leaves the value to
    /// ``decode(_:as:at:)``, which converts or refuses everything else and words the errors.
    ///
    /// The answer is the one ``decode(_:as:at:)`` gives for the same column: this only skips
    /// making a `DatabaseValue` (a `Data` copy for every BLOB) and a `String(data:encoding:)`
    /// (Foundation's, slow), a third of reading a row of a sample store.
    static func directValue(of statement: SQLiteStatement, at index: CInt, as type: AttributeType) -> AttributeValue?? {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_NULL:
            return .some(nil)
        case SQLITE_INTEGER:
            let v = sqlite3_column_int64(statement, index)
            switch type {
            case .integer16, .integer32, .integer64:
                // Out of range: decode's error.
                guard type.integerRange?.contains(v) ?? true else { return nil }
                return .integer(v)
            case .boolean:
                return .boolean(v != 0)
            default:
                return nil
            }
        case SQLITE_FLOAT:
            let v = sqlite3_column_double(statement, index)
            switch type {
            case .double: return .double(v)
            case .float: return .float(Float(v))
            case .date: return .date(Date(timeIntervalSinceReferenceDate: v))
            default: return nil
            }
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let start = sqlite3_column_blob(statement, index) else {
                // Empty: decode knows what an empty BLOB is for each type.
                return nil
            }
            let bytes = UnsafeRawBufferPointer(start: start, count: count)
            switch type {
            case .string, .uri:
                // Foundation drops a leading byte order mark; decode keeps doing so.
                if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return nil }
                guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
                return .string(text)
            case .binaryData, .transformable:
                return .data(Data(bytes))
            case .uuid:
                guard count == 16 else { return nil }
                let b = bytes
                return .uuid(
                    UUID(
                        uuid: (
                            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                            b[14], b[15]
                        )))
            default:
                return nil
            }
        default:
            return nil
        }
    }
}
