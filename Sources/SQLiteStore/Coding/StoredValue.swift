import Foundation
import GRDB

/// Reading bookkeeping values (keys, Z_ENT, Z_OPT, Z_MAX, names, the metadata row) from a file
/// that may hold anything.
///
/// GRDB's typed row subscripts (`row[0] as Int64?`) end the process (a forced try inside GRDB) when a value does
/// not convert, and SQLite keeps whatever a column was given whatever its declared type: a
/// hand-edited or damaged store can hold TEXT in Z_MAX or a BLOB in Z_ENT. These accessors look at
/// the storage class instead and answer nil for anything that is not the expected kind, so the
/// caller decides between skipping the row and a clear error.
extension DatabaseValue {
    /// The integer SQLite holds; nil for NULL and for every other storage class.
    var storedInteger: Int64? {
        if case .int64(let value) = storage { return value }
        return nil
    }

    /// The text SQLite holds, or a BLOB's bytes when they are UTF-8; nil otherwise.
    var storedText: String? {
        switch storage {
        case .string(let text): text
        case .blob(let data): String(data: data, encoding: .utf8)
        default: nil
        }
    }

    /// A BLOB's bytes, or a TEXT's UTF-8 bytes; nil otherwise.
    var storedBytes: Data? {
        switch storage {
        case .blob(let data): data
        case .string(let text): Data(text.utf8)
        default: nil
        }
    }

    /// What the value is, for error messages: `TEXT 'abc'`, `REAL 1.5`, `a BLOB of 3 bytes`.
    var storedDescription: String { ValueCoding.describe(self) }
}

extension Row {
    /// Every column's value, by position; never traps.
    var storedValues: [DatabaseValue] { Array(databaseValues) }
}
