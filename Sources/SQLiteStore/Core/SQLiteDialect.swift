import CoreDataSchema
import Foundation
import ObjectGraph
import RelationalCore

/// SQLite's spelling of what ``RelationalRules`` writes once: one prepared statement per row
/// (no round trip to save), key lists bound as one JSON array (`json_each`), keys that must be
/// INTEGER (another tool may have stored text), strings read as BLOBs (an embedded NUL would cut
/// a TEXT read), `INSERT OR IGNORE` for join rows (a table rebuilt without a primary key takes
/// it too), and Core Data's storage: booleans as integers, decimals as REAL, UUIDs as 16 bytes.
///
/// Threading: a value; share it freely.
struct SQLiteDialect: SQLDialect {
    var engineName: String { "SQLite" }

    var rowsPerStatement: Int { 1 }

    var joinRowsPerStatement: Int { 1 }

    func isObjectKey(_ key: String) -> SQL { SQL(text: "typeof(\(key)) = 'integer' AND \(key) > 0") }

    func column(_ column: String, isAnyOf keys: [Int64]) -> SQL {
        "\(SQL(text: column)) IN (SELECT value FROM json_each(\(SQLValue.text(Self.jsonArray(keys)))))"
    }

    /// `[1,2,3]`.
    static func jsonArray(_ keys: [Int64]) -> String {
        var text = "["
        text.reserveCapacity(keys.count * 8 + 2)
        for (i, key) in keys.enumerated() {
            if i > 0 { text += "," }
            text += String(key)
        }
        return text + "]"
    }

    func counter(_ column: String, isBelow value: Int64) -> SQL {
        // A counter that is not an integer (NULL, or text another tool left) is below every key.
        "(typeof(\(SQL(text: column))) != 'integer' OR \(SQL(text: column)) < \(value))"
    }

    func selected(_ column: String, as type: AttributeType) -> String {
        type == .string || type == .uri ? "CAST(\(column) AS BLOB)" : column
    }

    var lockingSelectedRows: String { "" }

    func joinRows(into table: String, keys: [String], orders: [String], rows: ArraySlice<[SQLValue]>) -> [SQL] {
        let names = (keys + orders).map(SQL.identifier).joined(separator: ", ")
        let marks = Array(repeating: "?", count: keys.count + orders.count).joined(separator: ", ")
        // One text for every row: quoting names per row was a seventh of a sample's time.
        let insert = "INSERT OR IGNORE INTO \(SQL.identifier(table)) (\(names)) VALUES (\(marks))"
        var statements: [SQL] = []
        statements.reserveCapacity(rows.count)
        for row in rows {
            statements.append(SQL(text: insert, arguments: row))
            // A pair that was there already keeps its row; only its place in the order moves.
            for (i, order) in orders.enumerated() where row[keys.count + i] != .null {
                let match = SQL.joined(
                    zip(keys, row).map { "\(identifier: $0.0) = \($0.1)" as SQL }, separator: " AND ")
                statements.append(
                    "UPDATE \(identifier: table) SET \(identifier: order) = \(row[keys.count + i]) WHERE \(match)")
            }
        }
        return statements
    }

    func encode(_ value: AttributeValue, as attribute: AttributeDescription, entity: String) throws(ObjectGraphError)
        -> SQLValue
    {
        try AttributeValueRules.check(value, for: attribute, entity: entity, allowsNaN: false)
        if let common = AttributeValueRules.common(value) { return common }
        switch value {
        case .decimal(let v):
            // Correctly rounded, as Double(String) reads the decimal's text.
            return .real(DecimalConversion.double(v) ?? NSDecimalNumber(decimal: v).doubleValue)
        case .uuid(let v):
            return .blob(withUnsafeBytes(of: v.uuid) { Data($0) })
        default:
            throw ObjectGraphError(.validation, "\(entity).\(attribute.name): \(value) has no SQLite form")
        }
    }

    func columnType(of type: AttributeType) -> String { StoreLayout.sqlType(of: type) }

    // MARK: Predicates

    /// The evaluator's own comparison runs inside SQLite (PredicateFunctions.swift).
    var evaluatesWithFunctions: Bool { true }

    func placeholder(_ name: String, for value: SQLValue, comparedWith type: AttributeType?) -> String { name }

    func bytewise(column: String) -> String { "CAST(\(column) AS BLOB)" }

    func bytewise(_ text: String) -> SQLValue? { .blob(Data(text.utf8)) }

    /// Text's BINARY collation, SQLite's default, compares the bytes: UTF-8's order is code points'.
    func codePointOrdered(_ column: String) -> String { column }

    /// SQLite stores NaN as NULL.
    var storesNaN: Bool { false }

    func real(_ expression: String) -> String { "CAST(\(expression) AS REAL)" }

    func comparable(_ column: String, type: AttributeType) -> String { column }

    func uuid(_ value: UUID) -> SQLValue { .blob(withUnsafeBytes(of: value.uuid) { Data($0) }) }

    func unindexed(_ column: String) -> String { "+" + column }
}
