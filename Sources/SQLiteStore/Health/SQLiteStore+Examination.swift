import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

#if canImport(Glibc)
    import Glibc
#endif

// `storefs doctor` on an SQLite store: what only SQLite has (dbstat, the -wal's frames, PRAGMA
// integrity_check, the external data folder) is here; the statements both engines share, and the
// findings built from their answers, are ReferenceStatements.swift's (CoreDataSchema), run here
// on this store's connections. Each statement reads one table or relationship, whatever its size.
extension SQLiteStore: ExaminableStore {
    public func examine(examples: Int) throws(ObjectGraphError) -> StoreExamination {
        let checks = ReferenceChecks(layout: layout, model: model)
        var examination = try read { db in
            let schema = try FileSchema.read(db, file: path)
            var examination = StoreExamination()
            let (space, tableBytes) = try space(db)
            examination.space = space
            examination.entityBytes = try entityBytes(db, tableBytes: tableBytes)
            examination.history = try historySummary(db, schema: schema, tableBytes: tableBytes)
            try checks.findOrphans(in: &examination.orphans, model: model, examples: examples) {
                try integerRows(db, $0)
            }
            examination.keyCounters = try keyCounters(db, checks)
            examination.integrity = try integrity(db)
            return examination
        }
        examination.orphans.externalData = try unreferencedExternalData()
        return examination
    }

    public func danglingToOnes(limit: Int) throws(ObjectGraphError) -> [DanglingReference] {
        let checks = ReferenceChecks(layout: layout, model: model)
        return try read { db in try checks.danglingToOnes(layout: layout, limit: limit) { try integerRows(db, $0) } }
    }

    public func danglingToManyMembers(limit: Int) throws(ObjectGraphError) -> [DanglingReference] {
        let checks = ReferenceChecks(layout: layout, model: model)
        return try read { db in
            try checks.danglingToManyMembers(layout: layout, limit: limit) { try integerRows(db, $0) }
        }
    }

    // MARK: - Space

    /// The file's bytes, pages and free pages (of what the connections read: a read-only store's
    /// private copy, whose WAL is folded in), the -wal's frames (of the store's own -wal), and the
    /// bytes of each table with its indexes from `dbstat` (by upper-cased table name).
    private func space(_ db: Database) throws -> (StoreSpace, [String: Int64]) {
        var space = StoreSpace()
        space.bytes = Self.fileSize(path)
        func pragma(_ name: String) throws -> Int { Int(try integer(db, "PRAGMA \(name)")) }
        space.pageSize = try pragma("page_size")
        space.pages = try pragma("page_count")
        space.freelistPages = try pragma("freelist_count")
        let wal = path + "-wal"
        space.walBytes = Self.fileSize(wal)
        space.walFrames = Self.walFrames(wal)
        var tables: [String: Int64] = [:]
        do {
            var owner: [String: String] = [:]
            for row in try rows(db, "SELECT name, tbl_name FROM main.sqlite_master", cached: false) {
                let values = row.storedValues
                if let name = values[0].storedText, let table = values[1].storedText { owner[name] = table }
            }
            for row in try rows(
                db, "SELECT name, SUM(pgsize) FROM dbstat('main') GROUP BY name", cached: false)
            {
                let values = row.storedValues
                guard let name = values[0].storedText, let bytes = values[1].storedInteger else { continue }
                tables[(owner[name] ?? name).uppercased(), default: 0] += bytes
            }
            space.measuredWith = "dbstat"
        } catch {
            // An SQLite built without the dbstat table: the file's pages alone.
            space.measuredWith = "page_count"
        }
        for (name, bytes) in tables {
            let table =
                (try? rows(db, "SELECT name FROM main.sqlite_master WHERE upper(name) = ?", [name], cached: false))?
                .first?.storedValues.first?.storedText ?? name
            space.tables[table] = bytes
        }
        return (space, tables)
    }

    /// Each entity's share of its table's bytes, by its rows (an entity tree shares one table).
    private func entityBytes(_ db: Database, tableBytes: [String: Int64]) throws -> [String: Int64] {
        var bytes: [String: Int64] = [:]
        for root in model.rootEntities {
            guard let table = layout[root.id].table, let total = tableBytes[table.uppercased()] else { continue }
            var counts: [EntityID: Int64] = [:]
            for row in try rows(db, "SELECT Z_ENT, COUNT(*) FROM \(q(table)) GROUP BY Z_ENT", cached: false) {
                let values = row.storedValues
                guard let zent = values[0].storedInteger, let entity = layout.entityByZent[zent],
                    let count = values[1].storedInteger
                else { continue }
                counts[entity] = count
            }
            let rows = counts.values.reduce(0, +)
            for (entity, count) in counts where rows > 0 {
                bytes[model[entity].name] = total * count / rows
            }
        }
        return bytes
    }

