import CoreDataSchema
import Foundation
import Logging
import ObjectGraph
import RelationalCore
import Synchronization

/// A store in PostgreSQL, in Core Data's schema: Z_PRIMARYKEY, Z_METADATA, one Z<ENTITY> table per
/// root entity, join tables, Z_PK/Z_ENT/Z_OPT, persistent history (ATRANSACTION, ACHANGE,
/// ATRANSACTIONSTRING), in one schema of a database, with the model kept in the metadata so any
/// machine mounts it without `--model`.
///
/// Several processes on several machines write it at once. Keys are handed out by the server
/// (Z_PRIMARYKEY.Z_MAX moved in its own statement), so no two writers get the same; every save
/// is one transaction that checks Core Data's optimistic locking property by property (rows
/// locked while checked) and appends a history transaction, and announces its number with
/// NOTIFY on commit; other stores on the same schema learn which objects changed
/// (``takeAnnouncedChanges()``).
///
/// Threading: safe from many threads. Reads go through a pool of connections, saves through one
/// connection of their own, one at a time; the announcement listener runs on a thread of its own
/// once asked. Calls block on the network, bounded by the location's statement timeout.
public final class PostgresStore: PersistentStore, ChangeAnnouncingStore {
    public static let typeName = "PostgreSQL"

    public var storeType: String { Self.typeName }
    public var url: URL? { location.url }
    public let location: PostgresLocation
    public let model: ManagedObjectModel
    public let modelSource: ModelSource
    public let isReadOnly: Bool
    public var requestCount: Int { requests.load(ordering: .relaxed) }

    let layout: StoreLayout
    /// Core Data's relational rules over PostgreSQL's dialect: reads and saves.
    let core: RelationalRules
    let slots: HistorySlots
    let logger: Logger
    let pool: ConnectionPool
    /// The read connections to a standby, when the URL names several hosts and reads may go
    /// there (StandbyReads.swift); nil: reads go through ``pool``.
    let standbyReads: StandbyReads?
    let requests = Atomic<Int>(0)
    let closed = Atomic<Bool>(false)
    /// The connection saves use, made at the first save and again after it failed.
    let writer = Mutex<PostgresConnection?>(nil)
    /// Names this store's own commits in announcements, so it does not refresh what it wrote.
    let instance = UUID().uuidString
    /// The key of the author string ("storefs") in ATRANSACTIONSTRING, made with the store.
    let authorKey: Int64
    /// Tombstone columns of ACHANGE, in order.
    let tombstoneColumns: [String]
    let listener = Mutex<ChangeListener?>(nil)
    /// The connection holding the mount's file locks (PostgresStore+Locks.swift).
    let advisoryLocks: AdvisoryLockSession
    /// Called with the server process of a save's connection just before its COMMIT is sent: the
    /// tests stop or kill that process there, as a vanishing network or server would.
    let beforeCommit = Mutex<(@Sendable (_ serverProcess: Int32) -> Void)?>(nil)

