import Foundation
import ObjectGraph
import Synchronization

/// The connections a store reads through: one per thread that reads at a time (FUSE workers read
/// in parallel), kept for the next read; a connection that failed is dropped and the next read
/// makes a new one, so a restarted server is reconnected to by itself.
///
/// Threading: safe from any thread.
final class ConnectionPool: Sendable {
    let location: PostgresLocation
    let timeout: Double
    /// Connections kept between reads: enough for FUSE's worker threads.
    static let keptConnections = 8
    private let idle = Mutex<[PostgresConnection]>([])
    private let closed = Atomic<Bool>(false)
    /// Connections handed out now (for the store's ``ConnectionStatistics``).
    private let inUse = Atomic<Int>(0)
    /// Times every kept connection was dropped after a failure: the next reads reconnect.
    let drops = Atomic<Int>(0)

    init(location: PostgresLocation, timeout: Double) {
        self.location = location
        self.timeout = timeout
    }

    /// Runs `body` on a connection of the pool (made now if none is free).
    func withConnection<T>(_ body: (PostgresConnection) throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        guard !closed.load(ordering: .relaxed) else { throw ObjectGraphError(.io, "the store \(location) was closed") }
        let kept = idle.withLock { $0.popLast() }
        let connection: PostgresConnection
        if let kept { connection = kept } else { connection = try PostgresConnection(location, timeout: timeout) }
        inUse.add(1, ordering: .relaxed)
        defer {
            inUse.subtract(1, ordering: .relaxed)
            giveBack(connection)
        }
        return try body(connection)
    }

    private func giveBack(_ connection: PostgresConnection) {
        guard !connection.isBroken, !closed.load(ordering: .relaxed) else { return }
        idle.withLock { idle in if idle.count < Self.keptConnections { idle.append(connection) } }
    }

    /// Drops every kept connection (after a failure: the others are probably broken too).
    func dropIdle() {
        drops.add(1, ordering: .relaxed)
        idle.withLock { idle in idle.removeAll() }
    }

    /// Connections open: kept and handed out.
    var openConnections: Int { inUse.load(ordering: .relaxed) + idle.withLock { $0.count } }

    func close() {
        closed.store(true, ordering: .relaxed)
        idle.withLock { idle in idle.removeAll() }
    }
}

// One thread uses a connection at a time: the pool hands each out to one caller and takes it
// back after; libpq connections may move between threads that way.
extension PostgresConnection: @unchecked Sendable {}
