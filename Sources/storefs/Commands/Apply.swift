import ArgumentParser
import Foundation
import ObjectGraph
import StoreFS

/// `storefs apply PATCH STORE`: replays an evidence overlay's patch on a copy of its store.
struct Apply: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay a patch from storefs overlay export on a copy of its store.",
        discussion: """
            Applies every change of PATCH to STORE in one transaction, with Core Data's \
            mechanisms as a mount's commit has them (triggers, persistent history): all of it or \
            nothing. STORE must be the store the patch was made on or a copy of it (copy the \
            -wal with the store): its UUID must match, and each value the patch changes must \
            still hold what the patch says it held ("from"); where one does not, nothing is \
            applied and the object is named (exit 1). New objects keep the keys they had in the \
            mount.
            """)

    @Argument(help: "The patch (storefs overlay export MOUNTPOINT > PATCH).")
    var patch: String

    @Argument(help: "The store to change (a file or a postgresql:// URL): a copy of the store the patch was made on.")
    var store: String

    @Option(name: .long, help: "The model, when the store holds none (the one the evidence mount was given).")
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @OptionGroup var log: LogOptions

    func run() throws {
        let logger = log.bootstrap()
        let read: OverlayPatch
        do {
            read = try OverlayPatch.read(URL(fileURLWithPath: patch))
        } catch {
            throw ValidationError(
                (error as? ObjectGraphError).map { $0.message } ?? "\(patch) is not a storefs patch: \(error)")
        }
        let url = try StoreTypes.existingStore(store)
        let shown = StoreURL.redacting(store)
        let given = try StoreTypes.loadModel(at: model, logger: logger)
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: given?.model, modelDescription: given?.source,
            forcedType: try StoreTypes.type(named: type))
        defer { coordinator.close() }
        let metadata = try coordinator.store.metadata()
        if let uuid = metadata.storeUUID, !read.storeUUID.isEmpty, uuid != read.storeUUID {
            throw ValidationError(
                "\(patch) was made on store \(read.storeUUID), not on \(shown) (\(uuid)); apply it to a copy of that store"
            )
        }
        if !read.unsaved.isEmpty {
            printError(
                "storefs apply: the patch lists \(read.unsaved.count) changes the mount could not save; they are not in it"
            )
        }
        guard !read.isEmpty else {
            print("\(patch) holds no changes; \(shown) is left as it was")
            return
        }
        do {
            try coordinator.store.save(try read.request(for: coordinator.model, metadata: metadata))
        } catch  where error.code == .conflict {
            let names = error.objects.map { "\(coordinator.model[$0.entity].name)/\($0.key)" }.joined(separator: ", ")
            printError(
                "storefs apply: nothing of \(patch) was applied: \(shown) does not hold what the patch changed at \(names) "
                    + "(the patch was applied already, or the store is not a copy of the one it was made on)")
            throw ExitCode(1)
        } catch {
            printError("storefs apply: nothing of \(patch) was applied to \(shown): \(error.message)")
            throw ExitCode(1)
        }
        print("applied \(patch) to \(shown): \(read.summary)")
    }
}
