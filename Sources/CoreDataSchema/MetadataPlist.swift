import Decoding
import Foundation
import ObjectGraph

/// Z_METADATA's plist: the store's metadata dictionary as a binary property list, and the keys
/// Core Data writes into a new store's metadata. Dialect-free: the SQLite and PostgreSQL stores
/// keep the same bytes in their Z_PLIST column.
package enum MetadataPlist {
    /// The NSPersistenceFrameworkVersion storefs writes: the value of current stores (cdp2/cdp3).
    package static let frameworkVersion: Int64 = 1344

    /// The plist bytes for `metadata`; NSStoreUUID is left out (it lives in Z_UUID).
    package static func encode(_ metadata: StoreMetadata) throws(ObjectGraphError) -> Data {
        var values = metadata.values
        values[StoreMetadata.storeUUIDKey] = nil
        do {
            return try PropertyListSerialization.data(
                fromPropertyList: MetadataValue.dictionary(values).propertyList, format: .binary, options: 0)
        } catch {
            throw ObjectGraphError(.validation, "metadata cannot be written as a property list: \(error)")
        }
    }

    /// The metadata a Z_PLIST value holds (nil or empty: none); `source` names it in errors.
    package static func decode(_ plist: Data?, source: String) throws(ObjectGraphError) -> StoreMetadata {
        var metadata = StoreMetadata()
        guard let plist, !plist.isEmpty else { return metadata }
        // The bounded reader: a store's bytes never reach PropertyListSerialization.
        metadata.values = try StoredPropertyList.dictionary(plist, source: source)
        return metadata
    }

    /// The metadata of a new store of type `storeType`: `initial` plus Core Data's bookkeeping
    /// keys (its UUID, framework version and the model's entity version hashes).
    package static func initial(_ initial: StoreMetadata, model: ManagedObjectModel, storeType: String) -> StoreMetadata
    {
        var metadata = initial
        metadata.storeType = storeType
        metadata.storeUUID = initial.storeUUID ?? StoreMetadata.newStoreUUID()
        metadata["NSPersistenceFrameworkVersion"] = .integer(frameworkVersion)
        for (key, value) in VersionHash.metadata(for: model) { metadata[key] = value }
        return metadata
    }
}
