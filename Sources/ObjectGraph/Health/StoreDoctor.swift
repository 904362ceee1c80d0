import Foundation

/// A store's health, as `storefs doctor` reports it (docs/HEALTH.md): what each entity holds,
/// where the bytes are, the persistent history, orphans, values that break the model, and the
/// engine's integrity check. The model's source and version hashes are the command's (it knows
/// the store's file).
///
/// Threading: a value; share it freely.
public struct HealthReport: Sendable {
    /// Objects per entity (exactly that entity, not its subentities), by name.
    public var objects: [String: Int] = [:]
    /// The engine's facts, with the orphans found (by the engine, or among the objects read).
    public var examination = StoreExamination()
    public var violations = ModelViolations()

    /// Whether the findings need a fix: orphans, values that break the model, a failed integrity
    /// check, key counters behind their rows. The history's length and free pages are facts, not
    /// findings (``findings(historyLimit:)`` makes a long history one when asked).
    public func findings(historyLimit: Int? = nil) -> [String] {
        var found: [String] = []
        let orphans = examination.orphans
        func add(_ count: Int, _ what: String) { if count > 0 { found.append("\(count) \(what)") } }
        add(orphans.toOneCount, "to-one references to objects that do not exist (orphans.toOne)")
        add(orphans.toManyCount, "to-many members naming objects that do not exist (orphans.toMany)")
        add(orphans.externalDataCount, "external data files no row names (orphans.externalData)")
        add(
            orphans.externalData?.missing ?? 0,
            "external data references whose file is missing: their values read as nil (orphans.details.externalData.missing)"
        )
        add(orphans.rowCount, "rows whose Z_ENT no entity has (orphans.rows)")
        add(orphans.unownedCount, "objects whose owner is gone (orphans.unowned)")
        add(violations.total, "values that break the model (violations)")
        add(examination.keyCounters.count, "key counters (Z_MAX) behind their rows (keyCounters)")
        if !examination.integrity.isOK {
            found.append(
                "the integrity check failed (integrity): \(examination.integrity.messages.prefix(3).joined(separator: "; "))"
            )
        }
        if let limit = historyLimit, let history = examination.history, history.changes > limit {
            found.append("\(history.changes) persistent history changes, more than --history-limit \(limit) (history)")
        }
        return found
    }
}

/// Examines and repairs a store (`storefs doctor`): the engine's facts where the store can give
/// them (``ExaminableStore``), the rest through ``PersistentStore`` and the model, so every store
/// type is examined, and repairs are saves wherever a save can express them.
///
/// Threading: used by one thread; the coordinator's store is thread-safe.
public struct StoreDoctor {
    public let coordinator: PersistentStoreCoordinator
    /// Keys named per finding.
    public var examples = 10

    public init(coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
    }

    /// Reads the whole store once and says what is wrong with it. Read-only.
    public func examine(progress: (String) -> Void = { _ in }) throws(ObjectGraphError) -> HealthReport {
        var report = HealthReport()
        let examinable = coordinator.store as? any ExaminableStore
        if let examinable {
            progress("the store's tables")
            report.examination = try examinable.examine(examples: examples)
        } else {
            report.examination.integrity = IntegrityCheck(
                checked: true, messages: ["ok"], method: "the store's file was read whole when it was opened")
            if let url = coordinator.store.url, url.isFileURL {
                var space = StoreSpace()
                space.bytes = Int64((try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0)
                space.measuredWith = "file size"
                report.examination.space = space
            }
        }
        let scan = try ObjectScan(
            coordinator: coordinator, examples: examples, findsDanglingReferences: examinable == nil
        ).run(progress: progress)
        report.objects = scan.objects
        report.violations = scan.violations
        report.examination.orphans.unowned = scan.unowned
        if examinable == nil {
            report.examination.orphans.toOne = scan.danglingToOne
            report.examination.orphans.toMany = scan.danglingToMany
        }
        return report
    }
}
