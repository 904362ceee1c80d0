import Foundation
import ObjectGraph
import RelationalCore

/// Rows appended with `COPY ... FROM STDIN` (PostgresConnection+Copy.swift), in COPY's text
/// format: one line per row, values separated by tabs, `\N` for NULL.
///
/// Each value is the very text a bound parameter would carry (``PostgresSQLConnection/text(_:)``:
/// the input form of its column's type, read by the same input function), with COPY's escapes on
/// top: a backslash, tab, newline and carriage return inside a value are written `\\`, `\t`, `\n`,
/// `\r`; every other byte goes as it is. So a value copied is stored exactly as the INSERT of it
/// stores it (PostgresBulkSaveTests compares both, value by value).
extension PostgresSQLConnection {
    func appendRows(_ rows: ArraySlice<[SQLValue]>, into table: String, columns: [String]) throws(ObjectGraphError)
        -> Bool
    {
        // Reads (no connection) never write; a save always has its transaction's connection.
        guard let connection else { return false }
        guard !rows.isEmpty else { return true }
        let names = columns.map(SQL.identifier).joined(separator: ", ")
        let sql = "COPY \(SQL.identifier(table)) (\(names)) FROM STDIN"
        var next = rows.startIndex
        // One COPY per ``rowsPerCopy`` rows or ``bytesPerCopy`` bytes: the server bounds each
        // statement by its statement_timeout, and a COPY runs from its start to its last row.
        while next < rows.endIndex {
            let first = next
            var sent = 0
            store.requests.add(1, ordering: .relaxed)
            let copied = try connection.copyIn(sql) { (buffer) throws(ObjectGraphError) -> Bool in
                while next < rows.endIndex && buffer.count < PostgresConnection.copyChunkBytes
                    && next - first < Self.rowsPerCopy && sent + buffer.count < Self.bytesPerCopy
                {
                    let row = rows[next]
                    guard row.count == columns.count else {
                        throw ObjectGraphError(
                            .io, "a row of \(row.count) values cannot go into \(columns.count) columns of \(table)")
                    }
                    Self.appendLine(of: row, to: &buffer)
                    next += 1
                }
                sent += buffer.count
                return next < rows.endIndex && next - first < Self.rowsPerCopy && sent < Self.bytesPerCopy
            }
            guard copied == next - first else {
                throw ObjectGraphError(
                    .io, "\(connection.place): PostgreSQL copied \(copied) of \(next - first) rows into \(table)")
            }
        }
        return true
    }

    /// Rows and bytes one COPY carries at most: a few seconds of the server's work on a loaded
    /// machine, far inside its statement timeout (PostgresConnection.swift), and few enough
    /// statements that each costs nothing next to its rows.
    static let rowsPerCopy = 20_000
    static let bytesPerCopy = 32 << 20

    /// One row as a line of COPY's text format.
    static func appendLine(of row: [SQLValue], to buffer: inout [UInt8]) {
        for (i, value) in row.enumerated() {
            if i > 0 { buffer.append(UInt8(ascii: "\t")) }
            appendField(value, to: &buffer)
        }
        buffer.append(UInt8(ascii: "\n"))
    }

    /// One value as a field of COPY's text format.
    static func appendField(_ value: SQLValue, to buffer: inout [UInt8]) {
        switch value {
        case .null:
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "N"))
        case .integer(let v):
            buffer.append(contentsOf: String(v).utf8)
        case .real(let v):
            buffer.append(contentsOf: PostgresValueCoding.text(of: v).utf8)
        case .text(let v):
            appendEscaped(v, to: &buffer)
        case .blob(let v):
            // bytea's hex form `\x0a1b` (PostgresValueCoding.hex), its backslash escaped.
            let digits: StaticString = "0123456789abcdef"
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "x"))
            digits.withUTF8Buffer { hex in
                for byte in v {
                    buffer.append(hex[Int(byte >> 4)])
                    buffer.append(hex[Int(byte & 15)])
                }
            }
        }
    }

    /// Text with COPY's escapes: `\\`, `\t`, `\n`, `\r`; other bytes (valid UTF-8, no NUL: the
    /// dialect refuses NUL before) as they are.
    static func appendEscaped(_ text: String, to buffer: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            var plain = true
            for byte in bytes where byte == 0x5C || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                plain = false
                break
            }
            if plain {
                buffer.append(contentsOf: bytes)
                return
            }
            for byte in bytes {
                switch byte {
                case 0x5C: buffer.append(0x5C); buffer.append(0x5C)
                case 0x09: buffer.append(0x5C); buffer.append(UInt8(ascii: "t"))
                case 0x0A: buffer.append(0x5C); buffer.append(UInt8(ascii: "n"))
                case 0x0D: buffer.append(0x5C); buffer.append(UInt8(ascii: "r"))
                default: buffer.append(byte)
                }
            }
        }
    }
}
