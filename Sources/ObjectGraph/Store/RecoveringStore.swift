import Foundation
import Synchronization

/// A store whose files remember more than its live objects: records of objects deleted since, and
/// earlier versions of objects updated since (an SQLite store's freed pages and free space, its
/// write-ahead log's frames), and the versions of the whole store its log holds.
///
/// Optional, like ``PersistentHistoryStore``: a store type that keeps nothing of the kind does not
/// conform, and a conforming store answers only when it was opened read-only (what is read is
/// then the files as they were when the store was opened, never the files themselves).
///
/// Threading: as ``PersistentStore``.
public protocol RecoveringStore: PersistentStore {
    /// The records the store's files remember that are not its live objects, decoded with the
    /// store's model. Read once (the first call reads every page; later calls answer from
    /// memory); bounded, and cancelled when `cancelled` says so (the answer then says so too).
    func recoveredRecords(cancelled: @escaping @Sendable () -> Bool) throws(ObjectGraphError) -> RecoveredRecords

    /// The versions of the store its files hold: version 0 is the database file alone, then one
    /// per commit of its write-ahead log, in order. Only version 0 without a log.
    func storeVersions() throws(ObjectGraphError) -> [StoreVersion]

    /// A read-only store showing version `number` (made from the files as read, in a private
    /// folder of its own, removed when the store is closed).
    func openVersion(_ number: Int) throws(ObjectGraphError) -> any PersistentStore
}

extension PersistentStore {
    /// The store as a ``RecoveringStore``, seen through an ``OverlayStore`` (an evidence open's
    /// recovered records are those of the store beneath its overlay); nil when it is none.
    public var recovering: (any RecoveringStore)? {
        if let store = self as? any RecoveringStore { return store }
        return (self as? OverlayStore)?.base as? any RecoveringStore
    }
}

/// One version of a store its files hold (``RecoveringStore/storeVersions()``).
public struct StoreVersion: Sendable, Hashable {
    /// 0 for the database file alone, N for the state right after the log's commit N.
    public var number: Int
    /// The log's frames that make the commit (nil for version 0).
    public var frames: ClosedRange<Int>?
    /// The number of pages of the database in this version.
    public var pageCount: Int

    public init(number: Int, frames: ClosedRange<Int>?, pageCount: Int) {
        self.number = number
        self.frames = frames
        self.pageCount = pageCount
    }

    /// `c3`: how a version is named in folders (`MNT/.wal/c3`) and on the command line (`STORE@c3`).
    public var name: String { "c\(number)" }

    /// The version a name `cN` stands for (decimal, no sign, no leading zeros).
    public static func number(named name: String) -> Int? {
        guard name.hasPrefix("c"), name.count > 1, name.count <= 10 else { return nil }
        let digits = name.dropFirst()
        guard digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), digits == "0" || !digits.hasPrefix("0"),
            let number = Int(digits)
        else { return nil }
        return number
    }
}

/// One recovered record: the object it was a version of, as far as its bytes say, and where it
/// was found. Its values are read on demand (``RecoveredRecords/values(of:)``).
public struct RecoveredRecord: Sendable, Hashable {
    /// How the record stands against the store's live objects.
    public enum Live: String, Sendable, Hashable {
        /// No live object has its key: the object was deleted.
        case deleted
        /// A live object has its key and other values: the record is another version of it.
        case differs
        /// Its key did not survive (a free block's first bytes are overwritten).
        case unknownKey = "unknown key"
    }

    /// Its folder's name: `pN-HASH` (N its key) or `r-HASH` without a key, HASH of the entity,
    /// key and bytes, so that the name is the same whenever the same files are read.
    public var name: String
    public var entity: EntityID
    /// Its primary key, where the bytes holding it survived.
    public var key: PrimaryKey?
    /// The entity came from the table and the columns set (its Z_ENT did not survive).
    public var entityInferred: Bool
    public var live: Live
    /// Every place it was found, in the order it was found.
    public var sources: [RecoveredSource]
    /// For a record whose end was overwritten: how much of it survived (its values then hold
    /// only what survived, and ``RecoveredValues/missing`` names what was lost). Nil when whole.
    public var partial: Partial?

    /// How much of a partial record survived.
    public struct Partial: Sendable, Hashable, CustomStringConvertible {
        /// The bytes of its record (header and values) that survive.
        public var survivingBytes: Int
        /// The bytes the whole record took.
        public var length: Int

        public init(survivingBytes: Int, length: Int) {
            self.survivingBytes = survivingBytes
            self.length = length
        }

        /// `124 of 144 bytes (the rest was overwritten)`.
        public var description: String { "\(survivingBytes) of \(length) bytes (the rest was overwritten)" }
    }

    public init(
        name: String, entity: EntityID, key: PrimaryKey?, entityInferred: Bool, live: Live, sources: [RecoveredSource],
        partial: Partial? = nil
    ) {
        self.name = name
        self.entity = entity
        self.key = key
        self.entityInferred = entityInferred
        self.live = live
        self.sources = sources
        self.partial = partial
    }
}

