import Foundation

/// What a store on a server says about its connections, for a mount's metrics
/// (`storefs_postgres_*`, docs/PRODUCTION.md).
///
/// Threading: a value; share it freely.
public struct ConnectionStatistics: Sendable, Hashable {
    /// Connections open now (reads, saves, the listener).
    public var connections = 0
    /// Connections made again after one failed (the listener's, and the readers' after an error).
    public var reconnects = 0
    /// Announcements of other writers' commits heard.
    public var announcements = 0
    /// Seconds between the last announced commit (its history timestamp, the writer's clock) and
    /// its arrival here; nil before the first, or when the writer did not say when it committed.
    public var announcementLag: Double?

    public init() {}
}

/// A store that keeps connections to a server (PostgreSQL) and can count them.
///
/// Threading: ``connectionStatistics`` answers from memory, without waiting for a lock a request
/// may hold across the network, so a metrics scrape never waits on a slow server.
public protocol ConnectionReportingStore: PersistentStore {
    var connectionStatistics: ConnectionStatistics { get }
}
