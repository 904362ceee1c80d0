import Foundation

/// Every dated thing a store holds, in time order: one event per non-nil date value of every live
/// object, one per persistent-history transaction, and one per date value of every recovered
/// record (``RecoveringStore``), each marked with where it came from.
///
/// Events are kept small (a date and the numbers that name what is dated); the words a reader sees
/// (``message(of:)``) are made when asked, from a label kept once per object (its title, name or
/// first short text), so a store of millions of dates is held in tens of megabytes.
///
/// Threading: immutable once read; safe from any thread.
public final class Timeline: Sendable {
    /// Where an event comes from.
    public enum Source: UInt8, Sendable, Hashable, Comparable {
        case live = 0, history, recovered

        public var name: String {
            switch self {
            case .live: "live"
            case .history: "history"
            case .recovered: "recovered"
            }
        }

        public static func < (a: Source, b: Source) -> Bool { a.rawValue < b.rawValue }
    }

    /// One dated value.
    public struct Event: Sendable, Hashable {
        /// Seconds since 2001-01-01 (Core Data's reference date), as stored.
        public var time: Double
        public var source: Source
        /// The object's entity (live and recovered); 0 for a transaction.
        public var entity: EntityID
        /// The object's key (live), the record's index in ``Timeline/recovered`` (recovered), the
        /// transaction's number (history).
        public var number: Int64
        /// The attribute's index in the entity's `allAttributes` (0 for a transaction).
        public var attribute: Int

        public var date: Date { Date(timeIntervalSinceReferenceDate: time) }
    }

    public let model: ManagedObjectModel
    /// Sorted by time, then source, entity, number and attribute.
    public let events: [Event]
    /// The recovered records the recovered events refer to.
    public let recovered: RecoveredRecords?
    private let labels: [Key: String]
    private let transactions: [Int64: String]

    private struct Key: Hashable {
        var source: Source
        var entity: EntityID
        var number: Int64
    }

    private init(
        model: ManagedObjectModel, events: [Event], recovered: RecoveredRecords?, labels: [Key: String],
        transactions: [Int64: String]
    ) {
        self.model = model
        self.events = events
        self.recovered = recovered
        self.labels = labels
        self.transactions = transactions
    }

    /// Objects and transactions read per store request.
    public static let pageSize = 1000
    /// Characters of a label.
    static let labelLength = 80

    /// Reads the timeline of the store `coordinator` serves: events from `since` to `until`
    /// (inclusive; all when nil). `recovered`: the store's recovered records, when they are to be
    /// included (nil leaves them out). `cancelled` is asked between pages.
    public static func read(
        _ coordinator: PersistentStoreCoordinator, since: Date? = nil, until: Date? = nil,
        recovered: RecoveredRecords? = nil, cancelled: () -> Bool = { false }
    ) throws(ObjectGraphError) -> Timeline {
        let model = coordinator.model
        let low = since?.timeIntervalSinceReferenceDate ?? -Double.infinity
        let high = until?.timeIntervalSinceReferenceDate ?? Double.infinity
        var events: [Event] = []
        var labels: [Key: String] = [:]
        func dated(_ attributes: PropertyValues<AttributeValue>, _ entity: EntityDescription) -> [(Int, Double)] {
            var result: [(Int, Double)] = []
            for (index, attribute) in entity.allAttributes.enumerated() where attribute.type == .date {
                if case .date(let date)? = attributes[attribute.name] {
                    let time = date.timeIntervalSinceReferenceDate
                    if time.isFinite, time >= low, time <= high { result.append((index, time)) }
                }
            }
            return result
        }

        // Live objects, entity by entity, a page at a time.
        for entity in model.entities where entity.allAttributes.contains(where: { $0.type == .date }) {
            var pages = ObjectRecordPages(
                coordinator: coordinator, entity: entity.id, includingSubentities: false, pageSize: pageSize)
            while let page = try pages.nextSnapshots() {
                if cancelled() { throw ObjectGraphError(.busy, "the timeline was cancelled before its end") }
                for snapshot in page {
                    let times = dated(snapshot.attributes, entity)
                    guard !times.isEmpty else { continue }
                    let key = snapshot.objectID.key.rawValue
                    for (index, time) in times {
                        events.append(
                            Event(time: time, source: .live, entity: entity.id, number: key, attribute: index))
                    }
                    if let label = label(of: snapshot.attributes, entity) {
                        labels[Key(source: .live, entity: entity.id, number: key)] = label
                    }
                }
            }
        }

        // The persistent history's transactions.
        var transactions: [Int64: String] = [:]
        if let history = coordinator.store as? any PersistentHistoryStore, history.keepsPersistentHistory {
            var after: Int64 = 0
            while true {
                if cancelled() { throw ObjectGraphError(.busy, "the timeline was cancelled before its end") }
                let page = try history.historyTransactions(after: after, limit: pageSize, includingChanges: true)
                guard let last = page.last else { break }
                for transaction in page {
                    let time = transaction.timestamp.timeIntervalSinceReferenceDate
                    guard time.isFinite, time >= low, time <= high else { continue }
                    events.append(
                        Event(
                            time: time, source: .history, entity: EntityID(0), number: transaction.number, attribute: 0)
                    )
                    transactions[transaction.number] = summary(of: transaction, model)
                }
                after = last.number
            }
        }

        // Recovered records.
        if let recovered {
            for (index, record) in recovered.records.enumerated() {
                if index % 256 == 0 && cancelled() {
                    throw ObjectGraphError(.busy, "the timeline was cancelled before its end")
                }
                guard record.entity.rawValue >= 1, record.entity.rawValue <= model.entities.count,
                    let values = try? recovered.values(of: index)
                else { continue }
                let entity = model[record.entity]
                let times = dated(values.attributes, entity)
                guard !times.isEmpty else { continue }
                for (attribute, time) in times {
                    events.append(
                        Event(
                            time: time, source: .recovered, entity: record.entity, number: Int64(index),
                            attribute: attribute))
                }
                if let label = label(of: values.attributes, entity) {
                    labels[Key(source: .recovered, entity: record.entity, number: Int64(index))] = label
                }
            }
        }

        events.sort {
            ($0.time, $0.source, $0.entity, $0.number, $0.attribute) < (
                $1.time, $1.source, $1.entity, $1.number, $1.attribute
            )
        }
        return Timeline(
            model: model, events: events, recovered: recovered, labels: labels, transactions: transactions)
    }

