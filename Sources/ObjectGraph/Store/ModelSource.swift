/// Where the model a store was opened with came from, in the order storefs looks for one.
///
/// Threading: a value; share it freely.
public enum ModelSource: Sendable, Hashable, CustomStringConvertible {
    /// Given by the caller: `--model PATH` (an Xcode model, a compiled model or another store),
    /// or the model a new store was created with. The text says which.
    case given(String)
    /// The model storefs keeps in the metadata of the stores it writes (`StoreFSModel`).
    case keptByStoreFS
    /// The compiled model Core Data caches in a SQLite store (`Z_MODELCACHE`).
    case coreDataCache
    /// Worked out from the store's own file (schema or objects), because it holds no model.
    case inferred

    public var description: String {
        switch self {
        case .given(let what): what
        case .keptByStoreFS: "kept by storefs in the store's metadata (StoreFSModel)"
        case .coreDataCache: "Core Data's model cache in the store (Z_MODELCACHE)"
        case .inferred: "inferred from the store's schema (no model in the store that storefs can read)"
        }
    }

    /// A one-word name for scripts (`storefs info --json`).
    public var kind: String {
        switch self {
        case .given: "given"
        case .keptByStoreFS: "storefs"
        case .coreDataCache: "cache"
        case .inferred: "inferred"
        }
    }
}
