import Foundation

/// A store's metadata dictionary, as Core Data's `metadataForPersistentStore` returns it.
///
/// The keys storefs manages are ``storeTypeKey`` and ``storeUUIDKey``; everything else is the
/// application's (custom keys set with setMetadata) or Core Data's own bookkeeping, kept as found.
public struct StoreMetadata: Sendable, Hashable {
    /// `NSStoreType`: "SQLite", "XML", "Binary" or "InMemory".
    public static let storeTypeKey = "NSStoreType"
    /// `NSStoreUUID`: the store's identity, part of every object URI.
    public static let storeUUIDKey = "NSStoreUUID"
    /// The key under which storefs keeps the model (Xcode `contents` XML) in the stores it writes,
    /// so that they mount without `--model`.
    public static let modelKey = "StoreFSModel"
    /// Keys a user may read but not set or remove.
    public static let managedKeys: Set<String> = [storeTypeKey, storeUUIDKey]
    /// Core Data's and storefs's own bookkeeping: version hashes, framework version, the kept
    /// model. Each store writes its own; copying them from another store would describe the wrong
    /// file, so the filesystem refuses to set them.
    public static let bookkeepingKeys: Set<String> = [
        "NSStoreModelVersionHashes", "NSStoreModelVersionHashesVersion", "NSStoreModelVersionIdentifiers",
        "NSPersistenceFrameworkVersion", "NSStoreModelVersionHashesDigest", "NSStoreModelVersionChecksumKey",
        "_NSAutoVacuumLevel", modelKey, "StoreFSKeys"
    ]

    public var values: [String: MetadataValue]

    public init(_ values: [String: MetadataValue] = [:]) { self.values = values }

    public subscript(key: String) -> MetadataValue? {
        get { values[key] }
        set { values[key] = newValue }
    }

    public var storeType: String? {
        get { if case .string(let s) = values[Self.storeTypeKey] { s } else { nil } }
        set { values[Self.storeTypeKey] = newValue.map(MetadataValue.string) }
    }

    public var storeUUID: String? {
        get { if case .string(let s) = values[Self.storeUUIDKey] { s } else { nil } }
        set { values[Self.storeUUIDKey] = newValue.map(MetadataValue.string) }
    }

    /// The model text storefs stored, if any.
    public var embeddedModel: String? {
        if case .string(let s) = values[Self.modelKey] { s } else { nil }
    }

    /// A new store UUID in the form Core Data writes (upper-case).
    public static func newStoreUUID() -> String { UUID().uuidString.uppercased() }
}
