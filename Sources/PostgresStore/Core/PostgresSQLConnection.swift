import CPostgres
import Foundation
import ObjectGraph
import RelationalCore

/// A libpq connection as ``RelationalRules`` runs statements on it: the core's `?` placeholders
/// numbered (`$1`, `$2`, ...), its values sent as text in their types' input forms. Every
/// statement is a request of the store.
///
/// `connection` nil: each statement runs on a connection of the store's read pool (a read), with
/// the pool's deadline and reconnection; otherwise on that connection (a save's transaction).
///
/// Threading: used by one thread at a time, as the connection is.
struct PostgresSQLConnection: SQLConnection {
    let store: PostgresStore
    let connection: PostgresConnection?
    /// Reads of the object graph, without a connection: on a standby where the URL names one.
    var preferringStandby = false

    @discardableResult
    func execute(_ statement: SQL) throws(ObjectGraphError) -> Int {
        try run(statement).changedCount
    }

    func query(_ statement: SQL, _ body: (any SQLRow) throws(ObjectGraphError) -> Void) throws(ObjectGraphError) {
        let result = try run(statement)
        for row in 0..<result.rowCount { try body(PostgresRow(result: result, row: row)) }
    }

    private func run(_ statement: SQL) throws(ObjectGraphError) -> PostgresResult {
        let (text, parameters) = Self.prepared(statement)
        if let connection { return try store.run(connection, text, parameters) }
        if preferringStandby { return try store.readPreferringStandby(text, parameters) }
        return try store.read(text, parameters)
    }

    /// The statement's text with numbered placeholders, and its values as text (nil: NULL).
    static func prepared(_ statement: SQL) -> (String, [String?]) {
        (numbered(statement.text), statement.arguments.map(text))
    }

    /// `?` → `$1`, `$2`, ... outside quoted names and literals.
    static func numbered(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "?")) else { return text }
        var result: [UInt8] = []
        result.reserveCapacity(text.utf8.count + 16)
        var number = 0
        var quote: UInt8?
        for byte in text.utf8 {
            if let open = quote {
                if byte == open { quote = nil }
                result.append(byte)
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
                result.append(byte)
            } else if byte == UInt8(ascii: "?") {
                number += 1
                result.append(UInt8(ascii: "$"))
                result.append(contentsOf: String(number).utf8)
            } else {
                result.append(byte)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// A value in the input form of its column's type: integers and reals in decimal (reals in
    /// their shortest exact form, `Infinity`, `NaN`), bytes as bytea's hex form.
    static func text(_ value: SQLValue) -> String? {
        switch value {
        case .null: nil
        case .integer(let v): String(v)
        case .real(let v): PostgresValueCoding.text(of: v)
        case .text(let v): v
        case .blob(let v): PostgresValueCoding.hex(v)
        }
    }
}

/// One row of a PostgreSQL result (text format), read by column.
///
/// Threading: valid while its result is.
struct PostgresRow: SQLRow {
    let result: PostgresResult
    let row: Int

    func isNull(_ column: Int) -> Bool { result.isNull(row, column) }

    func integer(_ column: Int) -> Int64? { result.integer(row, column) }

    func bytes(_ column: Int) -> Data? {
        guard let raw = result.bytes(row, column) else { return nil }
        if result.isBytea(column) { return PostgresValueCoding.unhex(raw) }
        return Data(raw)
    }

    func value(_ column: Int) -> SQLValue {
        guard let text = result.text(row, column) else { return .null }
        switch result.typeOID(column) {
        case 20, 21, 23: return Int64(text).map(SQLValue.integer) ?? .text(text)
        case 700, 701: return PostgresValueCoding.double(text).map(SQLValue.real) ?? .text(text)
        case 17: return bytes(column).map(SQLValue.blob) ?? .text(text)
        default: return .text(text)
        }
    }

    func attributeValue(_ column: Int, as type: AttributeType, external: Bool, place: ValuePlace)
        throws(ObjectGraphError) -> AttributeValue?
    {
        guard let raw = result.bytes(row, column) else { return nil }
        return try PostgresValueCoding.decode(raw, as: type, place: place.description)
    }
}
