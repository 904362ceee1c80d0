import CoreDataSchema
import Foundation
import GRDB
import Logging
import ObjectGraph
import RelationalCore
import SQLiteRecovery
import Synchronization

/// A Core Data SQLite store: objects in the tables Core Data lays out, read and written through GRDB.
///
/// The file changes only when a save writes to it. Reads go through read-only connections; the
/// connection that writes is opened at the first save, in the journal mode the file already has
/// (a WAL store is written through a `DatabasePool`, a rollback-journal store through a
/// `DatabaseQueue` that keeps its journal), so opening, mounting and reading never touch the file
/// and a store stays in the mode its app chose. (One exception: opening for writing rolls back a
/// hot journal a crashed writer left, ``HotJournal``, as any SQLite connection that may write does.)
///
/// Threading: safe from many threads. WAL stores read through a read-only `DatabasePool` (readers
/// run concurrently with the writer); rollback-journal stores through one read-only
/// `DatabaseQueue`. Calls block on SQLite, so they belong on plain threads, not on a Swift
/// concurrency pool thread.
public final class SQLiteStore: PersistentStore {
    public var storeType: String { SQLiteStoreType.typeName }
    public let url: URL?
    public let model: ManagedObjectModel
    public let modelSource: ModelSource
    public let isReadOnly: Bool
    public var requestCount: Int { requests.load(ordering: .relaxed) }

    let layout: StoreLayout
    /// Core Data's relational rules over SQLite's dialect: reads and saves.
    let core: RelationalRules
    /// The connections that read (see ``ReadSource``).
    var reader: any DatabaseReader { source.withLock { $0.reader } }
    private let source: Mutex<ReadSource>
    /// Tables whose keys are TEXT (read through views, never written), upper-cased.
    let textKeyTables: Set<String>
    let path: String
    let logger: Logger
    let requests = Atomic<Int>(0)
    let closed = Atomic<Bool>(false)
    /// Whether values in external data files are read as ``FileBackedValue`` references
    /// (``keepsValuesInFiles()``).
    let valuesInFiles = Atomic<Bool>(false)
    /// Whether the file is in WAL mode (its header says so), which decides how it is written.
    let isWAL: Bool
    /// Core Data's triggers, history and external data, as this file uses them.
    let mechanisms: CoreDataMechanisms
    /// How the file keeps persistent history, to read it back; nil when it keeps none.
    let historyReader: HistoryReader?
    /// The connection that writes, opened by the first save.
    private let openedWriter = Mutex<(any DatabaseWriter)?>(nil)
    /// Whether closing removes the -wal and -shm files: a WAL store opened for writing that had
    /// none beside it (see ``close()``).
    private let removesWALFilesAtClose: Bool
    /// The highest key handed out per root Z_ENT since the store opened: keys are reserved in
    /// memory and written (Z_MAX) by the save that inserts them, so a mkdir that is never saved
    /// leaves the file as it was.
    let reservedKeys = Mutex<[Int64: Int64]>([:])
    /// One read connection that watches for other processes' commits: a pool's readers each
    /// count `data_version` on their own, so their numbers cannot be compared.
    private let watcher = Mutex<DatabaseQueue?>(nil)
    /// Read-only and not hashing its inputs: the private copy is made again when the store's
    /// files change, so the mount follows other processes' commits (``externalChangeToken()``).
    private let followsChanges: Bool
    private let hashesInputs: Bool
    /// The temp-schema views the readers are opened with (``FileSchema/textKeyViews``).
    private let views: [String]
    private let copies = Mutex(Copies())
    /// The external data files, hashed when the open was asked to (read from their place when a
    /// value needs them, never copied).
    private let externalInputs: [InputFile]

    /// The connections that read, and the private copy they read when the store is open
    /// read-only. Replaced as a whole when the copy is made again; a read holds the one it
    /// started with, so the old copy's files stay until it ends.
    struct ReadSource: Sendable {
        let reader: any DatabaseReader
        let copy: PrivateCopy?
    }

    /// How a read-only store follows changes: the token it hands out (one more per new copy),
    /// and when it may copy again (a copy that took T waits 4·T, so a store an app writes
    /// constantly is not copied back to back).
    private struct Copies {
        var generation: Int64 = 0
        var handedOut = false
        var notBefore = Date.distantPast
    }

