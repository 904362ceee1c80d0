import Foundation

/// What a store's engine can say about its own health that objects read through the model
/// cannot: where the bytes are, how long its persistent history is, rows and references the model
/// has no object for, and the engine's own integrity check (`storefs doctor`, docs/HEALTH.md).
///
/// Optional: a store type that does not conform is examined through ``PersistentStore`` alone
/// (``StoreDoctor`` finds dangling references among the objects it reads). The SQL behind each
/// answer is kept in one place per engine (`SQLiteStore/Health/`, `PostgresStore+Health.swift`)
/// so that it can move into a relational core shared by both.
///
/// Threading: as ``PersistentStore``: safe from several threads, blocking, so called from plain
/// threads. Every method reads a bounded number of statements whatever the store's size (one per
/// table, relationship or column examined).
public protocol ExaminableStore: PersistentStore {
    /// The engine's facts about the store, each finding with up to `examples` keys.
    func examine(examples: Int) throws(ObjectGraphError) -> StoreExamination

    /// Up to `limit` to-one references that name an object that does not exist, by the object
    /// that holds them (which does), the relationship and the key they name.
    func danglingToOnes(limit: Int) throws(ObjectGraphError) -> [DanglingReference]

    /// Up to `limit` members of to-many relationships (join-table rows, hidden key columns) whose
    /// one end exists and whose other end does not, by the end that exists, the relationship as
    /// seen from it, and the key of the missing end.
    func danglingToManyMembers(limit: Int) throws(ObjectGraphError) -> [DanglingReference]
}

/// What `storefs doctor --fix` asks of an engine beyond saves (``PersistentStore/save(_:)``
/// applies every fix it can express: a nullified to-one, a removed member, a deleted object).
///
/// Threading: as ``PersistentStore``; called with the store open for writing (and, for a store
/// file, its ``StoreLock`` held).
public protocol RepairableStore: ExaminableStore {
    /// Sets to-one `references` to nil where a save cannot (the key is below 1, or the entity
    /// column names no entity): the key column, its entity and order columns, with `Z_OPT + 1`.
    /// Returns the rows changed.
    func clearDanglingToOnes(_ references: [DanglingReference]) throws(ObjectGraphError) -> Int

    /// Removes what names missing objects and that no save of an existing object can reach: join
    /// rows both of whose ends are missing, and hidden to-many keys naming a missing source.
    func removeUnreachableReferences() throws(ObjectGraphError) -> UnreachableRemoval

    /// Deletes persistent history before `cutoff` as Core Data's
    /// `NSPersistentHistoryChangeRequest.deleteHistory(before:)` does: the transactions, their
    /// changes (tombstones are columns of changes) and the strings no remaining transaction
    /// names. The newest transaction is always kept, so the store still shows that its app
    /// tracks history.
    func pruneHistory(before cutoff: HistoryCutoff) throws(ObjectGraphError) -> HistoryPruning

    /// Gives free space back (SQLite: `VACUUM`; PostgreSQL: `VACUUM` of the store's tables).
    func reclaimSpace() throws(ObjectGraphError)

    /// Roots whose key counter (Z_MAX) is below a key a row holds (``StoreExamination/keyCounters``).
    func examineKeyCounters() throws(ObjectGraphError) -> [KeyCounterFinding]

    /// The external data files no row names, read now (``OrphanFindings/externalData``); nil for
    /// a store that keeps no external data.
    func unreferencedExternalData() throws(ObjectGraphError) -> ExternalDataFindings?

    /// Keeps a copy of the store beside it, for stores that are not files (a file store's copy is
    /// made by ``StoreDoctor`` from its file); returns where, for the user. Nil: no such copy
    /// (the doctor copies the file).
    func backUp(stamp: String) throws(ObjectGraphError) -> String?
}

extension RepairableStore {
    public func backUp(stamp: String) throws(ObjectGraphError) -> String? { nil }
    public func examineKeyCounters() throws(ObjectGraphError) -> [KeyCounterFinding] { [] }
    public func unreferencedExternalData() throws(ObjectGraphError) -> ExternalDataFindings? { nil }
}

