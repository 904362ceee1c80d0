import Foundation
import GRDB
import GRDBSQLite
import ObjectGraph
import RelationalCore

/// A GRDB database (inside a read or a write) as ``RelationalRules`` runs statements on it:
/// prepared once per SQL text and kept, values bound through SQLite's C API, rows read by
/// column index without GRDB's `Row` (which copies every row). Every statement counts as one
/// request of the store.
///
/// Threading: used inside the GRDB access that gave `db`, on its thread.
struct SQLiteConnection: SQLConnection {
    let db: Database
    let store: SQLiteStore

    @discardableResult
    func execute(_ statement: SQL) throws(ObjectGraphError) -> Int {
        let raw = try prepared(statement)
        defer { sqlite3_reset(raw) }
        let code = sqlite3_step(raw)
        guard code == SQLITE_DONE || code == SQLITE_ROW else { throw failure(code, statement) }
        return Int(sqlite3_changes(db.sqliteConnection))
    }

    func query(_ statement: SQL, _ body: (any SQLRow) throws(ObjectGraphError) -> Void) throws(ObjectGraphError) {
        let raw = try prepared(statement)
        defer { sqlite3_reset(raw) }
        let row = SQLiteRow(statement: raw, store: store)
        while true {
            let code = sqlite3_step(raw)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw failure(code, statement) }
            try body(row)
        }
    }

    /// The statement prepared (kept by GRDB for the next use of the same text), its values bound.
    private func prepared(_ statement: SQL) throws(ObjectGraphError) -> SQLiteStatement {
        store.requests.add(1, ordering: .relaxed)
        let raw: SQLiteStatement
        do {
            raw = try db.cachedStatement(sql: statement.text).sqliteStatement
        } catch {
            throw SQLiteStore.mapError(error, file: store.path)
        }
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
        for (i, value) in statement.arguments.enumerated() {
            let code = Self.bind(value, to: raw, at: CInt(i + 1))
            guard code == SQLITE_OK else { throw failure(code, statement) }
        }
        return raw
    }

    static func bind(_ value: SQLValue, to raw: SQLiteStatement, at index: CInt) -> CInt {
        switch value {
        case .null:
            return sqlite3_bind_null(raw, index)
        case .integer(let integer):
            return sqlite3_bind_int64(raw, index, integer)
        case .real(let double):
            return sqlite3_bind_double(raw, index, double)
        case .text(let text):
            var text = text
            return text.withUTF8 { bytes in
                guard let count = CInt(exactly: bytes.count) else { return SQLITE_TOOBIG }
                // "" binds as empty text from a literal: a nil pointer would bind NULL. The length
                // is given, so an embedded NUL is stored too.
                guard let base = bytes.baseAddress, count > 0 else {
                    return sqlite3_bind_text(raw, index, "", 0, transient)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text(raw, index, $0, count, transient)
                }
            }
        case .blob(let data):
            return data.withUnsafeBytes { bytes in
                guard let count = CInt(exactly: bytes.count) else { return SQLITE_TOOBIG }
                // An empty value binds as a zero-length BLOB, not NULL.
                guard let base = bytes.baseAddress else { return sqlite3_bind_zeroblob(raw, index, 0) }
                return sqlite3_bind_blob(raw, index, base, count, transient)
            }
        }
    }

    /// SQLITE_TRANSIENT: SQLite copies a bound value before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func failure(_ code: CInt, _ statement: SQL) -> ObjectGraphError {
        SQLiteStore.mapError(SQLiteStore.stepError(code, db, sql: statement.text), file: store.path)
    }
}

/// The current row of a prepared SQLite statement.
///
/// Threading: valid during the query that gave it.
struct SQLiteRow: SQLRow {
    let statement: SQLiteStatement
    let store: SQLiteStore

    func isNull(_ column: Int) -> Bool { sqlite3_column_type(statement, CInt(column)) == SQLITE_NULL }

    func integer(_ column: Int) -> Int64? { SQLiteStore.key(statement, CInt(column)) }

    func bytes(_ column: Int) -> Data? { DatabaseValue(sqliteStatement: statement, index: CInt(column)).storedBytes }

    func value(_ column: Int) -> SQLValue {
        SQLiteRow.value(DatabaseValue(sqliteStatement: statement, index: CInt(column)))
    }

    func attributeValue(_ column: Int, as type: AttributeType, external: Bool, place: ValuePlace)
        throws(ObjectGraphError) -> AttributeValue?
    {
        let index = CInt(column)
        if !external, case .some(let value) = ValueCoding.directValue(of: statement, at: index, as: type) {
            return value
        }
        var stored = DatabaseValue(sqliteStatement: statement, index: index)
        if stored.isNull { return nil }
        if external {
            stored = store.mechanisms.externalData.resolve(
                stored, place: place.description, asFile: store.valuesInFiles.load(ordering: .relaxed))
        }
        do {
            return try ValueCoding.decode(
                stored, as: type,
                at: ValueCoding.Place(entity: place.entity, attribute: place.attribute, key: place.key))
        } catch {
            // A row that does not decode is named by entity, property and key; say which file.
            throw ObjectGraphError(error.code, "\(store.path): \(error.message)")
        }
    }

    static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: .null
        case .int64(let v): .integer(v)
        case .double(let v): .real(v)
        case .string(let v): .text(v)
        case .blob(let v): .blob(v)
        }
    }

    static func databaseValue(_ value: SQLValue) -> DatabaseValue {
        switch value {
        case .null: .null
        case .integer(let v): v.databaseValue
        case .real(let v): v.databaseValue
        case .text(let v): v.databaseValue
        case .blob(let v): v.databaseValue
        }
    }
}

/// The relational core's statements, not GRDB's type of the same name.
typealias SQL = RelationalCore.SQL
