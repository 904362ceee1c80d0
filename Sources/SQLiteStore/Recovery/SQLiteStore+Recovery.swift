import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph
import SQLiteRecovery

/// What a read-only SQLite store's files remember (``RecoveringStore``): SQLiteRecovery reads the
/// files as they were copied (``PrivateCopy/readFiles``) for the rows of the entities' tables that
/// are not live, and this decodes them with the store's model as live rows are decoded (the
/// entity from Z_ENT, or from the table and the columns set when Z_ENT is gone; attributes through
/// ``ValueCoding``; to-ones from their key columns).
extension SQLiteStore: RecoveringStore {
    public func recoveredRecords(cancelled: @escaping @Sendable () -> Bool) throws(ObjectGraphError)
        -> RecoveredRecords
    {
        let (files, copy) = try recoveryFiles()
        if let kept = recovery.withLock({ $0.records }), kept.copy === copy { return kept.records }
        // Read outside the lock: the store's versions are answered meanwhile. Two first readers
        // may both read; the records are the same.
        let records = try recover(files, cancelled: cancelled)
        // A cancelled read is not kept: the next asks again.
        if !records.cancelled { recovery.withLock { $0.records = (copy, records) } }
        return records
    }

    public func storeVersions() throws(ObjectGraphError) -> [StoreVersion] {
        let (files, _) = try recoveryFiles()
        var versions = [StoreVersion(number: 0, frames: nil, pageCount: Int(files.databasePageCount))]
        for commit in files.wal?.commits ?? [] {
            versions.append(
                StoreVersion(
                    number: commit.number, frames: commit.firstFrame...commit.lastFrame,
                    pageCount: Int(commit.pageCount)))
        }
        return versions
    }

    public func openVersion(_ number: Int) throws(ObjectGraphError) -> any PersistentStore {
        let (files, copy) = try recoveryFiles()
        guard number >= 0, number <= files.lastVersion else {
            throw ObjectGraphError(
                .notFound, "\(path) has no version c\(number) (c0 to c\(files.lastVersion): its WAL's commits)")
        }
        let folder = copy.folder.appendingPathComponent("versions")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("c\(number)-\(UUID().uuidString).sqlite")
        do {
            try files.state(number).write(to: file.path)
        } catch {
            throw ObjectGraphError(.io, "\(path): version c\(number) could not be made (\(error.description))")
        }
        do {
            return try SQLiteStore(version: file, of: self)
        } catch {
            try? FileManager.default.removeItem(at: file)
            // A version made before the store's model was written (its first commits) reads with its
            // own schema; the message says which version.
            throw ObjectGraphError(error.code, "\(path) at c\(number): \(error.message)")
        }
    }

    // MARK: - Reading the files

    /// The files as read, and the copy they were read from; only for stores opened read-only.
    private func recoveryFiles() throws(ObjectGraphError) -> (DatabaseFiles, PrivateCopy) {
        try checkOpen()
        if let copy = currentCopy, let kept = recovery.withLock({ $0.files }), kept.copy === copy {
            return (kept.files, copy)
        }
        guard let copy = currentCopy, let read = copy.readFiles else {
            throw ObjectGraphError(
                .unsupported,
                "\(path) is open for writing: what its files remember is read only from a read-only or evidence open")
        }
        guard let files = DatabaseFiles(database: read.database, log: read.log) else {
            throw ObjectGraphError(.corruptStore, "\(path): its header cannot be read as SQLite's")
        }
        recovery.withLock { $0.files = (copy, files) }
        return (files, copy)
    }

    /// One table of recovery per root entity's table: its columns as the file declares them.
    private func signatures() throws(ObjectGraphError) -> [(signature: TableSignature, root: EntityID)] {
        var roots: [String: EntityID] = [:]
        for entity in layout.entities where entity.id == entity.rootID {
            if let table = entity.table { roots[table.uppercased()] = entity.id }
        }
        return try read { db in
            var result: [(signature: TableSignature, root: EntityID)] = []
            let tables = try Row.fetchAll(db, sql: "SELECT name, rootpage FROM sqlite_master WHERE type = 'table'")
            for row in tables {
                guard let name = (row[0] as DatabaseValue).storedText, let root = roots[name.uppercased()] else {
                    continue
                }
                let info = try Row.fetchAll(db, sql: "PRAGMA table_info(\(name.quotedDatabaseIdentifier))")
                var columns: [TableSignature.Column] = []
                var primaryKeys: [Int] = []
                for (index, column) in info.enumerated() {
                    let columnName = (column["name"] as DatabaseValue).storedText ?? ""
                    let type = (column["type"] as DatabaseValue).storedText ?? ""
                    columns.append(.init(name: columnName, declaredType: type))
                    if ((column["pk"] as DatabaseValue).storedInteger ?? 0) > 0 { primaryKeys.append(index) }
                }
                let upper = columns.map { $0.name.uppercased() }
                // The rowid's alias: one INTEGER PRIMARY KEY column (Core Data's Z_PK).
                let rowid =
                    primaryKeys.count == 1 && columns[primaryKeys[0]].affinity == .integer
                        && (info[primaryKeys[0]]["type"] as DatabaseValue).storedText?.uppercased() == "INTEGER"
                    ? primaryKeys[0] : nil
                let codes = Set(
                    model.entityAndSubentities(of: root).compactMap { layout[$0].zent })
                let rootPage = SQLiteStore.integer(row[1] as DatabaseValue)
                result.append(
                    (
                        TableSignature(
                            name: name, columns: columns, rowidColumn: rowid,
                            entityColumn: upper.firstIndex(of: "Z_ENT"),
                            entityCodes: codes, versionColumn: upper.firstIndex(of: "Z_OPT"),
                            rootPage: rootPage >= 1 && rootPage <= Int64(UInt32.max) ? UInt32(rootPage) : nil),
                        root
                    ))
            }
            return result
        }
    }