/// A reference to an object that does not exist: `object` (which exists) names key `missing`
/// through `relationship`.
public struct DanglingReference: Sendable, Hashable {
    public var object: ObjectID
    public var relationship: String
    /// The missing end, as the relationship's destination entity and the key it names.
    public var missing: ObjectID

    public init(object: ObjectID, relationship: String, missing: ObjectID) {
        self.object = object
        self.relationship = relationship
        self.missing = missing
    }
}

/// A cut-off for ``RepairableStore/pruneHistory(before:)``: transactions numbered below a
/// transaction (`tN`: tN itself stays), or made before a date.
public enum HistoryCutoff: Sendable, Hashable, CustomStringConvertible {
    case transaction(Int64)
    case date(Date)

    /// `t123` or an ISO 8601 date (`2026-01-31`, `2026-01-31T12:00:00Z`); nil for anything else.
    public init?(_ text: String) {
        if text.hasPrefix("t"), let number = Int64(text.dropFirst()), number > 0 {
            self = .transaction(number)
            return
        }
        let full = text.count == 10 ? text + "T00:00:00Z" : text
        guard let date = ISO8601DateText.date(from: full) else { return nil }
        self = .date(date)
    }

    public var description: String {
        switch self {
        case .transaction(let number): "t\(number)"
        case .date(let date): ISO8601DateText.text(of: date)
        }
    }
}

/// What ``RepairableStore/pruneHistory(before:)`` deleted.
public struct HistoryPruning: Sendable, Hashable {
    public var transactions = 0
    public var changes = 0
    public var strings = 0
    public init() {}
}

/// What ``RepairableStore/removeUnreachableReferences()`` removed.
public struct UnreachableRemoval: Sendable, Hashable {
    /// Join-table rows removed.
    public var joinRows = 0
    /// Hidden to-many key columns cleared.
    public var foreignKeys = 0
    public init() {}
}

/// The engine's facts about a store (``ExaminableStore/examine(examples:)``).
public struct StoreExamination: Sendable {
    public var space: StoreSpace?
    /// Bytes of each entity's rows, where the engine can tell (SQLite: its table's pages from
    /// `dbstat`, shared among the entities of one table by their rows).
    public var entityBytes: [String: Int64] = [:]
    /// The persistent history; nil when the store keeps none.
    public var history: HistorySummary?
    public var orphans = OrphanFindings()
    public var integrity = IntegrityCheck(checked: false)
    /// Roots whose key counter (Z_MAX) is below a key a row holds: new objects would get keys
    /// that exist.
    public var keyCounters: [KeyCounterFinding] = []

    public init() {}
}

/// Where a store's bytes are.
public struct StoreSpace: Sendable {
    /// The store file (or, on a server, the store's tables and indexes) in bytes.
    public var bytes: Int64 = 0
    /// SQLite: the -wal file's bytes and the frames it holds (committed or not).
    public var walBytes: Int64?
    public var walFrames: Int?
    public var pageSize: Int?
    public var pages: Int?
    /// SQLite: pages on the freelist (free space a `VACUUM` gives back).
    public var freelistPages: Int?
    /// Bytes per table with its indexes.
    public var tables: [String: Int64] = [:]
    /// How the bytes were measured (`dbstat`, `pg_total_relation_size`, `file size`).
    public var measuredWith = ""

    public init() {}
}

/// The length of a store's persistent history.
public struct HistorySummary: Sendable, Hashable {
    public var transactions = 0
    public var changes = 0
    /// Interned strings (author, bundle, process and context names).
    public var strings = 0
    public var firstTransaction: Int64?
    public var lastTransaction: Int64?
    public var oldest: Date?
    public var newest: Date?
    /// Changes whose transaction does not exist (left by a deletion of transactions alone).
    public var changesWithoutTransaction = 0
    /// Bytes the history tables take, where the engine can tell.
    public var bytes: Int64?

