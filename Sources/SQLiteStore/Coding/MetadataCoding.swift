import Foundation
import ObjectGraph

/// Z_METADATA's plist and the keys Core Data writes into a new store's metadata.
enum MetadataCoding {
    /// The NSPersistenceFrameworkVersion storefs writes: the value of current stores (cdp2/cdp3).
    static let frameworkVersion: Int64 = 1344

    static func decode(uuid: String?, plist: Data?, file: String) throws(ObjectGraphError) -> StoreMetadata {
        var metadata = StoreMetadata()
        if let plist, !plist.isEmpty {
            let object: Any
            do {
                object = try PropertyListSerialization.propertyList(from: plist, options: [], format: nil)
            } catch {
                throw ObjectGraphError(.corruptStore, "\(file): Z_METADATA.Z_PLIST is not a property list (\(error))")
            }
            guard case .dictionary(let values) = try MetadataValue(propertyList: object) else {
                throw ObjectGraphError(.corruptStore, "\(file): Z_METADATA.Z_PLIST is not a dictionary")
            }
            metadata.values = values
        }
        if let uuid { metadata.storeUUID = uuid }
        if metadata.storeType == nil { metadata.storeType = SQLiteStoreType.typeName }
        return metadata
    }

    /// The plist bytes for `metadata`; NSStoreUUID is left out (it lives in Z_UUID).
    static func encode(_ metadata: StoreMetadata) throws(ObjectGraphError) -> Data {
        var values = metadata.values
        values[StoreMetadata.storeUUIDKey] = nil
        do {
            return try PropertyListSerialization.data(
                fromPropertyList: MetadataValue.dictionary(values).propertyList, format: .binary, options: 0)
        } catch {
            throw ObjectGraphError(.validation, "metadata cannot be written as a property list: \(error)")
        }
    }

    /// The metadata of a new store: `initial` plus Core Data's bookkeeping keys.
    static func initial(_ initial: StoreMetadata, model: ManagedObjectModel) -> StoreMetadata {
        var metadata = initial
        metadata.storeType = SQLiteStoreType.typeName
        metadata.storeUUID = initial.storeUUID ?? StoreMetadata.newStoreUUID()
        metadata["_NSAutoVacuumLevel"] = .string("2")
        metadata["NSPersistenceFrameworkVersion"] = .integer(frameworkVersion)
        for (key, value) in VersionHash.metadata(for: model) { metadata[key] = value }
        return metadata
    }
}