    /// Opens the store at `location`, creating it when asked (with `model`). Without a model, the
    /// one the store keeps in its metadata is used.
    public init(
        location: PostgresLocation, model given: ManagedObjectModel?, options: StoreOptions = StoreOptions(),
        initialMetadata: StoreMetadata = StoreMetadata(), logger: Logger = Logger(label: "storefs.postgresql")
    ) throws(ObjectGraphError) {
        self.location = location
        self.isReadOnly = options.readOnly
        self.logger = logger
        advisoryLocks = AdvisoryLockSession(location: location, logger: logger)
        pool = ConnectionPool(location: location, timeout: location.statementTimeout)
        standbyReads = location.readsFromStandby ? StandbyReads(location: location) : nil
        let exists = try pool.withConnection { (connection) throws(ObjectGraphError) in try Self.exists(connection) }
        if !exists {
            guard options.createIfMissing else {
                throw ObjectGraphError(
                    .notFound,
                    "\(location) holds no storefs store in schema \(location.schema); make one with `storefs create --model MODEL URL`"
                )
            }
            guard !options.readOnly else {
                throw ObjectGraphError(.readOnly, "\(location) has no store and cannot be created read-only")
            }
            guard let given else {
                throw ObjectGraphError(.invalidModel, "creating a store at \(location) needs a model (--model)")
            }
            // The model goes into the store, so every machine mounts it without --model.
            var metadata = initialMetadata
            if metadata.embeddedModel == nil {
                metadata[StoreMetadata.modelKey] = .string(XcodeModelWriter.contents(of: given))
            }
            try pool.withConnection { (connection) throws(ObjectGraphError) in
                try PostgresSchema.create(
                    in: connection, location: location, model: given, metadata: metadata, logger: logger)
            }
        }
        let metadata = try pool.withConnection { (connection) throws(ObjectGraphError) in
            try Self.readMetadata(connection, location)
        }
        if let given {
            model = given
            modelSource = .given("given by the caller")
        } else if let text = metadata.embeddedModel {
            model = try XcodeModelLoader.load(
                contents: Data(text.utf8), source: "\(location) (the model kept in the store)")
            modelSource = .keptByStoreFS
        } else {
            throw ObjectGraphError(.invalidModel, "\(location) keeps no model in its metadata; give one with --model")
        }
        layout = StoreLayout(model: model, schema: nil, logger: logger)
        core = RelationalRules(
            model: model, layout: layout, dialect: PostgresDialect(), place: location.description, logger: logger)
        slots = HistorySlots(model: model)
        tombstoneColumns = PostgresSchema.tombstoneColumns(for: slots)
        let layout = self.layout
        let found = try pool.withConnection { (connection) throws(ObjectGraphError) in
            try PostgresSchema.check(connection, layout: layout, location: location)
        }
        authorKey = found
        let advisoryLocks = self.advisoryLocks
        try pool.withConnection { (connection) throws(ObjectGraphError) in
            try advisoryLocks.noteHistory(connection, layout: layout)
        }
    }

    // MARK: - Statements

    /// Runs one counted statement on a connection of the pool.
    @discardableResult
    ///
    /// The whole call, a connection made on the way included, ends within the location's
    /// statement timeout: a read that needs a server that does not answer fails with EIO then.
    func read(_ sql: String, _ parameters: [String?] = []) throws(ObjectGraphError) -> PostgresResult {
        try checkOpen()
        requests.add(1, ordering: .relaxed)
        let started = Date()
        let deadline = started.addingTimeInterval(location.statementTimeout)
        do {
            return try pool.withConnection(deadline: deadline) { (connection) throws(ObjectGraphError) in
                try connection.execute(sql, parameters, deadline: deadline)
            }
        } catch  where error.code == .io && Date().timeIntervalSince(started) < Self.quickFailure {
            // A kept connection found dead at once (a restarted server; the others are probably
            // dead too): once more on a new one. A failure that took its time is the answer.
            pool.dropIdle()
            return try pool.withConnection(deadline: deadline) { (connection) throws(ObjectGraphError) in
                try connection.execute(sql, parameters, deadline: deadline)
            }
        }
    }

    /// Seconds within which a failed read is taken for a dead kept connection and tried again.
    static let quickFailure: Double = 1

    func checkOpen() throws(ObjectGraphError) {
        if closed.load(ordering: .relaxed) { throw ObjectGraphError(.io, "the store \(location) was closed") }
    }

    static func exists(_ connection: PostgresConnection) throws(ObjectGraphError) -> Bool {
        let found = try connection.execute(
            "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = 'Z_METADATA'")
        return found.rowCount > 0
    }

    static func readMetadata(_ connection: PostgresConnection, _ location: PostgresLocation) throws(ObjectGraphError)
        -> StoreMetadata
    {
        let row = try connection.execute(
            "SELECT \"Z_UUID\", \"Z_PLIST\" FROM \"Z_METADATA\" ORDER BY \"Z_VERSION\" LIMIT 1")
        guard row.rowCount == 1 else { throw ObjectGraphError(.corruptStore, "\(location): Z_METADATA has no row") }
        var plist: Data?
        if let bytes = row.bytes(0, 1) {
            guard let data = PostgresValueCoding.unhex(bytes) else {
                throw ObjectGraphError(.corruptStore, "\(location): Z_METADATA.Z_PLIST is not bytea")
            }
            plist = data
        }
        var metadata = try MetadataPlist.decode(plist, source: "\(location) Z_METADATA.Z_PLIST")
        if let uuid = row.text(0, 0) { metadata.storeUUID = uuid }
        if metadata.storeType == nil { metadata.storeType = typeName }
        return metadata
    }

    // MARK: - PersistentStore: metadata, keys, lifecycle

    public func metadata() throws(ObjectGraphError) -> StoreMetadata {
        try checkOpen()
        requests.add(1, ordering: .relaxed)
        let location = self.location
        return try pool.withConnection { (connection) throws(ObjectGraphError) in
            try Self.readMetadata(connection, location)
        }
    }