/// Where a recovered record was found.
public struct RecoveredSource: Sendable, Hashable {
    /// `database` or `wal`.
    public var file: String
    /// The page (of the database) the bytes are a version of.
    public var page: Int
    /// The record's offset in the page.
    public var offset: Int
    /// The log's frame, for a record found in the log.
    public var frame: Int?
    /// The log's commit that frame belongs to (nil: uncommitted, or outside the log SQLite reads).
    public var commit: Int?
    /// Where in the page: `cell`, `free block`, `unallocated space`, `page content`.
    public var place: String
    /// All of it in words: `WAL frame 14 (commit 3), page 7: cell at offset 3012`.
    public var description: String

    public init(
        file: String, page: Int, offset: Int, frame: Int?, commit: Int?, place: String, description: String
    ) {
        self.file = file
        self.page = page
        self.offset = offset
        self.frame = frame
        self.commit = commit
        self.place = place
        self.description = description
    }
}

/// A recovered record's values, decoded with the store's model as a live object's are.
public struct RecoveredValues: Sendable, Hashable {
    /// Z_OPT, when it survived.
    public var version: Int64?
    public var attributes: PropertyValues<AttributeValue>
    /// To-one destinations by relationship name (the destination may or may not exist).
    public var toOne: PropertyValues<ObjectID>
    /// Attributes whose bytes did not decode as their type, with why.
    public var undecoded: [String: String]
    /// The attributes and to-ones whose values were overwritten (a partial record's), in the
    /// model's order: they have no value here, whatever the record held.
    public var missing: [String]

    public init(
        version: Int64?, attributes: PropertyValues<AttributeValue>, toOne: PropertyValues<ObjectID>,
        undecoded: [String: String] = [:], missing: [String] = []
    ) {
        self.version = version
        self.attributes = attributes
        self.toOne = toOne
        self.undecoded = undecoded
        self.missing = missing
    }
}

/// The records a store's files remember (``RecoveringStore/recoveredRecords(cancelled:)``), by
/// entity and name, with their values decoded on demand and the last few kept.
///
/// Threading: safe from any thread.
public final class RecoveredRecords: Sendable {
    /// Sorted by entity, then name.
    public let records: [RecoveredRecord]
    /// Records found but not kept (the store's bounds on memory).
    public let leftOut: Int
    /// Page versions read.
    public let pagesRead: Int
    /// The read was cancelled before the end: the records are those found until then.
    public let cancelled: Bool
    private let decode: @Sendable (Int) throws(ObjectGraphError) -> RecoveredValues
    private let decoded = Mutex<[(index: Int, values: RecoveredValues)]>([])
    /// Where each entity's records start in ``records``.
    private let ranges: [EntityID: Range<Int>]

    /// Decoded values kept for the records read last.
    private static let kept = 64

    public init(
        records: [RecoveredRecord], leftOut: Int, pagesRead: Int, cancelled: Bool,
        decode: @escaping @Sendable (Int) throws(ObjectGraphError) -> RecoveredValues
    ) {
        let sorted = records.enumerated().sorted {
            ($0.element.entity, $0.element.name) < ($1.element.entity, $1.element.name)
        }
        self.records = sorted.map(\.element)
        let original = sorted.map(\.offset)
        self.decode = { index throws(ObjectGraphError) in try decode(original[index]) }
        self.leftOut = leftOut
        self.pagesRead = pagesRead
        self.cancelled = cancelled
        var ranges: [EntityID: Range<Int>] = [:]
        var start = 0
        for (index, record) in self.records.enumerated()
        where index + 1 == self.records.count || self.records[index + 1].entity != record.entity {
            ranges[record.entity] = start..<(index + 1)
            start = index + 1
        }
        self.ranges = ranges
    }

    /// The indexes of `entity`'s records (exactly that entity's, not its subentities').
    public func indexes(of entity: EntityID) -> Range<Int> { ranges[entity] ?? 0..<0 }

    /// The index of `entity`'s record called `name`.
    public func index(of entity: EntityID, named name: String) -> Int? {
        let range = indexes(of: entity)
        var low = range.lowerBound
        var high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            if records[middle].name < name { low = middle + 1 } else { high = middle }
        }
        return low < range.upperBound && records[low].name == name ? low : nil
    }

    /// The values of record `index`, decoded now or kept from a recent read.
    public func values(of index: Int) throws(ObjectGraphError) -> RecoveredValues {
        guard index >= 0, index < records.count else {
            throw ObjectGraphError(.notFound, "no recovered record \(index)")
        }
        if let kept = decoded.withLock({ $0.first { $0.index == index }?.values }) { return kept }
        let values = try decode(index)
        decoded.withLock { list in
            list.insert((index, values), at: 0)
            if list.count > Self.kept { list.removeLast() }
        }
        return values
    }
}
