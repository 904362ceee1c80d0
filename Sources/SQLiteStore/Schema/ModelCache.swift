import CoreDataSchema
import Foundation
import GRDB
import Logging
import Decoding
import ObjectGraph

/// Reads the compiled model Core Data keeps in a SQLite store: `Z_MODELCACHE.Z_CONTENT`, a keyed
/// archive of the `NSManagedObjectModel` the store was last opened with, compressed as raw
/// DEFLATE (docs/MODELS.md describes it). Every store written by Core Data since about 2013 has one;
/// older stores (framework versions 241 and 419 in the corpus) do not.
enum ModelCache {
    /// The cached model, or nil when the store has none. A cache that is there but does not
    /// decode is logged and treated as absent (the caller falls back to inference): the store's
    /// objects are still worth reading.
    static func load(from db: Database, schema: FileSchema, file: String, logger: Logger) -> ManagedObjectModel? {
        guard schema.table(named: "Z_MODELCACHE") != nil else { return nil }
        switch read(from: db, file: file, logger: logger) {
        case .absent: return nil
        case .model(let model): return model
        case .damaged(let reason):
            logger.warning(
                "\(file): the model in Z_MODELCACHE does not load (\(reason)); inferring one from the schema")
            return nil
        }
    }

    /// What Z_MODELCACHE holds, the table known to exist.
    static func read(from db: Database, file: String, logger: Logger) -> SQLiteStoreType.ModelCacheContent {
        let blob: Data?
        do {
            blob = try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE WHERE Z_CONTENT IS NOT NULL LIMIT 1")
        } catch {
            return .damaged("Z_MODELCACHE cannot be read: \(error)")
        }
        guard let blob, !blob.isEmpty else { return .absent }
        do {
            return .model(try decode(blob, file: file, logger: logger))
        } catch {
            return .damaged(error.message + Self.zeroTail(of: blob))
        }
    }

    /// A note on a blob that ends in a run of zero bytes: what a zeroed overflow page of the table
    /// leaves (iOS's DataUsage store in the corpus has one), as opposed to a cache another tool
    /// wrote badly. Empty when the blob does not end so.
    static func zeroTail(of blob: Data) -> String {
        guard let last = blob.lastIndex(where: { $0 != 0 }) else { return "; all \(blob.count) bytes are zero" }
        let zeros = blob.endIndex - last - 1
        guard zeros >= 64 else { return "" }
        return
            "; only the first \(last + 1 - blob.startIndex) of its \(blob.count) bytes hold data, the rest are zeros "
            + "(a damaged page of the file)"
    }

    /// Inflates and decodes a Z_CONTENT value.
    static func decode(_ blob: Data, file: String, logger: Logger) throws(ObjectGraphError) -> ManagedObjectModel {
        let source = "\(file) Z_MODELCACHE"
        let archive: Data
        do {
            archive = try RawInflate.inflate(blob, limit: CompiledModelLoader.maximumArchiveSize)
        } catch {
            throw ObjectGraphError(.invalidModel, "\(source): not a raw DEFLATE stream (\(error.description))")
        }
        let decoded = try CompiledModelLoader.decode(archive: archive, source: source)
        for note in decoded.notes { logger.notice("\(note)") }
        return decoded.model
    }
}
