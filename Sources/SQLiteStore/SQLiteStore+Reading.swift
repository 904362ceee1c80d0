import CoreDataSchema
import Foundation
import GRDB
import GRDBSQLite
import ObjectGraph
import RelationalCore

extension SQLiteStore {
    /// The connection ``RelationalRules`` runs statements on, inside a GRDB access.
    func connection(_ db: Database) -> SQLiteConnection { SQLiteConnection(db: db, store: self) }

    public func objectIDs(of entity: EntityID) throws(ObjectGraphError) -> [ObjectID] {
        try read { db in try core.objectIDs(of: entity, on: connection(db)) }
    }

    public func count(of entity: EntityID) throws(ObjectGraphError) -> Int {
        try read { db in try core.count(of: entity, on: connection(db)) }
    }

    /// One `SELECT ... WHERE Z_PK IN (...)` per root table involved, the keys bound as one list.
    public func snapshots(for ids: [ObjectID]) throws(ObjectGraphError) -> [Snapshot] {
        try read { db in try core.snapshots(for: ids, on: connection(db)) }
    }

    public func toManyDestinations(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [ObjectID: [ObjectID]]
    {
        try read { db in try core.toManyDestinations(of: relationship, in: entity, for: sources, on: connection(db)) }
    }

    public func toManyDestinationLists(of relationship: String, in entity: EntityID, for sources: [ObjectID])
        throws(ObjectGraphError) -> [[ObjectID]]
    {
        try read { db in
            try core.toManyDestinationLists(of: relationship, in: entity, for: sources, on: connection(db))
        }
    }

    /// Runs one counted query and hands each row to `body` as the raw SQLite statement, whose
    /// columns are read by index (``DatabaseValue/init(sqliteStatement:index:)``): GRDB's `Row`
    /// copies every row and looks up type metadata per column, about a fifth of the time of
    /// listing a large entity or reading a store to migrate it.
    /// `cached` as for ``rows(_:_:_:cached:)``: only SQL that repeats (no literal keys in it).
    func eachRow(
        _ db: Database, _ sql: String, cached: Bool = false, arguments: StatementArguments? = nil,
        _ body: (SQLiteStatement) throws(ObjectGraphError) -> Void
    ) throws(ObjectGraphError) {
        requests.add(1, ordering: .relaxed)
        let statement: Statement
        do {
            statement = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
            if let arguments { try statement.setArguments(arguments) }
        } catch {
            throw Self.mapError(error, file: path)
        }
        let raw = statement.sqliteStatement
        defer { sqlite3_reset(raw) }
        while true {
            let code = sqlite3_step(raw)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw Self.mapError(Self.stepError(code, db, sql: sql), file: path) }
            try body(raw)
        }
    }

    /// ``key(in:)`` of column `index` of the current row: an INTEGER read straight from SQLite
    /// (nearly every key), anything else through a `DatabaseValue`.
    static func key(_ row: SQLiteStatement, _ index: CInt) -> Int64? {
        if sqlite3_column_type(row, index) == SQLITE_INTEGER { return sqlite3_column_int64(row, index) }
        return key(in: DatabaseValue(sqliteStatement: row, index: index))
    }

    /// `integer(_:)` of a `DatabaseValue` (0 for what is not an integer) of column `index` of the
    /// current row, an INTEGER read straight from SQLite as for keys.
    static func integer(_ row: SQLiteStatement, _ index: CInt) -> Int64 {
        if sqlite3_column_type(row, index) == SQLITE_INTEGER { return sqlite3_column_int64(row, index) }
        return integer(DatabaseValue(sqliteStatement: row, index: index))
    }

    /// A key column's value: an integer, or the same digits as text (a table rebuilt by another
    /// tool without column types).
    static func key(in value: DatabaseValue) -> Int64? {
        switch value.storage {
        case .int64(let key): key
        case .string(let text): Int64(text)
        default: nil
        }
    }

}
