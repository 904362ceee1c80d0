import CoreDataSchema
import Foundation
import ObjectGraph
import RelationalCore

/// PostgreSQL's spelling of what ``RelationalRules`` writes once: many rows per statement (each
/// statement is a round trip), key lists bound as one `bigint[]`, rows locked while a save checks
/// them (other machines write at once), `ON CONFLICT` for join rows, and its own types: booleans,
/// `numeric` decimals, `uuid`, NaN and infinities of doubles kept.
///
/// Threading: a value; share it freely.
struct PostgresDialect: SQLDialect {
    var engineName: String { "PostgreSQL" }

    /// Rows per multi-row statement: large enough that a migration is not one round trip per
    /// row, small enough that one statement stays a few megabytes.
    var rowsPerStatement: Int { 500 }

    func isObjectKey(_ key: String) -> SQL { SQL(text: "\(key) > 0") }

    func column(_ column: String, isAnyOf keys: [Int64]) -> SQL {
        "\(SQL(text: column)) = ANY(CAST(\(SQLValue.text(Self.array(keys))) AS bigint[]))"
    }

    /// A `bigint[]` in its text form: `{1,2,3}`.
    static func array(_ keys: some Sequence<Int64>) -> String {
        "{" + keys.map(String.init).joined(separator: ",") + "}"
    }

    func counter(_ column: String, isBelow value: Int64) -> SQL {
        "COALESCE(\(SQL(text: column)), 0) < \(value)"
    }

    func selected(_ column: String, as type: AttributeType) -> String { column }

    var lockingSelectedRows: String { " FOR UPDATE" }

    /// Join rows go as one array per column (``joinRows(into:keys:orders:rows:)``): a statement
    /// of three bound values whatever the number of rows, so a migration's hundred thousand pairs
    /// are a few statements, not hundreds of multi-row INSERTs to build, send and parse.
    var joinRowsPerStatement: Int { 50_000 }

    func joinRows(into table: String, keys: [String], orders: [String], rows: ArraySlice<[SQLValue]>) -> [SQL] {
        guard !rows.isEmpty else { return [] }
        let t = SQL.identifier(table)
        let columns = keys + orders
        let names = columns.map(SQL.identifier).joined(separator: ", ")
        let onConflict =
            orders.isEmpty
            ? "DO NOTHING"
            : "DO UPDATE SET "
                + orders.map {
                    "\(SQL.identifier($0)) = COALESCE(EXCLUDED.\(SQL.identifier($0)), \(t).\(SQL.identifier($0)))"
                }
                .joined(separator: ", ")
        // Each column's values as one bigint[] (`{1,2,NULL}`), unnested side by side into rows.
        let arrays = columns.indices.map { column in
            SQLValue.text(Self.array(values: rows.lazy.map { $0.indices.contains(column) ? $0[column] : .null }))
        }
        let text =
            "INSERT INTO \(t) (\(names)) SELECT * FROM unnest("
            + Array(repeating: "CAST(? AS bigint[])", count: columns.count).joined(separator: ", ") + ") "
            + "ON CONFLICT (\(keys.map(SQL.identifier).joined(separator: ", "))) \(onConflict)"
        return [SQL(text: text, arguments: arrays)]
    }

    /// Keys and order numbers as a `bigint[]`'s text: `{1,2,NULL}` (a value that is not an
    /// integer is NULL: join tables hold integers only).
    static func array(values: some Sequence<SQLValue>) -> String {
        var text = "{"
        var first = true
        for value in values {
            if !first { text += "," }
            first = false
            if case .integer(let v) = value { text += String(v) } else { text += "NULL" }
        }
        return text + "}"
    }

    func encode(_ value: AttributeValue, as attribute: AttributeDescription, entity: String) throws(ObjectGraphError)
        -> SQLValue
    {
        try AttributeValueRules.check(value, for: attribute, entity: entity, allowsNaN: true)
        switch value {
        case .string(let v) where v.utf8.contains(0):
            throw ObjectGraphError(
                .validation, "\(entity).\(attribute.name): PostgreSQL's text cannot hold a NUL character")
        case .decimal(let v):
            return .text(DecimalConversion.text(v))
        case .uuid(let v):
            return .text(v.uuidString)
        default:
            guard let common = AttributeValueRules.common(value) else {
                throw ObjectGraphError(.validation, "\(entity).\(attribute.name): \(value) has no PostgreSQL form")
            }
            return common
        }
    }

    func columnType(of type: AttributeType) -> String { PostgresValueCoding.columnType(of: type) }

    // MARK: Predicates

    /// No Swift runs inside the server: what plain SQL cannot decide exactly widens the answer.
    var evaluatesWithFunctions: Bool { false }

    func placeholder(_ name: String, for value: SQLValue, comparedWith type: AttributeType?) -> String {
        if type == .uuid { return "CAST(\(name) AS uuid)" }
        if type == .decimal, case .real = value { return "CAST(\(name) AS numeric)" }
        switch value {
        case .null: return name
        case .integer: return "CAST(\(name) AS bigint)"
        case .real: return "CAST(\(name) AS double precision)"
        case .text: return "CAST(\(name) AS text)"
        case .blob: return "CAST(\(name) AS bytea)"
        }
    }

    /// The "C" collation orders text by its bytes: UTF-8's byte order is code point order.
    func bytewise(column: String) -> String { "\(column) COLLATE \"C\"" }

    /// A NUL cannot be sent in a text parameter (and no stored text holds one).
    func bytewise(_ text: String) -> SQLValue? { text.utf8.contains(0) ? nil : .text(text) }

    func codePointOrdered(_ column: String) -> String { bytewise(column: column) }

    /// double precision, real and numeric all hold NaN, and PostgresDialect keeps it.
    var storesNaN: Bool { true }

    func real(_ expression: String) -> String { "CAST(\(expression) AS double precision)" }

    func comparable(_ column: String, type: AttributeType) -> String {
        type == .boolean ? "CAST(\(column) AS integer)" : column
    }

    func uuid(_ value: UUID) -> SQLValue { .text(value.uuidString) }

    func unindexed(_ column: String) -> String { column }
}
