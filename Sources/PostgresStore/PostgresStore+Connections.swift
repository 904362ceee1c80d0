import Foundation
import ObjectGraph

/// The store's connections, counted for a mount's metrics without waiting on any of them.
extension PostgresStore: ConnectionReportingStore {
    public var connectionStatistics: ConnectionStatistics {
        var statistics = ConnectionStatistics()
        // A save holds the writer's lock across the network: a held lock is a save in flight,
        // on a connection.
        let writing = writer.withLockIfAvailable { $0.map { !$0.isBroken } ?? false } ?? true
        let listener = self.listener.withLock { $0 }
        statistics.connections =
            pool.openConnections + (standbyReads?.pool.openConnections ?? 0) + (writing ? 1 : 0)
            + (listener?.isConnected.load(ordering: .relaxed) == true ? 1 : 0)
        statistics.reconnects =
            pool.drops.load(ordering: .relaxed) + (standbyReads?.pool.drops.load(ordering: .relaxed) ?? 0)
            + Int(listener?.generation ?? 0)
        statistics.announcements = listener?.announcements.load(ordering: .relaxed) ?? 0
        if let lag = listener?.lastLagMilliseconds.load(ordering: .relaxed), lag >= 0 {
            statistics.announcementLag = Double(lag) / 1000
        }
        return statistics
    }
}