    // MARK: - Words

    /// The entity's name (`Transaction` for a transaction).
    public func entityName(of event: Event) -> String {
        event.source == .history ? "Transaction" : model[event.entity].name
    }

    /// The attribute's name (`timestamp` for a transaction).
    public func attributeName(of event: Event) -> String {
        event.source == .history ? "timestamp" : model[event.entity].allAttributes[event.attribute].name
    }

    /// What the event is about: `p12` (a live object), a recovered record's folder name, `t5` (a
    /// transaction).
    public func objectName(of event: Event) -> String {
        switch event.source {
        case .live: "p\(event.number)"
        case .history: "t\(event.number)"
        case .recovered: recovered.map { $0.records[Int(event.number)].name } ?? "r\(event.number)"
        }
    }

    /// `Entity.attribute`: Timesketch's timestamp_desc.
    public func description(of event: Event) -> String { "\(entityName(of: event)).\(attributeName(of: event))" }

    /// A sentence for a reader: `ICNote p12 modificationDate: "Groceries"`, `recovered ICNote
    /// r-1a2b3c4d (deleted) creationDate: "Old note"`, `transaction t5 by Notes: 2 inserted, 1 updated`.
    public func message(of event: Event) -> String {
        switch event.source {
        case .history:
            return "transaction t\(event.number)" + (transactions[event.number].map { " " + $0 } ?? "")
        case .live, .recovered:
            var text = event.source == .recovered ? "recovered " : ""
            text += "\(entityName(of: event)) \(objectName(of: event))"
            if event.source == .recovered, let record = recovered?.records[Int(event.number)] {
                text += " (\(record.live.rawValue))"
            }
            text += " \(attributeName(of: event))"
            if let label = labels[Key(source: event.source, entity: event.entity, number: event.number)] {
                text += ": \"\(label)\""
            }
            return text
        }
    }

    /// The label of an object: the first of its title, name, subject or displayName that holds
    /// text, else its first short text.
    private static func label(of attributes: PropertyValues<AttributeValue>, _ entity: EntityDescription) -> String? {
        let preferred = ["title", "name", "subject", "displayName", "summary", "text"]
        var candidates: [String] = []
        for name in preferred { if case .string(let text)? = attributes[name] { candidates.append(text) } }
        for attribute in entity.allAttributes where attribute.type == .string {
            if case .string(let text)? = attributes[attribute.name], text.count <= 200 { candidates.append(text) }
        }
        guard let first = candidates.first(where: { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty })
        else { return nil }
        let line = first.split(whereSeparator: \.isNewline).first.map(String.init) ?? first
        return line.count > labelLength ? String(line.prefix(labelLength)) + "…" : line
    }

    private static func summary(of transaction: HistoryTransaction, _ model: ManagedObjectModel) -> String {
        var parts: [String] = []
        if let author = transaction.author { parts.append("by \(author)") }
        if let bundle = transaction.bundleID { parts.append("(\(bundle))") }
        var counts: [String] = []
        for (kind, word) in [(HistoryChange.Kind.insert, "inserted"), (.update, "updated"), (.delete, "deleted")] {
            let count = transaction.changes.count { $0.kind == kind }
            if count > 0 { counts.append("\(count) \(word)") }
        }
        let text = parts.joined(separator: " ")
        return counts.isEmpty ? text : (text.isEmpty ? "" : text + ": ") + counts.joined(separator: ", ")
    }
}