    private func recover(_ files: DatabaseFiles, cancelled: @escaping @Sendable () -> Bool) throws(ObjectGraphError)
        -> RecoveredRecords
    {
        let tables = try signatures()
        let result = RecoveryScan.run(
            files, tables: tables.map(\.signature), limits: RecoveryScan.Limits(), cancelled: cancelled)
        let encoding = files.header.textEncoding
        var records: [RecoveredRecord] = []
        var rows: [RecoveryScan.Row] = []
        var names: [EntityID: Set<String>] = [:]
        for row in result.rows {
            guard let record = SurvivingRecord(row.payload), record.isWhole != row.isPartial else { continue }
            let (signature, root) = tables[row.table]
            guard let (entity, inferred) = entity(of: record, signature: signature, root: root) else { continue }
            let key = row.rowid.flatMap { $0 > 0 ? PrimaryKey($0) : nil }
            var digest = Self.digest(
                of: Array(model[entity].name.utf8) + Array(String(row.rowid ?? 0).utf8) + row.payload)
            var name = Self.name(key: key, digest: digest, length: 8)
            // Two records of one entity whose short names meet take longer ones.
            if names[entity]?.contains(name) == true {
                name = Self.name(key: key, digest: digest, length: 16)
                while names[entity]?.contains(name) == true {
                    digest = Self.digest(of: Array(name.utf8))
                    name = Self.name(key: key, digest: digest, length: 16)
                }
            }
            names[entity, default: []].insert(name)
            let live: RecoveredRecord.Live =
                switch row.live {
                case .deleted: .deleted
                case .differs: .differs
                case .unknownKey: .unknownKey
                }
            records.append(
                RecoveredRecord(
                    name: name, entity: entity, key: key, entityInferred: inferred, live: live,
                    sources: row.sources.map(Self.source),
                    partial: row.isPartial
                        ? RecoveredRecord.Partial(survivingBytes: row.payload.count, length: row.wholeLength) : nil))
            rows.append(row)
        }
        if result.leftOut > 0 {
            logger.warning(
                "\(path): \(result.leftOut) recovered records were left out (more than storefs keeps in memory at once)"
            )
        }
        let decoder = RecoveredRowDecoder(store: self, tables: tables, rows: rows, records: records, encoding: encoding)
        return RecoveredRecords(
            records: records, leftOut: result.leftOut, pagesRead: result.pagesRead, cancelled: result.cancelled
        ) { index throws(ObjectGraphError) in try decoder.values(of: index) }
    }

    /// The entity a row of `root`'s table is: its Z_ENT's, or, when Z_ENT is not there, the one
    /// entity of the table whose columns hold every value set (the root when several do). A
    /// record whose end was overwritten must name it: its Z_ENT survives, or exactly one entity
    /// fits what survived (nil otherwise: too damaged to say what it was).
    private func entity(of record: SurvivingRecord, signature: TableSignature, root: EntityID) -> (EntityID, Bool)? {
        if let column = signature.entityColumn, column < record.types.count {
            guard case .integer(let code)? = record.value(column), let entity = layout.entityByZent[code] else {
                return nil
            }
            return (entity, false)
        }
        let set = Set(
            record.types.indices.filter {
                $0 < signature.columns.count && record.value($0) != nil && record.value($0) != .null
            }.map { signature.columns[$0].name.uppercased() })
        var fitting: [EntityID] = []
        for id in model.entityAndSubentities(of: root) {
            let own = Set(
                ["Z_PK", "Z_ENT", "Z_OPT"] + layout[id].attributes.compactMap { $0.column?.uppercased() }
                    + layout[id].toOne.flatMap { [$0.column, $0.entityColumn].compactMap { $0?.uppercased() } })
            if set.isSubset(of: own) { fitting.append(id) }
        }
        if fitting.count == 1 { return (fitting[0], true) }
        return fitting.isEmpty || !record.isWhole ? nil : (root, true)
    }

