import ObjectGraph

/// What the mapping refuses to change, whoever asks: a mount's operations and `storefs apply`'s
/// replay of an evidence mount's patch (Sources/storefs/Support/OverlayPatch.swift, hence
/// package-visible) both ask here, so a patch can do nothing its mount would have refused. The
/// values a change sets are the engine's to check (``ChangeValidation``), for both alike.
///
/// Stateless; safe from any thread.
package enum ChangeRules {
    /// Why metadata key `key` cannot be set or removed (nil: it can). The store's own keys (its
    /// type and UUID) and the bookkeeping Core Data and storefs keep (version hashes, the model
    /// storefs keeps: a store whose `StoreFSModel` was replaced opens with another model)
    /// describe the file itself; each store writes its own.
    package static func metadataRefusal(_ key: String) -> String? {
        if StoreMetadata.managedKeys.contains(key) { return "metadata \(key) is the store's own and cannot be set" }
        if StoreMetadata.bookkeepingKeys.contains(key) {
            return "metadata \(key) is the store's bookkeeping (version hashes, the model storefs keeps), written by "
                + "the store itself; it cannot be set or removed"
        }
        return nil
    }

    /// Why a new object cannot have `key` (nil: it can; no key: a name that is none): storefs shows keys p1 to
    /// p\(Node.maximumKey) (its inode numbers hold no more), and a store whose highest key is
    /// Int64.max can never make another object.
    package static func keyRefusal(_ key: PrimaryKey?) -> String? {
        if let key, Node.fits(key) { return nil }
        return "not a key storefs can show; keys are p1 to p\(Node.maximumKey), without leading zeros"
    }
}
