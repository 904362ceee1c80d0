import Foundation
import GRDB
import Logging
import ObjectGraph
import Synchronization

/// A Core Data SQLite store: objects in the tables Core Data lays out, read and written through GRDB.
///
/// Threading: safe from many threads. A read-write store uses a `DatabasePool` (WAL: readers run
/// concurrently with the single writer); a read-only store uses one read-only `DatabaseQueue`.
/// Calls block on SQLite, so they belong on plain threads, not on a Swift concurrency pool thread.
///
/// Opening a read-write store switches its journal to WAL (what Core Data itself uses since iOS 7);
/// a read-only store is opened with `SQLITE_OPEN_READONLY` and never writes the main file.
public final class SQLiteStore: PersistentStore {
    public var storeType: String { SQLiteStoreType.typeName }
    public let url: URL?
    public let model: ManagedObjectModel
    public let isReadOnly: Bool
    public var requestCount: Int { requests.load(ordering: .relaxed) }

    let layout: StoreLayout
    let writer: any DatabaseWriter
    let reader: any DatabaseReader
    let path: String
    let logger: Logger
    let requests = Atomic<Int>(0)
    let closed = Atomic<Bool>(false)

    /// Opens (or creates) the store at `url`; see ``SQLiteStoreType/open(at:model:options:initialMetadata:)``.
    public init(
        url: URL, model: ManagedObjectModel?, options: StoreOptions = StoreOptions(),
        initialMetadata: StoreMetadata = StoreMetadata(), logger: Logger = Logger(label: "storefs.sqlite")
    ) throws(ObjectGraphError) {
        self.url = url
        self.path = url.path
        self.isReadOnly = options.readOnly
        self.logger = logger
        if !FileManager.default.fileExists(atPath: url.path) {
            guard options.createIfMissing else {
                throw ObjectGraphError(.notFound, "\(url.path) does not exist")
            }
            guard !options.readOnly else {
                throw ObjectGraphError(.readOnly, "\(url.path) does not exist and cannot be created read-only")
            }
            guard let model else {
                throw ObjectGraphError(.invalidModel, "creating \(url.path) needs a model")
            }
            try SchemaCreation.create(at: url, model: model, metadata: initialMetadata, logger: logger)
        }
        try FileCheck.check(url)

        var configuration = Configuration()
        configuration.readonly = options.readOnly
        configuration.label = "storefs.sqlite"
        configuration.prepareDatabase { db in Self.addPredicateFunctions(db) }
        let schema: FileSchema
        do {
            if options.readOnly {
                let queue = try DatabaseQueue(path: url.path, configuration: configuration)
                (writer, reader) = (queue, queue)
            } else {
                let pool = try DatabasePool(path: url.path, configuration: configuration)
                (writer, reader) = (pool, pool)
            }
            schema = try reader.read { db in try FileSchema.read(db, file: url.path) }
        } catch {
            throw Self.mapError(error, file: url.path)
        }
        guard schema.table(named: "Z_PRIMARYKEY") != nil, schema.table(named: "Z_METADATA") != nil else {
            try? writer.close()
            throw ObjectGraphError(
                .corruptStore, "\(url.path) is an SQLite file but not a Core Data store: Z_PRIMARYKEY or Z_METADATA is missing")
        }
        if let model {
            self.model = model
        } else {
            do {
                self.model = try Self.model(for: schema, reader: reader, file: url.path, logger: logger)
            } catch {
                try? writer.close()
                throw error
            }
        }
        self.layout = StoreLayout(model: self.model, schema: schema, logger: logger)
    }

    /// The model of a store opened without one: the model storefs embedded in its metadata, or
    /// else one inferred from the schema (see ``SchemaInference``).
    private static func model(for schema: FileSchema, reader: any DatabaseReader, file: String, logger: Logger)
        throws(ObjectGraphError) -> ManagedObjectModel
    {
        let metadata: StoreMetadata?
        do {
            metadata = try reader.read { db in try MetadataCoding.read(db, file: file) }
        } catch {
            throw mapError(error, file: file)
        }
        if let embedded = metadata?.embeddedModel {
            if let model = EmbeddedModel.load(embedded, source: file, logger: logger) { return model }
        }
        return try SchemaInference.infer(from: schema, file: file, logger: logger)
    }

    // MARK: - Running statements

