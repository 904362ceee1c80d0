import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

/// Z_METADATA's plist and the keys Core Data writes into a new store's metadata.
enum MetadataCoding {
    /// The NSPersistenceFrameworkVersion storefs writes: the value of current stores (cdp2/cdp3).
    static let frameworkVersion: Int64 = MetadataPlist.frameworkVersion

    /// The metadata in Z_METADATA's row (the first by Z_VERSION); nil when the table has no row.
    ///
    /// - Throws: ``ObjectGraphError/Code/corruptStore`` when the table lacks Z_UUID or Z_PLIST or
    ///   they hold what is not a UUID text and a property list.
    static func read(_ db: Database, file: String) throws -> StoreMetadata? {
        let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(Z_METADATA)").compactMap { row -> String? in
            let values = row.storedValues
            return values.count > 1 ? values[1].storedText?.uppercased() : nil
        }
        for column in ["Z_UUID", "Z_PLIST"] where !columns.contains(column) {
            throw ObjectGraphError(
                .corruptStore,
                "\(file): table Z_METADATA has no column \(column): this is not a Core Data store, or it was damaged")
        }
        let order = columns.contains("Z_VERSION") ? " ORDER BY Z_VERSION" : ""
        guard let row = try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA\(order) LIMIT 1") else {
            return nil
        }
        let values = row.storedValues
        return try decode(uuid: values[0], plist: values[1], file: file)
    }

    static func decode(uuid uuidValue: DatabaseValue, plist plistValue: DatabaseValue, file: String)
        throws(ObjectGraphError)
        -> StoreMetadata
    {
        let uuid = uuidValue.storedText
        guard uuid != nil || uuidValue.isNull else {
            throw ObjectGraphError(
                .corruptStore,
                "\(file): Z_METADATA.Z_UUID holds \(uuidValue.storedDescription), not the store's UUID text")
        }
        let plist = plistValue.storedBytes
        guard plist != nil || plistValue.isNull else {
            throw ObjectGraphError(
                .corruptStore, "\(file): Z_METADATA.Z_PLIST holds \(plistValue.storedDescription), not a property list")
        }
        var metadata = try MetadataPlist.decode(plist, source: "\(file): Z_METADATA.Z_PLIST")
        if let uuid { metadata.storeUUID = uuid }
        if metadata.storeType == nil { metadata.storeType = SQLiteStoreType.typeName }
        return metadata
    }

    /// The plist bytes for `metadata` (``MetadataPlist/encode(_:)``).
    static func encode(_ metadata: StoreMetadata) throws(ObjectGraphError) -> Data {
        try MetadataPlist.encode(metadata)
    }

    /// The metadata of a new store: `initial` plus Core Data's bookkeeping keys.
    static func initial(_ initial: StoreMetadata, model: ManagedObjectModel) -> StoreMetadata {
        var metadata = MetadataPlist.initial(initial, model: model, storeType: SQLiteStoreType.typeName)
        metadata["_NSAutoVacuumLevel"] = .string("2")
        return metadata
    }
}
