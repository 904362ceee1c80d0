import Foundation
import SQLiteRecovery

/// Reads the `Files` table of an iOS 10+ backup's `Manifest.db` from the file's pages
/// (SQLiteRecovery), never through SQLite: the backup's folder is not written, locked or given a
/// `-shm`, and a damaged or hostile manifest costs a bounded walk of its pages (each visited once).
/// A `Manifest.db-wal` beside it is read as SQLite would, its last commit included.
///
/// The table is `Files (fileID TEXT PRIMARY KEY, domain TEXT, relativePath TEXT, flags INTEGER,
/// file BLOB)`; the column order is taken from its CREATE statement, so a manifest written with
/// the columns in another order reads the same.
enum ManifestDatabase {
    /// Rows read at most: a phone's backup has a few hundred thousand.
    static let maximumRows = 10_000_000

    /// The rows of `Files`, in the table's order, and how many rows could not be read as text
    /// and numbers where the table says (left out).
    static func records(database: any ByteSource, log: (any ByteSource)?, path: String) throws(DeviceError) -> (
        [BackupRecord], unreadable: Int
    ) {
        guard let files = DatabaseFiles(database: database, log: log) else {
            throw DeviceError(.unsupported, "\(path) is not an SQLite database (an encrypted or damaged manifest?)")
        }
        // A manifest cut short (a copy stopped halfway) loses its rows without a sign: its
        // table's pages are past the end. Refused, so that no backup mounts as empty.
        if files.header.pageCount > files.filePageCount {
            throw DeviceError(
                .unsupported,
                "\(path) is truncated: its header says \(files.header.pageCount) pages of \(files.pageSize) bytes, "
                    + "the file holds \(files.database.size) bytes; copy the backup again")
        }
        let state = files.state(files.lastVersion)
        guard let table = state.tables().first(where: { $0.name.caseInsensitiveCompare("Files") == .orderedSame })
        else {
            throw DeviceError(.unsupported, "\(path) has no Files table: not an iOS backup's manifest")
        }
        let columns = Self.columns(of: table.sql)
        guard let id = columns.firstIndex(of: "fileid"), let domain = columns.firstIndex(of: "domain"),
            let relative = columns.firstIndex(of: "relativepath"), let flags = columns.firstIndex(of: "flags")
        else {
            throw DeviceError(
                .unsupported,
                "\(path): its Files table lacks fileID, domain, relativePath or flags (\(table.sql.prefix(200)))")
        }
        let file = columns.firstIndex(of: "file")
        var records: [BackupRecord] = []
        var unreadable = 0
        var tooMany = false
        state.walkTable(root: table.root) { _, payload in
            guard !tooMany else { return }
            guard records.count < maximumRows else {
                tooMany = true
                return
            }
            guard let (types, headerLength) = RecordFormat.header(payload, at: 0, limit: payload.count),
                let values = RecordFormat.values(types, in: payload, at: headerLength, limit: payload.count),
                let fileID = text(values, id), let domainName = text(values, domain),
                let relativePath = text(values, relative) ?? (isNull(values, relative) ? "" : nil),
                let flag = integer(values, flags)
            else {
                unreadable += 1
                return
            }
            var facts = BackupFileFacts()
            if let file, file < values.count, case .blob(let bytes) = values[file] {
                facts = BackupFileFacts.decode(archive: Data(bytes), source: "\(path) row \(fileID)") ?? facts
            }
            records.append(
                BackupRecord(
                    domain: domainName, relativePath: relativePath, fileID: fileID,
                    kind: BackupRecord.Kind(rawValue: flag),
                    facts: facts))
        }
        guard !tooMany else {
            throw DeviceError(.tooLarge, "\(path) lists more than \(maximumRows) files, more than storefs reads")
        }
        return (records, unreadable)
    }

    /// Column names (lowercased) of a CREATE TABLE statement, in order; empty when it does not read.
    static func columns(of sql: String) -> [String] {
        guard let open = sql.firstIndex(of: "("), let close = sql.lastIndex(of: ")"), open < close else { return [] }
        var result: [String] = []
        var depth = 0
        var current = ""
        for character in sql[sql.index(after: open)..<close] {
            if character == "(" { depth += 1 }
            if character == ")" { depth -= 1 }
            if character == "," && depth == 0 {
                result.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        result.append(current)
        return result.compactMap { definition in
            let words = definition.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
            guard let first = words.first else { return nil }
            let name = first.trimmingCharacters(in: CharacterSet(charactersIn: "\"'`[]")).lowercased()
            // Table constraints (PRIMARY KEY (...), UNIQUE, ...) name no column.
            return ["primary", "unique", "check", "foreign", "constraint"].contains(name) ? nil : name
        }
    }

    private static func text(_ values: [RecordValue], _ index: Int) -> String? {
        guard index < values.count, case .text(let bytes) = values[index] else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func isNull(_ values: [RecordValue], _ index: Int) -> Bool {
        guard index < values.count else { return true }
        if case .null = values[index] { return true }
        return false
    }

    private static func integer(_ values: [RecordValue], _ index: Int) -> Int64? {
        guard index < values.count, case .integer(let value) = values[index] else { return nil }
        return value
    }
}
