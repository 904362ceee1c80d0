import ArgumentParser
import Foundation
import ObjectGraph
import StoreFS

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a store's persistent history: its transactions and their changes.",
        discussion: """
            Core Data's persistent history, as apps that track it record it (Notes, Photos, SwiftData \
            stores): each transaction's number, time, author, bundle ID, process and context name, then \
            the objects it inserted, updated (with the properties it changed) and deleted (with the \
            values their tombstones keep). Transactions are read in pages, so a history of any length \
            prints in bounded memory. A store that keeps no history (other store types, SQLite \
            stores whose app does not track it) is an error.
            """)

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Only the transactions numbered above N (the last number a previous run printed).", valueName: "N"))
    var since: Int64 = 0

    @Flag(name: .long, help: "Print one JSON object per transaction per line (JSON Lines).")
    var json = false

    @Option(
        name: .long,
        help:
            "The model to read the store with: an Xcode .xcdatamodeld/.xcdatamodel, a compiled .momd/.mom, or another store. By default the store's own."
    )
    var model: String?

    @Option(name: .long, help: "The store's type (sqlite, xml, binary) when its suffix does not say.")
    var type: String?

    @Argument(help: "The store file, or a postgresql:// URL.")
    var store: String

    @OptionGroup var log: LogOptions

    /// Transactions read per store request: large enough that requests cost little, small enough
    /// that a page (with its changes) stays a few megabytes.
    static let pageSize = 500

    func run() throws {
        let logger = log.bootstrap()
        let url = try StoreTypes.existingStore(store)
        let given = try StoreTypes.loadModel(at: model, logger: logger)
        let coordinator = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: given?.model, options: StoreOptions(readOnly: true),
            modelDescription: given?.source, forcedType: try StoreTypes.type(named: type))
        defer { coordinator.close() }
        guard let history = coordinator.store as? any PersistentHistoryStore, history.keepsPersistentHistory else {
            throw ObjectGraphError(
                .unsupported,
                "\(StoreURL.describe(url)) keeps no persistent history (\(coordinator.store.storeType) store"
                    + (coordinator.store is any PersistentHistoryStore ? " without history tables" : "s have none")
                    + ")")
        }
        let uuid = json ? try coordinator.store.metadata().storeUUID : nil
        var after = since
        // A failed write (a full disk) is an error with its reason, as in export and diff.
        var output = StandardOutput()
        while true {
            let page = try history.historyTransactions(after: after, limit: Self.pageSize, includingChanges: true)
            // Numbers only go up; a page that does not (a damaged store) ends the listing.
            guard let last = page.last, last.number > after else { break }
            for transaction in page {
                let text =
                    json
                    ? HistoryText.jsonLine(of: transaction, model: coordinator.model, storeUUID: uuid)
                    : HistoryText.text(of: transaction, model: coordinator.model)
                output.buffer.append(contentsOf: text.utf8)
                try output.flushIfFull()
            }
            after = last.number
        }
        try output.flush()
    }
}