    /// What the store's files remember, read once per private copy (SQLiteStore+Recovery.swift).
    let recovery = Mutex(RecoveryState())
    /// The file is a version storefs made (``init(version:of:)``), removed when the store closes.
    private let isVersion: Bool

    struct RecoveryState: Sendable {
        var records: (copy: PrivateCopy, records: RecoveredRecords)?
        /// The files as read (their log's frames verified once), per copy.
        var files: (copy: PrivateCopy, files: DatabaseFiles)?
    }

    /// Opens (or creates) the store at `url`; see ``SQLiteStoreType/open(at:model:options:initialMetadata:)``.
    public convenience init(
        url: URL, model: ManagedObjectModel?, options: StoreOptions = StoreOptions(),
        initialMetadata: StoreMetadata = StoreMetadata(), logger: Logger = Logger(label: "storefs.sqlite")
    ) throws(ObjectGraphError) {
        try self.init(
            url: url, model: model, options: options, initialMetadata: initialMetadata, logger: logger,
            privateFile: nil)
    }

    /// A version of `store` made from its files (``openVersion(_:)``): the file at `url` is
    /// storefs's own, in the store's private folder, and is read in place (no copy of it is made),
    /// with the store's model, its external data read from beside the store.
    convenience init(version url: URL, of store: SQLiteStore) throws(ObjectGraphError) {
        try self.init(
            url: url, model: store.model, options: StoreOptions(readOnly: true),
            initialMetadata: StoreMetadata(), logger: store.logger, privateFile: store.url)
    }

    /// `privateFile`: `url` is a private file storefs made (a version), read in place; the URL
    /// given is the store it was made from, whose external data it reads.
    private init(
        url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata, logger: Logger,
        privateFile: URL?
    ) throws(ObjectGraphError) {
        self.url = url
        self.path = url.path
        self.isReadOnly = options.readOnly
        self.isVersion = privateFile != nil
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
        if !options.readOnly {
            try FileCheck.checkWritable(url)
            // Before the read-only connections open: they cannot roll back a hot journal.
            do {
                try HotJournal.rollBack(beside: url, configuration: Self.configuration(readOnly: false), logger: logger)
            } catch {
                throw Self.mapError(error, file: url.path)
            }
        }
        // Read-only: everything is read from a private copy; nothing beside the store is touched.
        let copy =
            options.readOnly && privateFile == nil
            ? try PrivateCopy.make(of: url, hashing: options.hashesInputs, logger: logger) : nil
        isWAL = FileCheck.isWAL(copy?.store ?? url)
        removesWALFilesAtClose =
            !options.readOnly && isWAL && !FileManager.default.fileExists(atPath: url.path + "-wal")
            && !FileManager.default.fileExists(atPath: url.path + "-shm")
        followsChanges = options.readOnly && !options.hashesInputs
        hashesInputs = options.hashesInputs
        var opened = try Self.openReader(url, copy: copy, isWAL: isWAL, logger: logger)
        let schema: FileSchema
        do {
            schema = try opened.reader.read { db in try FileSchema.read(db, file: url.path) }
            // Tables rebuilt by another tool with TEXT keys: the reader then reads them through
            // views that cast the keys back (see FileSchema.textKeyViews); saves refuse them.
            let views = schema.textKeyViews
            if !views.isEmpty {
                logger.notice(
                    """
                    \(url.path): \(views.count) table(s) hold their Z_PK/Z_ENT/Z_OPT as text (rebuilt by another tool); \
                    they are read through views and cannot be written
                    """)
                try? opened.reader.close()
                opened = try Self.openReader(url, copy: copy, isWAL: isWAL, logger: logger, views: views)
            }
        } catch {
            Self.close(opened)
            throw Self.mapError(error, file: url.path)
        }
        views = schema.textKeyViews
        source = Mutex(opened)
        guard schema.table(named: "Z_PRIMARYKEY") != nil, schema.table(named: "Z_METADATA") != nil else {
            Self.close(opened)
            throw ObjectGraphError(
                .corruptStore,
                "\(url.path) is an SQLite file but not a Core Data store: Z_PRIMARYKEY or Z_METADATA is missing")
        }
        if let model {
            self.model = model
            self.modelSource = .given("given by the caller")
        } else {
            do {
                (self.model, self.modelSource) = try Self.model(
                    for: schema, reader: opened.reader, file: url.path, readOnly: options.readOnly, logger: logger)
            } catch {
                Self.close(opened)
                throw error
            }
        }
        self.layout = StoreLayout(model: self.model, schema: schema, logger: logger)
        self.core = RelationalRules(
            model: self.model, layout: layout, dialect: SQLiteDialect(), place: url.path, logger: logger)
        self.textKeyTables = Set(schema.textKeyTables.map { $0.uppercased() })
        self.historyReader = HistoryReader(schema: schema, model: self.model)
        if options.readOnly {
            mechanisms = CoreDataMechanisms(url: privateFile ?? url, logger: logger)
        } else {
            do {
                mechanisms = try CoreDataMechanisms(
                    url: url, reader: opened.reader, schema: schema, model: self.model, modelSource: modelSource,
                    layout: layout,
                    logger: logger)
            } catch {
                Self.close(opened)
                throw error
            }
        }
        do {
            externalInputs = options.hashesInputs ? try mechanisms.externalData.inputFiles() : []
        } catch {
            Self.close(opened)
            throw error
        }
    }