    public init() {}
}

/// One kind of dangling reference in one relationship: how many, and a few of the objects that
/// hold one (or, for join rows with no end left, the keys they name).
public struct ReferenceGroup: Sendable, Hashable {
    public var entity: String
    public var relationship: String
    public var count: Int
    public var examples: [Int64]
    /// Where the engine keeps the references (`ZITEM` in `ZHISTORYITEMCONTENT`, join table `Z_1TAGS`).
    public var place: String

    public init(entity: String, relationship: String, count: Int, examples: [Int64], place: String = "") {
        self.entity = entity
        self.relationship = relationship
        self.count = count
        self.examples = examples
        self.place = place
    }
}

/// Rows of an entity table whose Z_ENT names no entity of the model.
public struct UnknownEntityRows: Sendable, Hashable {
    public var table: String
    public var zent: Int64
    public var count: Int
    public var examples: [Int64]

    public init(table: String, zent: Int64, count: Int, examples: [Int64]) {
        self.table = table
        self.zent = zent
        self.count = count
        self.examples = examples
    }
}

/// External data files (SQLite's `.NAME_SUPPORT/_EXTERNAL_DATA`) that no row names, and
/// references whose file is missing.
public struct ExternalDataFindings: Sendable, Hashable {
    public var folder: URL
    /// Every file no row names, with its size: what `--fix` moves to quarantine.
    public var unreferenced: [ExternalFile] = []
    /// Files the folder holds in all.
    public var files = 0
    /// References (rows) whose file is missing; their values read as nil.
    public var missing = 0

    public init(folder: URL) { self.folder = folder }

    public struct ExternalFile: Sendable, Hashable {
        public var name: String
        public var bytes: Int64
        public init(name: String, bytes: Int64) {
            self.name = name
            self.bytes = bytes
        }
    }
}

/// References and rows with no object behind them (docs/HEALTH.md, "Orphans").
public struct OrphanFindings: Sendable {
    /// To-one references naming objects that do not exist.
    public var toOne: [ReferenceGroup] = []
    /// To-many members (join rows, hidden key columns) naming objects that do not exist.
    public var toMany: [ReferenceGroup] = []
    /// Rows whose Z_ENT no entity has.
    public var rows: [UnknownEntityRows] = []
    public var externalData: ExternalDataFindings?
    /// Objects whose owner is gone: the to-one to an entity that deletes them with it (its
    /// inverse's rule is Cascade) is nil (the orphans of Maccy's store, docs/HEALTH.md).
    public var unowned: [ReferenceGroup] = []

    public init() {}

    public var toOneCount: Int { toOne.reduce(0) { $0 + $1.count } }
    public var toManyCount: Int { toMany.reduce(0) { $0 + $1.count } }
    public var rowCount: Int { rows.reduce(0) { $0 + $1.count } }
    public var externalDataCount: Int { externalData?.unreferenced.count ?? 0 }
    public var unownedCount: Int { unowned.reduce(0) { $0 + $1.count } }
}

/// The engine's own check of its file.
public struct IntegrityCheck: Sendable, Hashable {
    /// Whether a check ran (PostgreSQL keeps its pages itself: none is run).
    public var checked: Bool
    /// The check's messages: `ok` alone when the file is sound.
    public var messages: [String] = []
    /// What was checked, or why nothing was.
    public var method = ""

    public init(checked: Bool, messages: [String] = [], method: String = "") {
        self.checked = checked
        self.messages = messages
        self.method = method
    }

    public var isOK: Bool { !checked || messages == ["ok"] }
}

/// A root entity whose key counter is behind its rows.
public struct KeyCounterFinding: Sendable, Hashable {
    public var entity: String
    /// Z_MAX as stored.
    public var counter: Int64
    /// The highest key a row holds.
    public var highestKey: Int64

    public init(entity: String, counter: Int64, highestKey: Int64) {
        self.entity = entity
        self.counter = counter
        self.highestKey = highestKey
    }
}
