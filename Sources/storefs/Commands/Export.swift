import ArgumentParser
import Foundation
import ObjectGraph
import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a store's objects to stdout as JSON Lines, JSON or CSV.",
        discussion: """
            Each object is its entity (@entity), its object URI (@uri) and every attribute and \
            relationship: attributes as the text its file shows (binary values in base64), \
            relationships as object URIs. Without --entity every object of the store is written, \
            entity by entity; with it, the entity's objects and its subentities'. --where selects \
            objects with a predicate (Core Data's syntax: key paths through relationships, ANY/ALL/NONE, \
            @count/@sum/@avg/@min/@max, CONTAINS[cd], BEGINSWITH, ENDSWITH, LIKE, MATCHES, BETWEEN, IN, \
            nil, dates as CAST("2024-05-01T00:00:00Z", "NSDate")), evaluated in SQL on SQLite stores. \
            The store is only read; objects are read a page at a time, so memory stays bounded.
            """)

    @Argument(help: "The store to read: a file or a postgresql:// URL.")
    var store: String

    @Option(name: .long, help: "The entity whose objects (and subentities' objects) to write; all entities by default.")
    var entity: String?

    @Option(name: .customLong("where"), help: "A predicate the objects must match (needs --entity).")
    var predicate: String?

    @Option(name: .long, help: "jsonl (one object per line, the default), json (one array) or csv (needs --entity).")
    var format: String = ObjectRecordFormat.jsonLines.rawValue

    @Option(
        name: .long,
        help: "The model to read the store with (Xcode model, compiled model or store); by default its own.")
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @Flag(
        name: .long,
        help:
            "Open the store in evidence mode: nothing beside it touched; the files read are printed with their SHA-256 to standard error."
    )
    var evidence = false

    @Option(
        name: .customLong("query-time"),
        help: "Seconds one page of --where may take (default 10); past it export stops with the reason.")
    var queryTime: String?

    @Option(
        name: .customLong("query-rows"),
        help: "Rows and values one page of --where may visit (default 20000000).")
    var queryRows: String?

    @Option(name: .customLong("query-memory"), help: "MiB of values one page of --where may hold (default 256).")
    var queryMemory: String?

    @Flag(
        name: .long,
        help:
            "Write the records the store's files remember instead of its objects (deleted objects, earlier versions: docs/FORENSICS.md), as JSON Lines."
    )
    var recovered = false

    @OptionGroup var log: LogOptions

    /// What one evaluation of --where may cost: the mount's defaults, as the options say.
    func queryLimits() throws -> QueryLimits {
        var limits = QueryLimits()
        for (name, value) in [("query_time", queryTime), ("query_rows", queryRows), ("query_memory", queryMemory)] {
            guard let value else { continue }
            do {
                try MountConfiguration.setQueryLimit(name, value, in: &limits)
            } catch {
                throw ValidationError("--\(name.replacingOccurrences(of: "_", with: "-")): \(error)")
            }
        }
        return limits
    }

    /// Objects read per store request: a page of rows, then one request per to-many relationship.
    static let pageSize = 1000

    func validate() throws {
        if recovered && (format != ObjectRecordFormat.jsonLines.rawValue || predicate != nil) {
            throw ValidationError("--recovered writes JSON Lines of every recovered record: no --format or --where")
        }
        guard ObjectRecordFormat(rawValue: format) != nil else {
            throw ValidationError("--format must be jsonl, json or csv, not \(format)")
        }
        if predicate != nil && entity == nil {
            throw ValidationError("--where needs --entity: a predicate's keys are an entity's")
        }
        _ = try queryLimits()
        if format == ObjectRecordFormat.csv.rawValue && entity == nil {
            throw ValidationError(
                "--format csv needs --entity: CSV has one header row, so it holds one entity's objects")
        }
    }

    func run() throws {
        let logger = log.bootstrap()
        let opened = try StoreOpening.open(store, model: model, type: type, evidence: evidence, logger: logger)
        var closed = false
        defer { if !closed { opened.close() } }
        let coordinator = opened.coordinator
        let model = coordinator.model
        if recovered {
            try exportRecovered(coordinator)
            closed = true
            guard opened.close() else { throw ExitCode.failure }
            return
        }

        var entities: [(id: EntityID, includingSubentities: Bool)] = model.entities.map { ($0.id, false) }
        var parsed: ObjectGraph.Predicate?
        if let entity {
            guard let id = model.entityID(named: entity) else {
                let names = model.entities.map(\.name).sorted().joined(separator: ", ")
                throw ValidationError("the store's model has no entity \(entity) (it has \(names))")
            }
            entities = [(id, true)]
            if let predicate {
                do throws(ObjectGraphError) {
                    let checked = try PredicateParser.parse(predicate)
                    try PredicateChecker.check(checked, for: id, in: model)
                    parsed = checked
                } catch {
                    throw ValidationError("--where: \(error.message)")
                }
            }
        }
        let format = ObjectRecordFormat(rawValue: format) ?? .jsonLines
        var writer = try ObjectRecords(
            format: format, model: model, storeUUID: try coordinator.store.metadata().storeUUID ?? "",
            entity: entities.count == 1 && entity != nil ? entities[0].id : nil)

        let limits = try queryLimits()
        let subject = "--where \(predicate ?? "")"
        var progress = ProgressBar(label: "export", unit: "objects")
        var total = 0
        if progress.enabled {
            // Only for the bar: counting costs a query (a COUNT(*) in SQL, no rows read).
            let context = coordinator.newContext()
            for (id, subentities) in entities {
                total +=
                    try parsed.map { (predicate) throws(ObjectGraphError) in
                        try QueryBudget(limits: limits, subject: subject).run { () throws(ObjectGraphError) in
                            try context.count(matching: predicate, of: id, includingSubentities: subentities)
                        }
                    }
                    ?? (subentities ? model.entityAndSubentities(of: id) : [id]).reduce(0) {
                        $0 + (try coordinator.store.count(of: $1))
                    }
            }
        }
        var output = StandardOutput()
        writer.begin(into: &output.buffer)
        for (id, subentities) in entities {
            // Pages are read ahead (rows and relationships, a thread each) while this one formats
            // and writes.
            var reading = ObjectRecordPages(
                coordinator: coordinator, entity: id, includingSubentities: subentities, matching: parsed,
                pageSize: Self.pageSize)
            reading.queryLimits = limits
            reading.querySubject = subject
            let pages = ObjectRecordReadAhead(reading)
            while let page = try pages.next() {
                for record in page { writer.append(record, into: &output.buffer) }
                try output.flushIfFull()
                progress.update(writer.count, of: max(total, writer.count))
            }
        }
        writer.end(into: &output.buffer)
        try output.flush()
        progress.update(writer.count, of: writer.count)
        progress.end()
        closed = true
        guard opened.close() else { throw ExitCode.failure }
    }

    /// `--recovered`: every recovered record (of `--entity` and its subentities when given).
    private func exportRecovered(_ coordinator: PersistentStoreCoordinator) throws {
        guard let store = coordinator.store.recovering else {
            throw ValidationError(
                "\(self.store) is not a store whose files can be read for what they remember (SQLite)")
        }
        let records = try store.recoveredRecords(cancelled: { false })
        var entities: Set<EntityID>?
        if let entity {
            guard let id = coordinator.model.entityID(named: entity) else {
                throw ValidationError("the store's model has no entity \(entity)")
            }
            entities = Set(coordinator.model.entityAndSubentities(of: id))
        }
        let writer = RecoveredRecordLines(
            model: coordinator.model, storeUUID: try coordinator.store.metadata().storeUUID ?? "")
        var output = StandardOutput()
        for index in records.records.indices where entities?.contains(records.records[index].entity) ?? true {
            try writer.append(records, index, into: &output.buffer)
            try output.flushIfFull()
        }
        try output.flush()
        if records.leftOut > 0 {
            printError(
                "storefs export: \(records.leftOut) more recovered records were found than storefs keeps; they are left out"
            )
        }
    }
}
