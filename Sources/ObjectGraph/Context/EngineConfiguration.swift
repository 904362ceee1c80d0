/// Tunables of the engine, each default with its reason.
public struct EngineConfiguration: Sendable, Hashable {
    /// Objects whose rows one store request fetches when faults fire in a batch. 500 keeps a batch
    /// well under SQLite's bound-variable limit (32,766) and a reply of a few hundred KB, while a
    /// directory of 100,000 objects still costs only 200 queries.
    public var batchSize: Int = 500
    /// Bytes of snapshots the row cache keeps before it turns the least recently used objects back
    /// into faults. 64 MiB holds a few hundred thousand typical rows, so a mount's working set is
    /// served from memory while a store of millions of objects never grows the process unbounded.
    public var rowCacheLimit: Int = 64 << 20

    public init(batchSize: Int = 500, rowCacheLimit: Int = 64 << 20) {
        self.batchSize = batchSize
        self.rowCacheLimit = rowCacheLimit
    }
}
