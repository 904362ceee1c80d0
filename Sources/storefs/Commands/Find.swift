import ArgumentParser
import Devices
import Foundation
import Logging
import ObjectGraph

/// `storefs find PATH`: every Core Data store under a folder or an iOS backup, found by content.
struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List every Core Data store under a folder or an iOS backup, found by content at any depth.",
        discussion: """
            Stores are recognized by what they hold, not by their names: SQLite files with Core \
            Data's tables (Z_PRIMARYKEY, Z_METADATA), XML and binary stores by their signatures. \
            In an iOS backup (a folder with Manifest.db or Manifest.mbdb) paths are DOMAIN/RELATIVE/PATH. \
            For each store: its path, type, where its model comes from, entity and object counts, and \
            (SQLite) frames in its -wal, pages on its freelist, persistent history transactions. \
            Nothing is written: stores are read from private copies. A store that does not open is \
            listed with the reason; the exit status is 0 when the walk finished.
            """)

    @Flag(name: .long, help: "One JSON object per store, one per line.")
    var json = false

    @Flag(name: .long, help: "Only the paths and types: do not open the stores.")
    var quick = false

    @Argument(help: "A folder (an app container, a simulator's Devices folder, an extraction) or an iOS backup folder.")
    var path: String

    @OptionGroup var log: LogOptions

    func run() throws {
        let logger = log.bootstrap(destination: .standardError)
        let url = URL(fileURLWithPath: path)
        let tree: any DeviceTree
        do {
            tree = BackupTree.isBackup(url) ? try BackupTree.open(url) : try DirectoryTree(folder: url)
        } catch {
            throw ValidationError(error.message)
        }
        logger.debug("\(tree.summary)")
        let view = DeviceView(tree: tree, types: StoreTypes.all)
        var found = 0
        view.stores(problem: { printError("storefs find: \($0)") }) { store in
            found += 1
            let report = quick ? StoreReport(path: store.path, type: store.type.name) : Self.report(store, tree: tree)
            print(json ? report.json : report.text)
            return true
        }
        if !json { printError("storefs find: \(found) stores in \(tree.summary)") }
    }

    /// What `find` says about one store.
    struct StoreReport {
        var path: String
        var type: String
        var model: String?
        var entities: Int?
        var objects: Int?
        var facts: SQLiteFileFacts?
        var error: String?

        var text: String {
            var parts = [path, type]
            if let error { return (parts + ["error: \(error)"]).joined(separator: "\t") }
            if let model { parts.append("model: \(model)") }
            if let entities { parts.append("\(entities) entities") }
            if let objects { parts.append("\(objects) objects") }
            if let facts {
                parts.append("wal: \(facts.walFrames) frames")
                parts.append("freelist: \(facts.freelistPages) pages")
                parts.append("history: " + (facts.historyTransactions.map { "\($0) transactions" } ?? "none"))
            }
            return parts.joined(separator: "\t")
        }

        var json: String {
            var object: [String: Any] = ["path": path, "type": type]
            if let model { object["model"] = model }
            if let entities { object["entities"] = entities }
            if let objects { object["objects"] = objects }
            if let facts {
                object["walFrames"] = facts.walFrames
                object["uncommittedWalFrames"] = facts.uncommittedFrames
                object["freelistPages"] = facts.freelistPages
                object["historyTransactions"] = facts.historyTransactions ?? NSNull()
            }
            if let error { object["error"] = error }
            guard
                let data = try? JSONSerialization.data(
                    withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            else {
                return "{}"
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// Opens the store read-only (a private copy) for its model and counts.
    static func report(_ store: DeviceView.FoundStore, tree: any DeviceTree) -> StoreReport {
        var report = StoreReport(path: store.path, type: store.type.name)
        let location: StoreLocation
        do {
            location = try tree.storeLocation(at: store.path)
        } catch {
            report.error = error.message
            return report
        }
        defer { location.remove() }
        if store.type.name.lowercased() == "sqlite" { report.facts = SQLiteFileFacts.read(store: location.url) }
        do {
            let coordinator = try PersistentStoreCoordinator.open(
                at: location.url, types: StoreTypes.all, options: StoreOptions(readOnly: true), forcedType: store.type)
            defer { coordinator.close() }
            report.model = coordinator.modelSource.description
            report.entities = coordinator.model.entities.count
            var objects = 0
            for entity in coordinator.model.entities {
                objects += try coordinator.store.count(of: entity.id)
            }
            report.objects = objects
        } catch {
            report.error = error.message
        }
        return report
    }
}