    private static func name(key: PrimaryKey?, digest: UInt64, length: Int) -> String {
        let hex = String(digest, radix: 16)
        let padded = String(repeating: "0", count: max(0, 16 - hex.count)) + hex
        return (key.map { "\($0)-" } ?? "r-") + padded.prefix(length)
    }

    /// FNV-1a, 64 bits: the same on every machine and run, so names are stable.
    private static func digest(of bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    private static func source(_ source: RecoveryScan.Source) -> RecoveredSource {
        RecoveredSource(
            file: source.frame == nil ? "database" : "wal", page: Int(source.page), offset: source.offset,
            frame: source.frame, commit: source.commit, place: source.place.rawValue, description: source.description)
    }
}

/// Decodes recovered rows' values on demand (``RecoveredRecords/values(of:)``).
private struct RecoveredRowDecoder: Sendable {
    let store: SQLiteStore
    let tables: [(signature: TableSignature, root: EntityID)]
    let rows: [RecoveryScan.Row]
    let records: [RecoveredRecord]
    /// The database's text encoding (1 UTF-8, 2 UTF-16le, 3 UTF-16be).
    let encoding: UInt32

    func values(of index: Int) throws(ObjectGraphError) -> RecoveredValues {
        guard index >= 0, index < rows.count else { throw ObjectGraphError(.notFound, "no recovered record \(index)") }
        let row = rows[index]
        let record = records[index]
        guard let surviving = SurvivingRecord(row.payload) else {
            throw ObjectGraphError(.corruptStore, "a recovered record that no longer reads")
        }
        let signature = tables[row.table].signature
        var columns: [String: Int] = [:]
        for (i, column) in signature.columns.enumerated() { columns[column.name.uppercased()] = i }
        /// A column's value: NULL for a column the record does not have (a row written before the
        /// column was added), nil for one whose bytes were overwritten.
        func value(_ column: String?) -> RecordValue? {
            guard let column, let i = columns[column.uppercased()], i < surviving.types.count else { return .null }
            return surviving.value(i)
        }
        let layout = store.layout[record.entity]
        var attributes = PropertyValues<AttributeValue>()
        var undecoded: [String: String] = [:]
        var missing: [String] = []
        let where_ = "the recovered \(layout.name) \(record.name)"
        for attribute in layout.attributes {
            guard let kept = value(attribute.column) else {
                missing.append(attribute.attribute.name)
                continue
            }
            var stored = databaseValue(kept)
            if stored.isNull { continue }
            if attribute.attribute.allowsExternalBinaryDataStorage {
                stored = store.mechanisms.externalData.resolve(stored, place: "\(where_).\(attribute.attribute.name)")
            }
            let place = ValueCoding.Place(
                entity: layout.name, attribute: attribute.attribute.name, key: record.key?.rawValue ?? 0)
            do throws(ObjectGraphError) {
                if let decoded = try ValueCoding.decode(stored, as: attribute.attribute.type, at: place) {
                    attributes[attribute.attribute.name] = decoded
                }
            } catch {
                undecoded[attribute.attribute.name] = error.message
            }
        }
        var toOne = PropertyValues<ObjectID>()
        for relationship in layout.toOne {
            guard let keyValue = value(relationship.column),
                relationship.entityColumn.map({ value($0) != nil }) ?? true
            else {
                missing.append(relationship.name)
                continue
            }
            guard case .integer(let key) = keyValue, key > 0 else { continue }
            var destination = relationship.destination
            if let column = relationship.entityColumn, case .integer(let code)? = value(column) {
                guard let mapped = store.layout.entityByZent[code] else { continue }
                destination = mapped
            }
            toOne[relationship.name] = ObjectID(entity: destination, key: PrimaryKey(key))
        }
        var version: Int64?
        if case .integer(let v)? = value("Z_OPT") { version = v }
        return RecoveredValues(
            version: version, attributes: attributes, toOne: toOne, undecoded: undecoded,
            missing: Self.inModelOrder(missing, store.model[record.entity]))
    }

    /// `names` (attributes and relationships of `entity`) in the order the model lists them.
    private static func inModelOrder(_ names: [String], _ entity: EntityDescription) -> [String] {
        guard names.count > 1 else { return names }
        let lost = Set(names)
        return (entity.allAttributes.map(\.name) + entity.allRelationships.map(\.name)).filter { lost.contains($0) }
    }

    private func databaseValue(_ value: RecordValue) -> DatabaseValue {
        switch value {
        case .null: return .null
        case .integer(let v): return v.databaseValue
        case .real(let d): return d.databaseValue
        case .blob(let bytes): return Data(bytes).databaseValue
        case .text(let bytes):
            let text: String? =
                switch encoding {
                case 2: String(data: Data(bytes), encoding: .utf16LittleEndian)
                case 3: String(data: Data(bytes), encoding: .utf16BigEndian)
                default: String(validating: bytes, as: UTF8.self)
                }
            // Text that is not valid in its encoding reads as the bytes it is (as ValueCoding reads a BLOB).
            return text.map { $0.databaseValue } ?? Data(bytes).databaseValue
        }
    }
}
