import Foundation
import ObjectGraph

/// What one SQL engine spells its own way, and nothing more: the relational algorithms
/// (``RelationalRules``) are written once over it. Each engine's store module has one.
///
/// Threading: a value; share it freely.
package protocol SQLDialect: Sendable {
    /// The engine's name, for messages.
    var engineName: String { get }

    /// Rows one INSERT (or one list of rows) carries: SQLite runs one prepared statement per row
    /// (no round trip to save), PostgreSQL as many rows as keep a statement a few megabytes (one
    /// round trip each).
    var rowsPerStatement: Int { get }

    /// The condition that the row's key column `key` (qualified as needed) names an object: a
    /// positive integer.
    func isObjectKey(_ key: String) -> SQL

    /// The condition that integer column `column` holds one of `keys`, with the keys bound as one
    /// value (a list of any length in one statement).
    func column(_ column: String, isAnyOf keys: [Int64]) -> SQL

    /// The condition that a key counter (`Z_MAX`, which another tool may have left NULL or not
    /// an integer) is below the bound `value`.
    func counter(_ column: String, isBelow value: Int64) -> SQL

    /// How column `column` (qualified) is selected to read an attribute of `type` back exactly.
    func selected(_ column: String, as type: AttributeType) -> String

    /// What follows the SELECT of the rows a save is about to check and update: a row lock on an
    /// engine where other writers run at once, nothing where the transaction holds the file.
    var lockingSelectedRows: String { get }

    /// Rows of a join table one ``joinRows(into:keys:orders:rows:)`` call takes (SQLite: one,
    /// PostgreSQL: a whole save's, bound as arrays).
    var joinRowsPerStatement: Int { get }

    /// The statements that put `rows` (each: the key columns' values, then the order columns')
    /// into join table `table`: a pair that is there already stays, with its order columns set
    /// where the row gives one.
    func joinRows(into table: String, keys: [String], orders: [String], rows: ArraySlice<[SQLValue]>) -> [SQL]

    /// The value `value` of `attribute` is stored as (checked first with
    /// ``AttributeValueRules/check(_:for:entity:allowsNaN:)``).
    func encode(_ value: AttributeValue, as attribute: AttributeDescription, entity: String) throws(ObjectGraphError)
        -> SQLValue

    /// The column type of `type` in a store this engine makes.
    func columnType(of type: AttributeType) -> String

    // MARK: Predicates (PredicateTranslator)

    /// Whether the engine runs the evaluator's own comparison inside SQL (functions registered
    /// under ``PredicateFunctionNames``): without it, comparisons plain SQL cannot decide exactly
    /// widen a query's answer, and the caller decides those rows.
    var evaluatesWithFunctions: Bool { get }

    /// The placeholder of bound value `name` in a predicate's SQL, typed where the engine would
    /// infer no type; `type`: the attribute it is compared with.
    func placeholder(_ name: String, for value: SQLValue, comparedWith type: AttributeType?) -> String

    /// String column (or expression) `column`, compared in the order of its code points (UTF-8's
    /// byte order), as the evaluator compares strings.
    func bytewise(column: String) -> String

    /// `text` as the value a ``bytewise(column:)`` comparison takes; nil when the engine cannot
    /// compare with it exactly.
    func bytewise(_ text: String) -> SQLValue?

    /// Text column `column` as `MIN` and `MAX` order it: by code points, as the evaluator does.
    func codePointOrdered(_ column: String) -> String

    /// Whether double and decimal columns may hold NaN (which SQL orders above every number).
    var storesNaN: Bool { get }

    /// `expression` (an integer) as a double.
    func real(_ expression: String) -> String

    /// Attribute column `column` of `type` as predicates compare it (booleans as integers).
    func comparable(_ column: String, type: AttributeType) -> String

    /// A UUID as the engine stores it.
    func uuid(_ value: UUID) -> SQLValue

    /// `column` tested without its index (SQLite's unary `+`), where walking the key order is
    /// better than the index.
    func unindexed(_ column: String) -> String
}

extension SQLDialect {
    /// `column = value` for each of `pairs`, joined by AND.
    package func matching(_ pairs: [(String, SQLValue)]) -> SQL {
        SQL.joined(pairs.map { "\(identifier: $0.0) = \($0.1)" as SQL }, separator: " AND ")
    }
}