    func checkOpen() throws(ObjectGraphError) {
        if closed.load(ordering: .relaxed) {
            throw ObjectGraphError(.io, "the store \(path) was closed")
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws(ObjectGraphError) -> T {
        try checkOpen()
        do {
            return try reader.read(body)
        } catch let error as ObjectGraphError {
            throw error
        } catch {
            throw Self.mapError(error, file: path)
        }
    }

    func write<T>(_ body: (Database) throws -> T) throws(ObjectGraphError) -> T {
        try checkOpen()
        guard !isReadOnly else {
            throw ObjectGraphError(.readOnly, "the store \(path) is open read-only")
        }
        do {
            return try writer.write(body)
        } catch let error as ObjectGraphError {
            throw error
        } catch {
            throw Self.mapError(error, file: path)
        }
    }

    /// Runs one counted statement that returns rows.
    ///
    /// `cached`: keep the prepared statement for the next call with the same SQL. Only for SQL
    /// that repeats (values bound as arguments): SQL with literal key lists is new every time, and
    /// caching it made GRDB's statement cache grow without bound and cost a copy per insert
    /// (listing 100,000 objects' to-many folders spent 88 % of its time there).
    func rows(_ db: Database, _ sql: String, _ arguments: StatementArguments = [], cached: Bool = true) throws -> [Row] {
        requests.add(1, ordering: .relaxed)
        let statement = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        return try Row.fetchAll(statement, arguments: arguments)
    }

    /// Runs one counted statement that changes rows; returns the number of rows changed.
    /// `cached` as for ``rows(_:_:_:cached:)``.
    @discardableResult
    func execute(_ db: Database, _ sql: String, _ arguments: StatementArguments = [], cached: Bool = true) throws -> Int {
        requests.add(1, ordering: .relaxed)
        let statement = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        try statement.execute(arguments: arguments)
        return db.changesCount
    }

    /// Maps GRDB and SQLite errors to the engine's codes, with a message naming the file.
    static func mapError(_ error: any Error, file: String) -> ObjectGraphError {
        if let error = error as? ObjectGraphError { return error }
        guard let error = error as? DatabaseError else {
            return ObjectGraphError(.io, "\(file): \(error)")
        }
        let message = error.message ?? "\(error)"
        switch error.resultCode {
        case .SQLITE_NOTADB:
            return ObjectGraphError(.corruptStore, "\(file) is not an SQLite database (\(message))")
        case .SQLITE_CORRUPT:
            return ObjectGraphError(.corruptStore, "\(file) is corrupt (\(message)); restore it from a backup")
        case .SQLITE_READONLY:
            return ObjectGraphError(.readOnly, "\(file) cannot be written (\(message))")
        case .SQLITE_CONSTRAINT:
            return ObjectGraphError(.exists, "\(file): a row already exists (\(message))")
        case .SQLITE_CANTOPEN:
            return ObjectGraphError(.io, "\(file) cannot be opened (\(message)); check the path and permissions")
        default:
            return ObjectGraphError(.io, "\(file): \(message)")
        }
    }

    // MARK: - PersistentStore: metadata, keys, lifecycle

    public func metadata() throws(ObjectGraphError) -> StoreMetadata {
        let metadata = try read { db in
            requests.add(1, ordering: .relaxed)
            return try MetadataCoding.read(db, file: path)
        }
        guard let metadata else { throw ObjectGraphError(.corruptStore, "\(path): Z_METADATA has no row") }
        return metadata
    }

    public func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey] {
        let (table, zent) = try rootTable(of: root)
        guard count > 0 else { return [] }
        let first: Int64 = try write { db in
            let stored = try rows(db, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [zent]).first?.storedValues.first ?? .null
            // Z_MAX comes from the file: checked before the arithmetic (a damaged store may hold
            // text there, or a key so high that no more keys exist).
            guard let max = stored.isNull ? 0 : stored.storedInteger, max >= 0 else {
                throw ObjectGraphError(
                    .corruptStore,
                    "\(path): Z_PRIMARYKEY.Z_MAX of \(table) (Z_ENT \(zent)) holds \(stored.storedDescription), not a key; "
                        + "new objects cannot get keys until it holds the highest Z_PK in use")
            }
            let (last, overflow) = max.addingReportingOverflow(Int64(count))
            guard !overflow else {
                throw ObjectGraphError(
                    .unsupported, "\(path): \(table) has handed out key \(max) (Z_MAX); no higher key exists for a new object")
            }
            try execute(db, "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", [last, zent])
            return max + 1
        }
        return (0..<Int64(count)).map { PrimaryKey(first + $0) }
    }

    public func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        let (table, zent) = try rootTable(of: root)
        return try write { db in
            let exists = try !rows(db, "SELECT 1 FROM \(table.quotedDatabaseIdentifier) WHERE Z_PK = ?", [key.rawValue]).isEmpty
            if exists { return false }
            try execute(
                db, "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ? AND IFNULL(Z_MAX, 0) < ?", [key.rawValue, zent, key.rawValue])
            return true
        }
    }

    /// `PRAGMA data_version` on the writer connection: it changes when another connection or
    /// process commits to the file, and not for this store's own saves.
    public func externalChangeToken() throws(ObjectGraphError) -> Int64? {
        try checkOpen()
        do {
            return try writer.writeWithoutTransaction { db in
                requests.add(1, ordering: .relaxed)
                return try Int64.fetchOne(db, sql: "PRAGMA data_version")
            }
        } catch {
            throw Self.mapError(error, file: path)
        }
    }

    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        if !isReadOnly {
            // Fold the WAL into the main file, so a closed store is one self-contained file (what
            // migration renames into place, and what a copy of the file alone must hold).
            do {
                try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            } catch {
                logger.warning("checkpointing \(path): \(error)")
            }
        }
        do { try writer.close() } catch { logger.warning("closing \(path): \(error)") }
    }

    deinit { close() }

    /// The table and Z_ENT of the root entity of `entity`'s tree.
    func rootTable(of entity: EntityID) throws(ObjectGraphError) -> (String, Int64) {
        let entityLayout = try entityLayout(entity)
        let root = layout[entityLayout.rootID]
        guard let table = root.table, let zent = root.zent else {
            throw ObjectGraphError(.unsupported, "entity \(root.name) has no table in \(path)")
        }
        return (table, zent)
    }

    func entityLayout(_ id: EntityID) throws(ObjectGraphError) -> StoreLayout.EntityLayout {
        guard id.rawValue >= 1, id.rawValue <= layout.entities.count else {
            throw ObjectGraphError(.notFound, "\(id) is not an entity of the store's model")
        }
        return layout[id]
    }
}
