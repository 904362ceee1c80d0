import ArgumentParser
import Foundation
import Logging
import ObjectGraph

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Examine a store's health; with --fix, repair what has a safe fix.",
        discussion: """
            Reads the whole store (read-only, as `storefs info` does) and reports, per entity, its \
            objects and bytes; free pages and -wal frames; the persistent history (transactions, \
            changes, oldest, newest); orphans (to-one references and to-many members naming objects \
            that do not exist, external data files no row names, rows of unknown entities, objects \
            whose owner is gone); values that break the model; the model's source and version \
            hashes; the integrity check. Exit status: 0 healthy, 1 findings, 2 the store cannot be \
            read (or, with a repair, cannot be opened for writing: a mount writes it). \
            --fix keeps a backup beside the store (NAME.pre-doctor.EXT) unless --no-backup, then \
            nullifies dangling to-ones and removes dangling to-many members by saves (as Core Data's \
            Nullify: Z_OPT + 1, history written), removes what no save reaches, and moves \
            unreferenced external data files to NAME.quarantine/ beside the store. \
            docs/HEALTH.md explains each finding and each fix.
            """)

    @Argument(help: "The store file, or a postgresql:// URL.")
    var store: String

    @Flag(name: .long, help: "Print JSON (the keys are the interface; docs/HEALTH.md).")
    var json = false

    @Flag(name: .long, help: "Repair what has a safe fix (orphans, key counters); keeps a backup first.")
    var fix = false

    @Flag(name: .long, help: "With a repair: keep no backup.")
    var noBackup = false

    @Flag(
        name: .long,
        help: "Also delete objects whose owner is gone (orphans.unowned), with their relationships' delete rules.")
    var deleteUnowned = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Delete persistent history before transaction tN (kept) or a date (ISO 8601), as Core Data's deleteHistory(before:) does; the newest transaction always stays.",
            valueName: "tN|DATE"))
    var pruneHistoryBefore: String?

    @Flag(name: .long, help: "Give free space back (VACUUM), after everything else.")
    var vacuum = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Count more persistent history changes than N as a finding (exit 1).", valueName: "N"))
    var historyLimit: Int?

    @Option(name: .long, help: ArgumentHelp("Keys named per finding.", valueName: "N"))
    var examples = 10

    @Option(
        name: .long,
        help:
            "The model to read the store with: an Xcode .xcdatamodeld/.xcdatamodel, a compiled .momd/.mom, or another store. By default the store's own."
    )
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @OptionGroup var log: LogOptions

    /// Exit status of a store that cannot be read, or not opened for a repair.
    static let unreadable: Int32 = 2

    func validate() throws {
        guard (0...1000).contains(examples) else { throw ValidationError("--examples takes 0 to 1000") }
        if let historyLimit, historyLimit < 0 { throw ValidationError("--history-limit takes a count, 0 or more") }
        if let text = pruneHistoryBefore, HistoryCutoff(text) == nil {
            throw ValidationError(
                "--prune-history-before takes a transaction (t123) or an ISO 8601 date (2026-01-31 or 2026-01-31T12:00:00Z), not \(text)"
            )
        }
        if noBackup && !writes {
            throw ValidationError("--no-backup goes with --fix, --prune-history-before or --vacuum")
        }
        if deleteUnowned && !fix { throw ValidationError("--delete-unowned goes with --fix") }
    }

    /// Whether this run changes the store.
    private var writes: Bool { fix || deleteUnowned || pruneHistoryBefore != nil || vacuum }

    func run() throws {
        let logger = log.bootstrap()
        // A FIFO or a URL that does not parse cannot be read: exit 2 with the reason.
        let url: URL
        do {
            url = try StoreTypes.location(store)
        } catch {
            throw failure("\(StoreURL.redacting(store)) cannot be read: \(error)")
        }
        let name = StoreURL.describe(url)
        let exists: Bool
        do {
            exists = try StoreTypes.exists(url)
        } catch {
            throw failure("\(name) cannot be reached: \(error)")
        }
        guard exists else { throw failure("\(name) does not exist") }
        let given: StoreTypes.LoadedModel?
        do {
            given = try StoreTypes.loadModel(at: model, logger: logger)
        } catch {
            throw ValidationError("\(error)")
        }
        let coordinator: PersistentStoreCoordinator
        do {
            coordinator = try PersistentStoreCoordinator.open(
                at: url, types: StoreTypes.all, model: given?.model, options: StoreOptions(readOnly: !writes),
                modelDescription: given?.source, forcedType: try StoreTypes.type(named: type))
        } catch let error as ObjectGraphError where error.code == .busy {
            throw failure("\(name) was not changed: \(error.message)")
        } catch {
            throw failure("\(name) cannot be read: \(error)")
        }
        defer { coordinator.close() }
        var doctor = StoreDoctor(coordinator: coordinator)
        doctor.examples = examples
        let progress: (String) -> Void = { logger.debug("doctor: \($0)") }
        var report: HealthReport
        do {
            report = try doctor.examine(progress: progress)
        } catch {
            throw failure("\(name) cannot be read: \(error)")
        }
        var repair: (result: RepairResult, backup: String?, before: [String])?
        if writes {
            let before = findings(of: report, coordinator: coordinator, url: url, logger: logger)
            do {
                repair = try self.repair(coordinator, url: url, doctor: doctor, progress: progress)
                repair?.before = before
                report = try doctor.examine(progress: progress)
            } catch {
                printError("storefs doctor: \(name): the repair stopped: \(error)")
                if let backup = repair?.backup { printError("storefs doctor: the backup is \(backup)") }
                throw ExitCode(Self.unreadable)
            }
        }
        let hashes = Info.HashCheck(
            store: url, metadata: (try? coordinator.store.metadata()) ?? StoreMetadata(), coordinator: coordinator,
            logger: logger)
        let found = findings(of: report, coordinator: coordinator, url: url, logger: logger, hashes: hashes)
        let text = HealthReportText(
            store: name, storeType: coordinator.store.storeType, modelSource: coordinator.modelSource, hashes: hashes,
            report: report, findings: found)
        if json {
            var object = text.json
            if let repair {
                object["repair"] = text.json(of: repair.result, backup: repair.backup, before: repair.before)
            }
            let data = try JSONSerialization.data(
                withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
        } else {
            if let repair { print(text.lines(of: repair.result, backup: repair.backup, before: repair.before)) }
            print(text.lines)
        }
        if !found.isEmpty { throw ExitCode(1) }
    }

    /// The report's findings, and the model's version hashes when they differ from the store's
    /// (not for a model inferred from the schema, whose hashes are never the app's).
    private func findings(
        of report: HealthReport, coordinator: PersistentStoreCoordinator, url: URL, logger: Logger,
        hashes: Info.HashCheck? = nil
    ) -> [String] {
        var found = report.findings(historyLimit: historyLimit)
        let check =
            hashes
            ?? Info.HashCheck(
                store: url, metadata: (try? coordinator.store.metadata()) ?? StoreMetadata(), coordinator: coordinator,
                logger: logger)
        if coordinator.modelSource != .inferred, let differing = check.json["differing"] as? [String],
            !differing.isEmpty
        {
            found.append(
                "\(differing.count) entities whose version hashes differ from the store's (model.versionHashes): \(differing.joined(separator: ", "))"
            )
        }
        return found
    }

    /// Backs the store up (unless --no-backup) and repairs it as asked.
    private func repair(
        _ coordinator: PersistentStoreCoordinator, url: URL, doctor: StoreDoctor, progress: (String) -> Void
    ) throws -> (result: RepairResult, backup: String?, before: [String]) {
        let stamp = StoreBackup.stamp()
        var backup: String?
        if !noBackup {
            if let repairable = coordinator.store as? any RepairableStore,
                let made = try repairable.backUp(stamp: stamp)
            {
                backup = made
            } else if url.isFileURL {
                let type =
                    try StoreTypes.type(named: type)
                    ?? PersistentStoreCoordinator.storeType(for: url, among: StoreTypes.all)
                backup = try StoreBackup.make(of: url, type: type).path
            }
        }
        var options = RepairOptions()
        options.orphans = fix
        options.deleteUnowned = deleteUnowned
        options.pruneHistoryBefore = pruneHistoryBefore.flatMap(HistoryCutoff.init)
        options.vacuum = vacuum
        if url.isFileURL { options.quarantine = StoreBackup.quarantineFolder(for: url, stamp: stamp) }
        let result = try doctor.repair(options, progress: progress)
        return (result, backup, [])
    }

    /// Prints `message` and gives the exit status of a store that cannot be read.
    private func failure(_ message: String) -> ExitCode {
        printError("storefs doctor: \(message)")
        return ExitCode(Self.unreadable)
    }
}