    /// Moves the root's Z_MAX on the server in one statement of its own: the keys are this
    /// store's whatever other writers do, and are never handed out again (as in Core Data, keys
    /// of objects that are never saved are skipped). Z_MAX starts from the highest key a row has.
    public func reserveKeys(in root: EntityID, count: Int) throws(ObjectGraphError) -> [PrimaryKey] {
        let (table, zent) = try core.rootTable(of: root)
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(location) is open read-only") }
        guard count > 0 else { return [] }
        guard count <= 1_000_000 else {
            throw ObjectGraphError(.unsupported, "\(count) keys at once is more than storefs reserves")
        }
        let found = try read(
            "UPDATE \"Z_PRIMARYKEY\" SET \"Z_MAX\" = GREATEST(COALESCE(\"Z_MAX\", 0), "
                + "(SELECT COALESCE(MAX(\"Z_PK\"), 0) FROM \(SQL.identifier(table)))) + $2 WHERE \"Z_ENT\" = $1 RETURNING \"Z_MAX\"",
            [String(zent), String(count)])
        guard let last = found.integer(0, 0) else {
            throw ObjectGraphError(.corruptStore, "\(location): Z_PRIMARYKEY has no row for \(layout[root].name)")
        }
        return try KeyRange.reserve(count, after: last - Int64(count), in: "\(location): \(layout[root].name)") { _ in }
    }

    /// A key above Z_MAX is claimed by moving Z_MAX to it on the server (no other writer can get
    /// it then); a lower key is granted when no row has it, and a save that finds another writer
    /// saved it meanwhile fails with EEXIST.
    public func claimKey(_ key: PrimaryKey, in root: EntityID) throws(ObjectGraphError) -> Bool {
        let (table, zent) = try core.rootTable(of: root)
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(location) is open read-only") }
        let exists = try read("SELECT 1 FROM \(SQL.identifier(table)) WHERE \"Z_PK\" = $1", [String(key.rawValue)])
        guard exists.rowCount == 0 else { return false }
        try read(
            "UPDATE \"Z_PRIMARYKEY\" SET \"Z_MAX\" = $2 WHERE \"Z_ENT\" = $1 AND COALESCE(\"Z_MAX\", 0) < $2",
            [String(zent), String(key.rawValue)])
        return true
    }

    /// Z_MAX, or the highest key of the root's table where that is higher (not by listing every
    /// object, the protocol's default).
    public func highestKey(in root: EntityID) throws(ObjectGraphError) -> Int64 {
        // On the primary: a standby may not have replayed the latest keys yet.
        try core.highestStoredKey(in: root, on: PostgresSQLConnection(store: self, connection: nil))
    }

    /// Statements run on the read pool, one connection per statement: on a standby when the URL
    /// names one (StandbyReads.swift).
    var reads: PostgresSQLConnection { PostgresSQLConnection(store: self, connection: nil, preferringStandby: true) }

    /// Moves when the announcement listener reconnects: announcements may have been missed, so
    /// whoever compares tokens reads everything again. Nil until the listener runs.
    public func externalChangeToken() throws(ObjectGraphError) -> Int64? {
        try checkOpen()
        return listener.withLock { $0 }?.generation
    }

    /// What other writers committed since the last call (starting the listener at the first).
    public func takeAnnouncedChanges() -> AnnouncedChanges {
        guard !closed.load(ordering: .relaxed) else { return AnnouncedChanges() }
        let listener = self.listener.withLock { listener in
            if let listener { return listener }
            // Where reads come from: a follower that hears of a commit before its reads can see
            // it would read the old rows again and keep them.
            // Else where sessions go: LISTEN needs one (PostgresLocation+Pooler.swift).
            let started = ChangeListener(
                location: location.readsFromStandby ? location.forReads : location.forSession, layout: layout,
                instance: instance, logger: logger)
            listener = started
            return started
        }
        return listener.take()
    }

    public func check(_ value: AttributeValue, for attribute: AttributeDescription, of entity: EntityID)
        throws(ObjectGraphError)
    {
        _ = try PostgresDialect().encode(value, as: attribute, entity: try core.entityLayout(entity).name)
    }

    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        listener.withLock { $0 }?.stop()
        advisoryLocks.close()
        pool.close()
        standbyReads?.close()
        writer.withLock { $0 = nil }
    }

    deinit { close() }
}
