import Foundation
import GRDB
import GRDBSQLite
import ObjectGraph
import Testing

@testable import SQLiteStore

/// Reading a column straight from SQLite (what reading pages of rows does) answers as decoding it
/// through a `DatabaseValue` does, for values of every storage class and attribute type, hostile
/// ones included; what it leaves alone, decoding reads or refuses.
@Suite struct ColumnValueReadingTests {
    static var stored: [(String, (any DatabaseValueConvertible)?)] {
        [
            ("NULL", nil), ("0", 0), ("1", 1), ("-1", -1), ("Int16 max", 32767), ("past Int16", 32768),
            ("past Int32", 2_147_483_648), ("Int64 max", Int64.max), ("Int64 min", Int64.min), ("0.5", 0.5),
            ("-2.25", -2.25), ("1e300", 1e300), ("whole real", 3.0), ("text", "hello"), ("empty text", ""),
            ("digits", "42"), ("BOM text", "\u{FEFF}marked"), ("NUL inside", "a\u{0}b"), ("emoji", "📦 store"),
            ("UUID bytes", Data(repeating: 0xAB, count: 16)), ("15 bytes", Data(repeating: 1, count: 15)),
            ("empty blob", Data()), ("not UTF-8", Data([0xC0, 0x80, 0xFF])),
            ("BOM blob", Data([0xEF, 0xBB, 0xBF, 0x41])),
            ("UTF-8 blob", Data("plain".utf8))
        ]
    }

    @Test func straightFromSQLiteAsThroughADatabaseValue() throws {
        let db = try DatabaseQueue()
        try db.write { db in
            // No column type: every value keeps its own storage class.
            try db.execute(sql: "CREATE TABLE t (name, v)")
            for (name, value) in Self.stored {
                try db.execute(sql: "INSERT INTO t VALUES (?, ?)", arguments: [name, value])
            }
        }
        var compared = 0
        try db.read { db in
            // Strings are read as their BLOB, as a page's row plan selects them.
            for cast in [false, true] {
                let statement = try db.makeStatement(
                    sql: cast ? "SELECT name, CAST(v AS BLOB) FROM t" : "SELECT name, v FROM t")
                let raw = statement.sqliteStatement
                defer { sqlite3_reset(raw) }
                while sqlite3_step(raw) == SQLITE_ROW {
                    let name = String(cString: sqlite3_column_text(raw, 0))
                    for type in AttributeType.allCases {
                        let place = ValueCoding.Place(entity: "T", attribute: "v", key: 1)
                        let decoded: AttributeValue??
                        do throws(ObjectGraphError) {
                            decoded = .some(
                                try ValueCoding.decode(
                                    DatabaseValue(sqliteStatement: raw, index: 1), as: type, at: place))
                        } catch {
                            decoded = nil
                        }
                        guard let direct = ValueCoding.directValue(of: raw, at: 1, as: type) else { continue }
                        compared += 1
                        #expect(decoded != nil, "\(name) as \(type): read directly, but decoding refuses it")
                        if let decoded { #expect(direct == decoded, "\(name) as \(type)\(cast ? " (cast)" : "")") }
                    }
                }
            }
        }
        #expect(compared > 40, "the direct reading answered for the common cases")
    }
}
