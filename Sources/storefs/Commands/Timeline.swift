import ArgumentParser
import Foundation
import ObjectGraph
import StoreFS

struct TimelineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeline",
        abstract: "Print every dated value of a store in time order: live objects, history, recovered records.",
        discussion: """
            One event per non-nil date value of every object (Core Data's dates, stored as seconds \
            since 2001-01-01, decoded), per persistent-history transaction, and per date value of \
            every record the store's files remember (SQLite: deleted objects and earlier versions, \
            as storefs export --recovered writes them), each marked live, history or recovered. \
            jsonl (the default) and csv carry Timesketch's fields (datetime, timestamp, \
            timestamp_desc = Entity.attribute, message) and entity, object, attribute, source; \
            bodyfile is The Sleuth Kit's body file, for mactime. The store is only read.
            """)

    @Argument(help: "The store to read.")
    var store: String

    @Option(name: .long, help: "jsonl, csv or bodyfile.")
    var format: String = TimelineFormat.jsonLines.rawValue

    @Option(name: .long, help: "Only events at or after this time (ISO 8601, e.g. 2024-05-01 or 2024-05-01T10:00:00Z).")
    var since: String?

    @Option(name: .long, help: "Only events at or before this time (ISO 8601; a date alone is its whole day).")
    var until: String?

    @Option(name: .long, help: "The model to read the store with; by default its own.")
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @Flag(
        name: .long,
        help:
            "Open the store in evidence mode: nothing beside it touched; the files read are printed with their SHA-256 to standard error."
    )
    var evidence = false

    @OptionGroup var log: LogOptions

    func validate() throws {
        guard TimelineFormat(rawValue: format) != nil else {
            throw ValidationError("--format must be jsonl, csv or bodyfile, not \(format)")
        }
        if let since, Self.date(since, endOfDay: false) == nil {
            throw ValidationError("--since \(since) is not an ISO 8601 date or time")
        }
        if let until, Self.date(until, endOfDay: true) == nil {
            throw ValidationError("--until \(until) is not an ISO 8601 date or time")
        }
    }

    /// `2024-05-01` (midnight UTC, or the day's last instant for `endOfDay`) or a full ISO 8601
    /// time with an offset or `Z`.
    static func date(_ text: String, endOfDay: Bool) -> Date? {
        if text.count == 10, let day = ISO8601DateText.date(from: text + "T00:00:00Z") {
            return endOfDay ? day.addingTimeInterval(86_400 - 0.000_001) : day
        }
        return ISO8601DateText.date(from: text)
    }

    func run() throws {
        let logger = log.bootstrap()
        let opened = try StoreOpening.open(store, model: model, type: type, evidence: evidence, logger: logger)
        var closed = false
        defer { if !closed { opened.close() } }
        let coordinator = opened.coordinator
        var recovered: RecoveredRecords?
        if let recovering = coordinator.store.recovering {
            do {
                recovered = try recovering.recoveredRecords(cancelled: { false })
            } catch {
                logger.notice("\(store): its recovered records are left out (\(error.message))")
            }
        }
        let timeline = try Timeline.read(
            coordinator, since: since.flatMap { Self.date($0, endOfDay: false) },
            until: until.flatMap { Self.date($0, endOfDay: true) }, recovered: recovered)
        let writer = TimelineRecords(format: TimelineFormat(rawValue: format) ?? .jsonLines)
        var output = StandardOutput()
        writer.begin(into: &output.buffer)
        for event in timeline.events {
            writer.append(event, of: timeline, into: &output.buffer)
            try output.flushIfFull()
        }
        try output.flush()
        closed = true
        guard opened.close() else { throw ExitCode.failure }
    }
}
