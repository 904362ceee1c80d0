import Foundation

/// A model's entity version hashes beside the ones a store's metadata records
/// (`NSStoreModelVersionHashes`): the check Core Data makes when it opens a store. Any entity
/// that differs, or that one side has and the other lacks, makes Core Data migrate the store (or
/// refuse it without a migration). A value; safe from any thread.
public struct VersionHashComparison: Sendable, Hashable {
    /// The model's hashes, as ``VersionHash`` computes them, by entity name.
    public var computed: [String: Data]
    /// The hashes the store's metadata records, by entity name.
    public var recorded: [String: Data]

    public init(computed: [String: Data], recorded: [String: Data]) {
        self.computed = computed
        self.recorded = recorded
    }

    /// Compares `model` with the hashes `metadata` records; nil when it records none.
    public init?(model: ManagedObjectModel, metadata: StoreMetadata) {
        guard let recorded = Self.recordedHashes(in: metadata) else { return nil }
        self.init(computed: VersionHash.entityHashes(of: model), recorded: recorded)
    }

    /// `NSStoreModelVersionHashes` of `metadata`: nil when the key is missing or is not a
    /// dictionary; entries that are not data are left out (Core Data writes only data).
    public static func recordedHashes(in metadata: StoreMetadata) -> [String: Data]? {
        guard case .dictionary(let values)? = metadata["NSStoreModelVersionHashes"] else { return nil }
        return values.compactMapValues { if case .data(let bytes) = $0 { bytes } else { nil } }
    }

    /// Entities both sides have, with different hashes, sorted.
    public var differing: [String] {
        computed.keys.filter { name in recorded[name].map { $0 != computed[name] } ?? false }.sorted()
    }

    /// Entities of the model that the store does not record, sorted.
    public var unrecorded: [String] { computed.keys.filter { recorded[$0] == nil }.sorted() }

    /// Entities the store records that the model does not have, sorted.
    public var notInModel: [String] { recorded.keys.filter { computed[$0] == nil }.sorted() }

    /// Entities whose hashes are equal on both sides, sorted.
    public var matching: [String] {
        computed.keys.filter { recorded[$0] != nil && recorded[$0] == computed[$0] }.sorted()
    }

    /// Every entity of either side that is not the same on both: the ones Core Data would migrate.
    public var mismatched: [String] { (differing + unrecorded + notInModel).sorted() }

    /// Whether Core Data would open the store with the model as it is (no entity differs).
    public var isMatch: Bool { mismatched.isEmpty }
}
