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
    /// In the order they were recorded (the change IDs').
    public var changes: [HistoryChange]

    public init(
        number: Int64, timestamp: Date, author: String?, bundleID: String?, contextName: String?, processID: String?,
        changes: [HistoryChange]
    ) {
        self.number = number
        self.timestamp = timestamp
        self.author = author
        self.bundleID = bundleID
        self.contextName = contextName
        self.processID = processID
        self.changes = changes
    }
}

/// One object's change in a ``HistoryTransaction`` (`NSPersistentHistoryChange`).
public struct HistoryChange: Sendable, Hashable {
    /// Core Data's `NSPersistentHistoryChangeType`.
    public enum Kind: Int64, Sendable, Hashable {
        case insert = 0, update = 1, delete = 2
    }

    public var changeID: Int64
    public var kind: Kind
    public var objectID: ObjectID
    /// For an update, the properties it changed, in Core Data's slot order; a to-one's entity and
    /// order columns appear as `NAME#entity` and `NAME#order`. Empty otherwise.
    public var updatedProperties: [String]
    /// For a delete, the values of the attributes its entity preserves after deletion.
    public var tombstone: [String: AttributeValue?]

    public init(changeID: Int64, kind: Kind, objectID: ObjectID, updatedProperties: [String], tombstone: [String: AttributeValue?]) {
        self.changeID = changeID
        self.kind = kind
        self.objectID = objectID
        self.updatedProperties = updatedProperties
        self.tombstone = tombstone
    }
}
