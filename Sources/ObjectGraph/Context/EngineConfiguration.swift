/// Tunables of the engine, each default with its reason.
public struct EngineConfiguration: Sendable, Hashable {
    /// Objects whose rows one store request fetches when faults fire in a batch. 500 keeps a batch
    /// well under SQLite's bound-variable limit (32,766) and a reply of a few hundred KB, while a
    /// directory of 100,000 objects still costs only 200 queries.
    public var batchSize: Int = 500
    /// Bytes of snapshots the row cache keeps before it turns the least recently used objects back
    /// into faults. 32 MiB holds about 26,000 sample Employees (tens of thousands of typical rows),
    /// so a mount's working set is served from memory while a walk of 100,000 objects keeps the
    /// server near 100 MB; 64 MiB made walks no faster (a walk re-reads evicted rows in batches
    /// either way: `find` of 100,000 objects, 433 store requests at 16, 32 and 64 MiB) and the
    /// server 150 MB at 100,000 objects.
    public var rowCacheLimit: Int = 32 << 20

    public init(batchSize: Int = 500, rowCacheLimit: Int = 32 << 20) {
        self.batchSize = batchSize
        self.rowCacheLimit = rowCacheLimit
    }
}