    static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// The frames a -wal file holds: its length after the 32-byte header, in frames of a 24-byte
    /// header and one page (the page size from its own header). 0 when there is no such file.
    static func walFrames(_ path: String) -> Int {
        guard let handle = FileHandle(forReadingAtPath: path) else { return 0 }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 32), header.count == 32,
            let size = try? handle.seekToEnd()
        else { return 0 }
        let pageSize = header[8..<12].reduce(0) { $0 << 8 | Int($1) }
        guard pageSize >= 512, pageSize <= 65536, size > 32 else { return 0 }
        return Int(size - 32) / (24 + pageSize)
    }

    // MARK: - History

    private func historySummary(_ db: Database, schema: FileSchema, tableBytes: [String: Int64]) throws
        -> HistorySummary?
    {
        guard ReferenceChecks.historyTables.allSatisfy({ schema.table(named: $0) != nil }) else { return nil }
        var summary = HistorySummary()
        if let row = try rows(db, ReferenceChecks.historyRange, cached: false).first {
            let values = row.storedValues
            summary.transactions = Int(values[0].storedInteger ?? 0)
            summary.firstTransaction = values[1].storedInteger
            summary.lastTransaction = values[2].storedInteger
            if !values[3].isNull { summary.oldest = Date(timeIntervalSinceReferenceDate: Self.seconds(values[3])) }
            if !values[4].isNull { summary.newest = Date(timeIntervalSinceReferenceDate: Self.seconds(values[4])) }
        }
        func count(_ sql: String) throws -> Int { Int(try integer(db, sql)) }
        summary.changes = try count(ReferenceChecks.historyChanges)
        summary.strings = try count(ReferenceChecks.historyStrings)
        summary.changesWithoutTransaction = try count(ReferenceChecks.changesWithoutTransaction)
        if !tableBytes.isEmpty {
            summary.bytes = ReferenceChecks.historyTables.reduce(0) { $0 + (tableBytes[$1] ?? 0) }
        }
        return summary
    }

    // MARK: - Key counters

    private func keyCounters(_ db: Database, _ checks: ReferenceChecks) throws -> [KeyCounterFinding] {
        var found: [KeyCounterFinding] = []
        for table in checks.entityTables {
            guard let zent = layout[table.root].zent else { continue }
            let counter = try integer(db, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [zent])
            let highest = try integer(db, "SELECT MAX(Z_PK) FROM \(q(table.table))")
            if highest > counter {
                found.append(KeyCounterFinding(entity: model[table.root].name, counter: counter, highestKey: highest))
            }
        }
        return found
    }

    public func examineKeyCounters() throws(ObjectGraphError) -> [KeyCounterFinding] {
        let checks = ReferenceChecks(layout: layout, model: model)
        return try read { db in try keyCounters(db, checks) }
    }

    /// `PRAGMA integrity_check`: `ok`, or up to 100 problems.
    private func integrity(_ db: Database) throws -> IntegrityCheck {
        let messages = try rows(db, "PRAGMA integrity_check(100)", cached: false).compactMap {
            $0.storedValues.first?.storedText
        }
        return IntegrityCheck(checked: true, messages: messages, method: "PRAGMA integrity_check")
    }

    // MARK: - External data

    /// The files of `.NAME_SUPPORT/_EXTERNAL_DATA` that no column of any table names (not only the
    /// attributes the model says allow external storage: a file some column names is never
    /// called unreferenced), and references whose file is missing. The folder is listed before
    /// the rows are read, so a file a writer adds meanwhile is not in the list.
    public func unreferencedExternalData() throws(ObjectGraphError) -> ExternalDataFindings? {
        let folder = mechanisms.externalData.folder
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return nil }
        var files: [String: Int64] = [:]
        for name in names {
            var info = stat()
            guard lstat(folder.appendingPathComponent(name).path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG
            else { continue }
            files[name] = Int64(info.st_size)
        }
        var findings = ExternalDataFindings(folder: folder)
        findings.files = files.count
        let referenced: Set<String> = try read { db in
            let schema = try FileSchema.read(db, file: path)
            var referenced = Set<String>()
            for (_, table) in schema.tables.sorted(by: { $0.key < $1.key }) {
                let columns = table.columns.filter { $0.type.isEmpty || $0.type.contains("BLOB") }
                guard !columns.isEmpty else { continue }
                let conditions = columns.map {
                    "(typeof(\(q($0.name))) = 'blob' AND substr(\(q($0.name)), 1, 1) = x'02' AND length(\(q($0.name))) BETWEEN 37 AND 38)"
                }
                let sql =
                    "SELECT \(columns.map { q($0.name) }.joined(separator: ", ")) FROM main.\(q(table.name)) WHERE "
                    + conditions.joined(separator: " OR ")
                for row in try rows(db, sql, cached: false) {
                    for value in row.storedValues {
                        if let bytes = value.storedBytes, let name = ExternalDataFolder.fileName(inReference: bytes) {
                            referenced.insert(name)
                        }
                    }
                }
            }
            return referenced
        }
        findings.missing = referenced.filter { files[$0] == nil }.count
        findings.unreferenced = files.keys.filter { !referenced.contains($0) }.sorted().map {
            ExternalDataFindings.ExternalFile(name: $0, bytes: files[$0] ?? 0)
        }
        return findings
    }

    // MARK: - SQL text

    /// The integer the first row's first column holds (0 for no row, or anything but an integer).
    func integer(_ db: Database, _ sql: String, _ arguments: StatementArguments = []) throws -> Int64 {
        guard let row = try rows(db, sql, arguments, cached: false).first else { return 0 }
        return Self.integer(row, 0)
    }

    /// Every row, each column as an integer (nil for NULL, text, a blob or a real that is not whole).
    func integerRows(_ db: Database, _ sql: String) throws -> ReferenceChecks.IntegerRows {
        try rows(db, sql, cached: false).map { row in
            row.storedValues.map {
                switch $0.storage {
                case .int64(let value): value
                case .double(let value): Int64(exactly: value)
                default: nil
                }
            }
        }
    }

    /// The first column of every row, as keys.
    func keys(_ db: Database, _ sql: String, _ arguments: StatementArguments = []) throws -> [Int64] {
        try rows(db, sql, arguments, cached: false).map { Self.integer($0, 0) }
    }

    /// A quoted identifier.
    func q(_ name: String) -> String { name.quotedDatabaseIdentifier }
}
