import Foundation
import ObjectGraph

/// A connection the relational algorithms run statements on: SQLite's (a GRDB database inside a
/// read or a write) or PostgreSQL's (a libpq connection, inside the save's transaction when it
/// writes). Every statement is counted by the store as one request.
///
/// Threading: used by one thread at a time, the one the store handed it to.
package protocol SQLConnection {
    /// Runs a statement that changes rows; returns how many rows it changed.
    @discardableResult
    func execute(_ statement: SQL) throws(ObjectGraphError) -> Int

    /// Runs a query and hands each row to `body`, in order, without keeping them.
    func query(_ statement: SQL, _ body: (any SQLRow) throws(ObjectGraphError) -> Void) throws(ObjectGraphError)

    /// Appends `rows` (each one value per name of `columns`, in order) to `table` through the
    /// engine's bulk path, exactly as a plain INSERT of them would (no ON CONFLICT: a key taken
    /// fails the statement); false when the engine has no such path, and the caller INSERTs them.
    func appendRows(_ rows: ArraySlice<[SQLValue]>, into table: String, columns: [String]) throws(ObjectGraphError)
        -> Bool
}

extension SQLConnection {
    /// No bulk path: rows go in INSERTs (SQLite's are prepared once and cost no round trip).
    package func appendRows(_ rows: ArraySlice<[SQLValue]>, into table: String, columns: [String])
        throws(ObjectGraphError) -> Bool
    {
        false
    }

    /// The rows of a query as values, for the few small reads that keep them.
    package func values(_ statement: SQL, columns: Int) throws(ObjectGraphError) -> [[SQLValue]] {
        var rows: [[SQLValue]] = []
        try query(statement) { row in rows.append((0..<columns).map { row.value($0) }) }
        return rows
    }

    /// The first column of the first row as an integer (nil when there is no row or it is not
    /// an integer).
    package func integer(_ statement: SQL) throws(ObjectGraphError) -> Int64? {
        var found: Int64?
        var first = true
        try query(statement) { row in
            if first { found = row.integer(0) }
            first = false
        }
        return found
    }
}

/// One row of a query's answer, its columns read by position. Nothing read from a store is
/// trusted: a column that does not hold what is asked answers nil, or the error that names it.
///
/// Threading: valid only inside the ``SQLConnection/query(_:_:)`` call that gave it.
package protocol SQLRow {
    func isNull(_ column: Int) -> Bool
    /// An integer, or the same digits as text (a table another tool rebuilt without types); nil
    /// for anything else.
    func integer(_ column: Int) -> Int64?
    /// Bytes (a blob, bytea, or text's UTF-8 bytes); nil for NULL.
    func bytes(_ column: Int) -> Data?
    /// The column as its engine holds it, for values read only to be written back (tombstones).
    func value(_ column: Int) -> SQLValue
    /// The column as a value of an attribute of `type`, decoded as the engine stores it; nil for
    /// NULL. `external`: the attribute allows external storage (the column may hold a reference
    /// to a file). A column that does not read as `type` throws
    /// ``ObjectGraphError/Code/corruptStore`` naming `place`.
    func attributeValue(_ column: Int, as type: AttributeType, external: Bool, place: ValuePlace)
        throws(ObjectGraphError) -> AttributeValue?
}

/// Where a value was read, for the message of a row that does not decode.
package struct ValuePlace: Sendable {
    package var entity: String
    package var attribute: String
    package var key: Int64

    package init(entity: String, attribute: String, key: Int64) {
        self.entity = entity
        self.attribute = attribute
        self.key = key
    }

    package var description: String { "\(entity).\(attribute) of object p\(key)" }
}
