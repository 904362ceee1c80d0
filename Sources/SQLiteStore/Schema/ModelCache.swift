import CoreDataSchema
import Foundation
import GRDB
import Logging
import ObjectGraph

/// Reads the compiled model Core Data keeps in a SQLite store: `Z_MODELCACHE.Z_CONTENT`, a keyed
/// archive of the `NSManagedObjectModel` the store was last opened with, compressed as raw
/// DEFLATE (COREDATA_FORMATS.md §1.1). Every store written by Core Data since about 2013 has one;
/// older stores (framework versions 241 and 419 in the corpus) do not.
enum ModelCache {
    /// The cached model, or nil when the store has none. A cache that is there but does not
    /// decode is logged and treated as absent (the caller falls back to inference): the store's
    /// objects are still worth reading.
    static func load(from db: Database, schema: FileSchema, file: String, logger: Logger) -> ManagedObjectModel? {
        guard schema.table(named: "Z_MODELCACHE") != nil else { return nil }
        let blob: Data?
        do {
            blob = try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE WHERE Z_CONTENT IS NOT NULL LIMIT 1")
        } catch {
            logger.warning("\(file): Z_MODELCACHE cannot be read (\(error)); inferring a model from the schema")
            return nil
        }
        guard let blob, !blob.isEmpty else { return nil }
        do {
            return try decode(blob, file: file, logger: logger)
        } catch {
            logger.warning("\(file): the model in Z_MODELCACHE does not load (\(error.message)); inferring one from the schema")
            return nil
        }
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
