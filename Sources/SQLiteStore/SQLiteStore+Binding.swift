import Foundation
import GRDB
import GRDBSQLite

extension SQLiteStore {
    /// Runs a prepared statement that changes rows, `values` bound through SQLite's C API; returns
    /// the number of rows changed. Bulk writes (a save of 10,000 inserts, their to-many lists) run
    /// one statement many times: building GRDB's `StatementArguments` per row, and looking the
    /// statement up by its SQL, was a third of such a save.
    ///
    /// Errors are GRDB's `DatabaseError`, as ``execute(_:_:_:cached:)`` gives them, so callers
    /// map them the same way (a constraint failure stays a constraint failure).
    @discardableResult
    func execute(_ db: Database, _ statement: Statement, _ values: [DatabaseValue]) throws -> Int {
        requests.add(1, ordering: .relaxed)
        let raw = statement.sqliteStatement
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
        defer { sqlite3_reset(raw) }
        func failure(_ code: CInt) -> DatabaseError { Self.stepError(code, db, sql: statement.sql) }
        for (i, value) in values.enumerated() {
            let index = CInt(i + 1)
            let code: CInt
            switch value.storage {
            case .null:
                code = sqlite3_bind_null(raw, index)
            case .int64(let integer):
                code = sqlite3_bind_int64(raw, index, integer)
            case .double(let double):
                code = sqlite3_bind_double(raw, index, double)
            case .string(let text):
                var text = text
                code = text.withUTF8 { bytes in
                    guard let count = CInt(exactly: bytes.count) else { return SQLITE_TOOBIG }
                    // "" binds as empty text from a literal: a nil pointer would bind NULL.
                    guard let base = bytes.baseAddress, count > 0 else {
                        return sqlite3_bind_text(raw, index, "", 0, Self.transient)
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        sqlite3_bind_text(raw, index, $0, count, Self.transient)
                    }
                }
            case .blob(let data):
                code = data.withUnsafeBytes { bytes in
                    guard let count = CInt(exactly: bytes.count) else { return SQLITE_TOOBIG }
                    // An empty value binds as a zero-length BLOB, not NULL.
                    guard let base = bytes.baseAddress else { return sqlite3_bind_zeroblob(raw, index, 0) }
                    return sqlite3_bind_blob(raw, index, base, count, Self.transient)
                }
            }
            guard code == SQLITE_OK else { throw failure(code) }
        }
        let code = sqlite3_step(raw)
        guard code == SQLITE_DONE || code == SQLITE_ROW else { throw failure(code) }
        return Int(sqlite3_changes(db.sqliteConnection))
    }

    /// The error of a raw SQLite call that returned `code`, as GRDB reports one (SQLite's own
    /// message, the statement's SQL).
    static func stepError(_ code: CInt, _ db: Database, sql: String) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
            sql: sql)
    }

    /// SQLITE_TRANSIENT: SQLite copies a bound value before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
