import ArgumentParser
import Foundation
import ObjectGraph
import StoreFS

/// `storefs recover STORE FILE`: applies the changes an unmount kept in a recovery file.
struct Recover: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the changes an unmount could not save, from its recovery file.",
        discussion: """
            When a mount cannot save some changes (a value the model refuses, a key another \
            process took), the unmount keeps them in a recovery file beside the store \
            (STORE.storefs-recovery-DATE.json, readable JSON) and exits 75. Fix what the file \
            names (edit it, or the store), then apply it here: every change that can be saved is, \
            each one that cannot is listed with why, and the exit status is 0 only when all were \
            saved. The store must not be mounted for writing meanwhile.
            """)

    @Argument(help: "The store the changes belong to: a file or a postgresql:// URL.")
    var store: String

    @Argument(help: "The recovery file.")
    var file: String

    @Option(name: .long, help: "The model, when the store holds none.")
    var model: String?

    @OptionGroup var log: LogOptions

    func run() throws {
        _ = log.bootstrap()
        let recovery: RecoveryFile
        do {
            recovery = try RecoveryFile.read(URL(fileURLWithPath: file))
        } catch {
            throw ValidationError(
                (error as? ObjectGraphError).map { $0.message } ?? "\(file) is not a storefs recovery file: \(error)")
        }
        let coordinator = try PersistentStoreCoordinator.open(
            at: try StoreTypes.existingStore(store), types: StoreTypes.all, model: try StoreTypes.model(at: model))
        let shown = StoreURL.redacting(store)
        defer { coordinator.close() }
        if let uuid = try? coordinator.store.metadata().storeUUID, !recovery.storeUUID.isEmpty,
            uuid != recovery.storeUUID
        {
            throw ValidationError("\(file) holds changes of store \(recovery.storeUUID), not of \(shown) (\(uuid))")
        }
        let outcome = recovery.apply(to: coordinator.newContext())
        for name in outcome.applied { print("saved \(name)") }
        for (name, reason) in outcome.failed { printError("not saved: \(name): \(reason)") }
        guard outcome.failed.isEmpty else { throw ExitCode(1) }
        print("all \(outcome.applied.count) changes of \(file) are saved in \(shown)")
    }
}
