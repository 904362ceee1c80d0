import Foundation
import ObjectGraph

/// Tunables of the filesystem layer, each default with its reason.
public struct StoreFSConfiguration: Sendable, Hashable {
    /// Mount read-only: every change fails with EROFS and the store is never written.
    public var readOnly = false
    /// Seconds the kernel may cache names and attributes. Long, because every change made through
    /// the mount invalidates what it touches, and changes made by other processes are detected and
    /// invalidated too (go-fuse and passthrough_hp use a day; short TTLs cost a round trip per
    /// `stat`).
    public var entryTimeout: Double = 3600
    public var attributeTimeout: Double = 3600
    /// Seconds of quiet after the last change before pending changes commit as one transaction.
    /// Short enough that another process sees an edit at once, long enough that `cp -a` of many
    /// files commits in few transactions.
    public var commitDelay: Double = 0.2
    /// Seconds between checks for changes committed to the store by other processes.
    public var changePollInterval: Double = 1.0
    /// Commit a written file's change at close(2) and report its failure there (close-to-open
    /// consistency). Off by default: a store only this mount writes commits after
    /// ``commitDelay`` of quiet instead, so a copy of many files is a few transactions; the CLI
    /// turns it on for stores that several machines write (PostgreSQL).
    public var commitsOnClose = false
    /// List fetched properties' folders in object folders. Default `false`: they are computed, not
    /// stored, so they are reachable by name (`ls p3/colleagues`) but not listed, as ZFS's
    /// `.zfs` with snapdir=hidden; `find`, `du`, `grep -r`, `diff -r` and `cp -a` of a mount then
    /// walk what the store holds, once, instead of evaluating every predicate of every object
    /// (a 10,000-object sample lists ~700,000 computed links). `-o list_fetched` lists them.
    public var listsFetchedProperties = false
    /// The largest value a write or truncate may make, in bytes. A value being written is held in
    /// memory until it is set; 64 MiB keeps a few concurrent writers well inside a small machine's
    /// memory, far above what attribute values hold (larger ones belong in external storage).
    /// `-o max_value_size=MiB`.
    public var maximumValueSize = 64 << 20
    /// The largest value written into a file of its own (an attribute whose store keeps large
    /// values in files, ValueFiles.swift: SQLite's "Allows External Storage"): nothing of it is
    /// held in memory, so only the disk bounds it; 1 TiB keeps a stray seek from making a file
    /// no reader could finish.
    public var maximumFileValueSize = 1 << 40
    /// How much one evaluation of a predicate may cost (a query folder's listing or file, a fetched
    /// property's or template's folder): time, rows visited, memory. Past a limit it fails
    /// (ETIMEDOUT for time, EFBIG for rows and memory) with the reason in `user.storefs.error`.
    /// The defaults and their reasons are ``QueryLimits``'s; `-o query_time=SECONDS,
    /// query_rows=N,query_memory=MiB`.
    public var queryLimits = QueryLimits()
    /// Owner of every node (the user who mounted, by default).
    public var uid: UInt32 = UInt32(getuid())
    public var gid: UInt32 = UInt32(getgid())

    /// Where the store is mounted, so absolute link targets inside the mount resolve.
    public var mountPoint: String?
    /// Extended attributes of the root the serving program adds (evidence mounts); none by default.
    public var rootAttributes: ProvidedAttributes?

    public init() {}
}