    /// Every connection storefs opens on a store: waits up to ten seconds for a lock another
    /// connection or process holds, rather than failing at once with "database is locked".
    /// `views` (SQL) are created in each connection's temp schema, where they shadow the tables
    /// they read. Core Data's SQL functions are there on every connection, the trigger hooks
    /// (`hooks`) reporting into `effects`; the connection that writes commits with
    /// `synchronous = FULL`, so an acknowledged commit survives a power loss (a pool's writer is
    /// set again in ``writer()``, after GRDB's WAL setup has lowered it).
    static func configuration(
        readOnly: Bool, views: [String] = [], hooks: [String] = CoreDataFunctions.knownHooks,
        effects: TriggerEffects = TriggerEffects()
    ) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = readOnly
        configuration.label = "storefs.sqlite"
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            Self.addPredicateFunctions(db)
            CoreDataFunctions.register(on: db, hooks: hooks, effects: effects)
            for view in views { try db.execute(sql: view) }
            if !readOnly { try db.execute(sql: "PRAGMA synchronous = FULL") }
        }
        return configuration
    }

    /// The read-only connections: on the private `copy` when there is one (a read-only open),
    /// else on the store itself (a store opened for writing, whose readers see its commits).
    /// Errors name the store, not the copy.
    static func openReader(_ url: URL, copy: PrivateCopy?, isWAL: Bool, logger: Logger, views: [String] = [])
        throws(ObjectGraphError) -> ReadSource
    {
        let configuration = configuration(readOnly: true, views: views)
        let path = copy?.store.path ?? url.path
        do {
            let reader: any DatabaseReader =
                isWAL
                ? try DatabasePool(path: path, configuration: configuration)
                : try DatabaseQueue(path: path, configuration: configuration)
            return ReadSource(reader: reader, copy: copy)
        } catch {
            copy?.remove()
            throw mapError(error, file: url.path)
        }
    }

    static func close(_ source: ReadSource) {
        try? source.reader.close()
        source.copy?.remove()
    }

    /// The model of a store opened without one, the best there is: the model storefs keeps in its
    /// metadata, else the compiled model Core Data cached in Z_MODELCACHE, else one inferred from
    /// the schema (see ``SchemaInference``).
    /// A model kept in the metadata that does not load refuses a store opened for writing (its
    /// stores would be written with another model than their own) and is passed over, with a
    /// warning, by a read-only one.
    private static func model(
        for schema: FileSchema, reader: any DatabaseReader, file: String, readOnly: Bool, logger: Logger
    )
        throws(ObjectGraphError) -> (ManagedObjectModel, ModelSource)
    {
        let metadata: StoreMetadata?
        let cached: ManagedObjectModel?
        do {
            (metadata, cached) = try reader.read { db in
                (
                    try MetadataCoding.read(db, file: file),
                    ModelCache.load(from: db, schema: schema, file: file, logger: logger)
                )
            }
        } catch {
            throw mapError(error, file: file)
        }
        if let embedded = metadata?.embeddedModel {
            if !readOnly {
                return (
                    try XcodeModelLoader.load(contents: Data(embedded.utf8), source: "\(file) (embedded model)"),
                    .keptByStoreFS
                )
            }
            if let model = EmbeddedModel.load(embedded, source: file, logger: logger) { return (model, .keptByStoreFS) }
        }
        if let cached { return (cached, .coreDataCache) }
        let inferred = try SchemaInference.infer(from: schema, file: file, logger: logger) {
            table, column, destination in
            // Some key in the column, and none that the destination's table lacks.
            let t = table.quotedDatabaseIdentifier
            let c = column.quotedDatabaseIdentifier
            let sql =
                "SELECT EXISTS (SELECT 1 FROM \(t) WHERE \(c) IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM \(t) "
                + "WHERE \(c) IS NOT NULL AND \(c) NOT IN (SELECT Z_PK FROM \(destination.quotedDatabaseIdentifier)))"
            return (try? reader.read { db in try Bool.fetchOne(db, sql: sql) }) == true
        }
        return (inferred, .inferred)
    }

    // MARK: - Running statements

    func checkOpen() throws(ObjectGraphError) {
        if closed.load(ordering: .relaxed) {
            throw ObjectGraphError(.io, "the store \(path) was closed")
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws(ObjectGraphError) -> T {
        try checkOpen()
        // Held for the whole read: a new copy made meanwhile does not take this one's files away.
        let current = source.withLock { $0 }
        do {
            return try current.reader.read(body)
        } catch let error as ObjectGraphError {
            throw error
        } catch {
            throw Self.mapError(error, file: path)
        }
    }

    /// The connection that writes, opened now if no save opened it yet.
    func writer() throws(ObjectGraphError) -> any DatabaseWriter {
        try checkOpen()
        guard !isReadOnly else {
            throw ObjectGraphError(.readOnly, "the store \(path) is open read-only")
        }
        return try openedWriter.withLock { (writer) throws(ObjectGraphError) -> any DatabaseWriter in
            if let writer { return writer }
            let configuration = Self.configuration(
                readOnly: false, hooks: mechanisms.hooks, effects: mechanisms.effects)
            do {
                // A pool would switch a rollback-journal store to WAL: such a store keeps its
                // journal and is written through one connection.
                let opened: any DatabaseWriter =
                    isWAL
                    ? try DatabasePool(path: path, configuration: configuration)
                    : try DatabaseQueue(path: path, configuration: configuration)
                // A pool sets `synchronous = NORMAL` on its writer after `prepareDatabase` (GRDB's
                // setUpWALMode): WAL commits would then reach the disk only at the next
                // checkpoint, and a power cut would lose acknowledged ones (docs/RELIABILITY.md,
                // power-loss trials). The writer is the only connection that commits.
                try opened.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
                writer = opened
                return opened
            } catch {
                throw Self.mapError(error, file: path)
            }
        }
    }

    func write<T>(_ body: (Database) throws -> T) throws(ObjectGraphError) -> T {
        let writer = try writer()
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
    func rows(_ db: Database, _ sql: String, _ arguments: StatementArguments = [], cached: Bool = true) throws -> [Row]
    {
        requests.add(1, ordering: .relaxed)
        let statement = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        return try Row.fetchAll(statement, arguments: arguments)
    }

    /// Runs one counted statement that changes rows; returns the number of rows changed.
    /// `cached` as for ``rows(_:_:_:cached:)``.
    @discardableResult
    func execute(_ db: Database, _ sql: String, _ arguments: StatementArguments = [], cached: Bool = true) throws -> Int
    {
        requests.add(1, ordering: .relaxed)
        let statement = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        try statement.execute(arguments: arguments)
        return db.changesCount
    }

    /// Maps GRDB and SQLite errors to the engine's codes, with a message naming the file and
    /// SQLite's extended result code (what `user.storefs.error` and the log show).
    static func mapError(_ error: any Error, file: String) -> ObjectGraphError {
        if let error = error as? ObjectGraphError { return error }
        guard let error = error as? DatabaseError else {
            return ObjectGraphError(.io, "\(file): \(error)")
        }
        let message = "\(error.message ?? "\(error)") (SQLite result code \(error.extendedResultCode.rawValue))"
        switch error.resultCode {
        case .SQLITE_FULL:
            return ObjectGraphError(.noSpace, "\(file): the disk is full (\(message)); nothing was written")
        case .SQLITE_NOTADB:
            return ObjectGraphError(.corruptStore, "\(file) is not an SQLite database (\(message))")
        case .SQLITE_CORRUPT:
            return ObjectGraphError(.corruptStore, "\(file) is corrupt (\(message)); restore it from a backup")
        case .SQLITE_READONLY:
            return ObjectGraphError(.readOnly, "\(file) cannot be written (\(message))")
        case .SQLITE_CONSTRAINT where error.extendedResultCode == .SQLITE_CONSTRAINT_TRIGGER:
            return ObjectGraphError(.notPermitted, "\(file): a trigger of the store refused the change (\(message))")
        case .SQLITE_CONSTRAINT:
            return ObjectGraphError(.exists, "\(file): a row already exists (\(message))")
        case .SQLITE_FULL:
            return ObjectGraphError(
                .noSpace,
                "\(file): the disk is full (\(message)); nothing of the save was written, make room and save again")
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

    /// Reserves keys in memory above every key the file has handed out (its Z_MAX) and every key
    /// it holds (a store whose Z_MAX lags behind its rows never reuses a key); the save that
    /// inserts them writes Z_MAX.
    public func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey] {
        let (table, zent) = try core.rootTable(of: root)
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(path) is open read-only") }
        guard count > 0 else { return [] }
        let stored = try highestStoredKey(table: table, zent: zent)
        return try reservedKeys.withLock { (reserved) throws(ObjectGraphError) in
            try KeyRange.reserve(count, after: max(reserved[zent] ?? 0, stored), in: "\(path): \(layout[root].name)") {
                reserved[zent] = $0
            }
        }
    }

    public func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        let (table, zent) = try core.rootTable(of: root)
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(path) is open read-only") }
        let exists = try read { db in
            try connection(db).integer("SELECT 1 FROM \(identifier: table) WHERE Z_PK = \(key.rawValue)") != nil
        }
        guard !exists else { return false }
        reservedKeys.withLock { $0[zent] = max($0[zent] ?? 0, key.rawValue) }
        return true
    }

    /// The larger of Z_MAX and the largest Z_PK of a root's table (``RelationalRules/highestStoredKey(in:on:)``).
    private func highestStoredKey(table: String, zent: Int64) throws(ObjectGraphError) -> Int64 {
        guard let root = layout.entityByZent[zent] else { return 0 }
        return try read { db in try core.highestStoredKey(in: root, on: connection(db)) }
    }

    /// Column `index` of `row` as an integer, or 0 when it holds anything else (text, a blob, a
    /// real that is not whole): GRDB's typed subscript traps on those.
    static func integer(_ row: Row, _ index: Int) -> Int64 { integer(row[index] as DatabaseValue) }

    /// `value` as an integer, or 0 when it holds anything else (text, a blob, a real that is not whole).
    static func integer(_ value: DatabaseValue) -> Int64 {
        switch value.storage {
        case .int64(let v): return v
        case .double(let d): return Int64(exactly: d) ?? 0
        default: return 0
        }
    }

    /// `PRAGMA data_version`: it changes when another connection or process commits to the file.
    /// Asked of the writer once it exists (it does not change for the writer's own saves), else of
    /// a read connection.
    public func externalChangeToken() throws(ObjectGraphError) -> Int64? {
        try checkOpen()
        if source.withLock({ $0.copy }) != nil { return followsChanges ? try copyAgainIfChanged() : nil }
        do {
            requests.add(1, ordering: .relaxed)
            if let writer = openedWriter.withLock({ $0 }) {
                return try writer.writeWithoutTransaction { db in try Int64.fetchOne(db, sql: "PRAGMA data_version") }
            }
            if let queue = reader as? DatabaseQueue {
                return try queue.read { db in try Int64.fetchOne(db, sql: "PRAGMA data_version") }
            }
            let queue = try watcher.withLock { queue in
                if let queue { return queue }
                let opened = try DatabaseQueue(path: path, configuration: Self.configuration(readOnly: true))
                queue = opened
                return opened
            }
            return try queue.read { db in try Int64.fetchOne(db, sql: "PRAGMA data_version") }
        } catch {
            throw Self.mapError(error, file: path)
        }
    }

    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        // Readers first: the writer, closing last, then removes the -wal and -shm files, which
        // only the last connection to a file does (and only one that may write).
        try? watcher.withLock { $0 }?.close()
        Self.close(source.withLock { $0 })
        if isVersion, let url { try? FileManager.default.removeItem(at: url) }
        if let writer = openedWriter.withLock({ $0 }) {
            if isWAL {
                // Fold the WAL into the main file, so a closed store is one self-contained file
                // (what migration renames into place, and what a copy of the file alone must hold).
                // Only a store that was written: reading never changes the file.
                do {
                    try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
                } catch {
                    logger.warning("checkpointing \(path): \(error)")
                }
            }
            do { try writer.close() } catch { logger.warning("closing \(path): \(error)") }
        } else if removesWALFilesAtClose {
            // Nothing was saved, but the read connections made a -wal and -shm beside the store,
            // which SQLite's read-only connections never remove. A connection that may write,
            // closed last, removes them (as the last connection to a WAL file does): the store's
            // folder is as it was. Its WAL is empty, so the store file is not written.
            do {
                try DatabaseQueue(path: path, configuration: Self.configuration(readOnly: false)).close()
            } catch {
                logger.warning("closing \(path): \(error)")
            }
        }
    }

    deinit { close() }

    // MARK: - Read-only: the private copy

    /// The token of a store read from a private copy: one more each time the copy is made again
    /// because the store's files changed (another process committed). The first token handed
    /// out is the copy's as opened, so a caller's baseline is what it has read.
    private func copyAgainIfChanged() throws(ObjectGraphError) -> Int64? {
        let (generation, handedOut, notBefore) = copies.withLock { ($0.generation, $0.handedOut, $0.notBefore) }
        guard handedOut else {
            copies.withLock { $0.handedOut = true }
            return generation
        }
        guard let copy = source.withLock({ $0.copy }), !copy.isCurrent, Date() >= notBefore, let url else {
            return generation
        }
        let started = Date()
        do {
            let fresh = try PrivateCopy.make(of: url, hashing: false, logger: logger)
            let opened = try Self.openReader(
                url, copy: fresh, isWAL: FileCheck.isWAL(fresh.store), logger: logger, views: views)
            let old = source.withLock { current in
                defer { current = opened }
                return current
            }
            // The old copy's files go when the last read of them ends (ReadSource holds them).
            _ = old
            let took = Date().timeIntervalSince(started)
            return copies.withLock { state in
                state.generation += 1
                state.notBefore = Date().addingTimeInterval(4 * took)
                return state.generation
            }
        } catch {
            logger.warning("\(path) changed, but copying it again failed (\(error)); showing it as it was")
            copies.withLock { $0.notBefore = Date().addingTimeInterval(Self.retryAfterFailedCopy) }
            return generation
        }
    }

    /// The private copy reads go to now (nil for a store open for writing).
    var currentCopy: PrivateCopy? { source.withLock { $0.copy } }

    /// Seconds before a copy that failed is tried again.
    private static let retryAfterFailedCopy: TimeInterval = 5

    /// What the open read, with its SHA-256 when asked (``StoreOptions/hashesInputs``): the store,
    /// its -wal and -journal as copied, and the external data files. Empty for a store opened for
    /// writing.
    public var inputFiles: [InputFile] {
        (source.withLock { $0.copy }?.inputs ?? []) + externalInputs
    }

    /// Z_MAX, or the highest key of the root's table where that is higher.
    public func highestKey(in root: EntityID) throws(ObjectGraphError) -> Int64 {
        let (table, zent) = try core.rootTable(of: root)
        let stored = try highestStoredKey(table: table, zent: zent)
        return max(stored, reservedKeys.withLock { $0[zent] ?? 0 })
    }
}
