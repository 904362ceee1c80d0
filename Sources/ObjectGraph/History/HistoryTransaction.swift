import Foundation

/// One transaction of Core Data's persistent history, as an app reads it
/// (`NSPersistentHistoryTransaction`): who saved, when, and the changes of that save.
///
/// Threading: a value; share it freely.
public struct HistoryTransaction: Sendable, Hashable {
    /// The transaction's number (its key; what a history token holds).
    public var number: Int64
    public var timestamp: Date
    public var author: String?
    public var bundleID: String?
    public var contextName: String?
    public var processID: String?
    /// In the order they were recorded (the change IDs'); empty when they were not asked for
    /// (``PersistentHistoryStore/historyTransactions(after:limit:includingChanges:)``).
    public var changes: [HistoryChange]

    public init(
        number: Int64, timestamp: Date, author: String? = nil, bundleID: String? = nil, contextName: String? = nil,
        processID: String? = nil, changes: [HistoryChange] = []
    ) {
        self.number = number
        self.timestamp = timestamp
        self.author = author
        self.bundleID = bundleID
        self.contextName = contextName
        self.processID = processID
        self.changes = changes
    }

    /// The earliest and the latest timestamps a transaction can show: years 0001 to 9999, what
    /// ISO 8601's four-digit years, a file's time (`struct timespec`) and every tool reading them
    /// hold. In seconds since 2001-01-01 (Core Data's `ZTIMESTAMP`).
    public static let timestampRange: ClosedRange<Double> = -63_113_904_000...252_423_993_599.999

    /// A `ZTIMESTAMP` read from a store as a date: a damaged one (not finite, or outside
    /// ``timestampRange``: 1e20, 1e308, infinity, NaN) reads as 2001-01-01T00:00:00Z, as a
    /// timestamp that is not a number does (docs/SEMANTICS.md, Persistent history), so no
    /// conversion further on (a file's time, its text) meets a number it cannot hold.
    public static func timestamp(secondsSinceReferenceDate seconds: Double) -> Date {
        Date(timeIntervalSinceReferenceDate: timestampRange.contains(seconds) ? seconds : 0)
    }
}

/// One object's change in a ``HistoryTransaction`` (`NSPersistentHistoryChange`).
///
/// Threading: a value; share it freely.
public struct HistoryChange: Sendable, Hashable {
    /// Core Data's `NSPersistentHistoryChangeType`.
    public enum Kind: Int64, Sendable, Hashable {
        case insert = 0, update = 1, delete = 2
    }

    public var changeID: Int64
    public var kind: Kind
    public var objectID: ObjectID
    /// For an update, the slots its `ZCOLUMNS` marks, in Core Data's slot order; a to-one's entity
    /// and order columns appear as `NAME#entity` and `NAME#order`, and a mask that does not fit the
    /// model as one `<N bytes that do not fit the model>`. Empty otherwise.
    public var updatedProperties: [String]
    /// For a delete, the values of the attributes its entity preserves after deletion (nil: the
    /// tombstone holds none, or one that does not decode as the attribute's type).
    public var tombstone: [String: AttributeValue?]

    public init(
        changeID: Int64, kind: Kind, objectID: ObjectID, updatedProperties: [String] = [],
        tombstone: [String: AttributeValue?] = [:]
    ) {
        self.changeID = changeID
        self.kind = kind
        self.objectID = objectID
        self.updatedProperties = updatedProperties
        self.tombstone = tombstone
    }

    /// The properties an update changed, each once, in slot order: ``updatedProperties`` with a
    /// to-one's entity and order slots folded into the relationship (what
    /// `NSPersistentHistoryChange.updatedProperties` names).
    public var changedProperties: [String] {
        var seen: Set<String> = []
        var names: [String] = []
        for slot in updatedProperties {
            let name = slot.hasPrefix("<") ? slot : String(slot.prefix { $0 != "#" })
            if seen.insert(name).inserted { names.append(name) }
        }
        return names
    }
}
