import Foundation
import ObjectGraph

#if canImport(Glibc)
import Glibc
#endif

/// What every fuzz target shares: a scratch folder of its own, files written from the input, and
/// a walk over an open store that reads what `storefs info` and a read-only mount read.
///
/// The targets swallow every thrown error: a clear error is the right answer to a bad input, and
/// libFuzzer looks only for crashes (traps, sanitizer reports), hangs (`-timeout`) and runaway
/// memory (`-rss_limit_mb`). Each target runs inputs one at a time on libFuzzer's thread.
enum FuzzSupport {
    /// A folder of this process's own, made once (libFuzzer's fork and jobs modes run several
    /// processes side by side).
    static let scratch: URL = {
        let base = ProcessInfo.processInfo.environment["FUZZ_SCRATCH"] ?? NSTemporaryDirectory()
        let url = URL(fileURLWithPath: base).appendingPathComponent("storefs-fuzz-\(getpid())", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// Writes `bytes` to `name` in the scratch folder, removing what an earlier input left beside
    /// it (SQLite's -wal, -shm and -journal files).
    static func file(named name: String, _ bytes: UnsafeRawBufferPointer) -> URL {
        let url = scratch.appendingPathComponent(name)
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(url.path + suffix) }
        _ = FileManager.default.createFile(atPath: url.path, contents: Data(bytes))
        return url
    }

    /// Dates the store's files a minute back: a read-only open copies a store only once its files
    /// have not been modified for a clock tick (SQLiteStore's PrivateCopy), and waiting that out
    /// for every input (all written just now) would cost most of the run.
    static func settle(_ url: URL) {
        var times = [timespec(tv_sec: time(nil) - 60, tv_nsec: 0), timespec(tv_sec: time(nil) - 60, tv_nsec: 0)]
        for suffix in ["", "-wal", "-journal"] { _ = utimensat(AT_FDCWD, url.path + suffix, &times, 0) }
    }

    /// Removes `name` and its companions, so that a store type can create it afresh.
    static func remove(named name: String) -> URL {
        let url = scratch.appendingPathComponent(name)
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(url.path + suffix) }
        return url
    }

    /// Keys the mount can show (the inode encoding holds keys below 2^32; SEMANTICS.md). Objects
    /// beyond are not shown, so the walk does not fault them through a context either.
    static let showableKeys: ClosedRange<Int64> = 1...Int64(UInt32.max)

    /// Small batches: a fault reads ahead `batchSize` keys, which on inputs of a few objects costs
    /// time without reaching more code (the mount's 500 made an input take 140 ms).
    static let configuration = EngineConfiguration(batchSize: 8)

    /// Opens `url` read-only among `types` as `storefs info` and `storefs mount -o ro` do, and
    /// walks it; errors end the walk quietly.
    static func openAndWalk(_ url: URL, types: [any PersistentStoreType]) {
        settle(url)
        for type in types { _ = try? type.metadata(at: url) }
        guard
            let coordinator = try? PersistentStoreCoordinator.open(
                at: url, types: types, options: StoreOptions(readOnly: true), configuration: configuration)
        else { return }
        defer { coordinator.store.close() }
        walk(coordinator)
    }

    /// Reads metadata, counts, up to 50 objects per entity with their attributes and
    /// relationships, and evaluates fetched properties and fetch request templates as listing
    /// their folders does.
    static func walk(_ coordinator: PersistentStoreCoordinator) {
        let store = coordinator.store
        let model = coordinator.model
        _ = try? store.metadata()
        let context = coordinator.newContext()
        var sample: [EntityID: ObjectID] = [:]
        for entity in model.entities {
            _ = try? store.count(of: entity.id)
            guard let ids = try? store.objectIDs(of: entity.id) else { continue }
            let some = Array(ids.prefix(50))
            _ = try? store.snapshots(for: some)
            for relationship in entity.allRelationships where relationship.isToMany {
                _ = try? store.toManyDestinations(of: relationship.name, in: entity.id, for: some)
            }
            let shown = some.filter { showableKeys.contains($0.key.rawValue) }
            if let first = shown.first { sample[entity.id] = first }
            for id in shown.prefix(5) {
                for attribute in entity.allAttributes { _ = try? context.value(of: attribute.name, for: id) }
                for relationship in entity.allRelationships {
                    if relationship.isToMany {
                        _ = try? context.destinations(of: relationship.name, for: id)
                    } else {
                        _ = try? context.destination(of: relationship.name, for: id)
                    }
                }
            }
        }
        for entity in model.entities {
            for property in entity.allFetchedProperties {
                guard let predicate = try? PredicateParser.parse(property.predicateString),
                    let destination = model.entityID(named: property.destinationEntityName)
                else { continue }
                _ = try? context.objects(
                    matching: predicate, of: destination, source: sample[entity.id], fetchedProperty: property)
            }
        }
        for template in model.fetchRequestTemplates {
            guard let predicate = try? PredicateParser.parse(template.predicateString ?? "TRUEPREDICATE"),
                let entity = model.entityID(named: template.entityName)
            else { continue }
            _ = try? context.objects(matching: predicate, of: entity)
        }
    }
}
