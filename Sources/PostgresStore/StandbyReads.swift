import Foundation
import ObjectGraph
import Synchronization

/// The read connections of a store whose URL names a primary and standbys: reads go to a standby
/// (libpq's `prefer-standby`, so to the primary when no standby is up), except while a commit of
/// this store is not yet replayed there: then they go to the primary, so a mount always reads
/// its own writes.
///
/// After each commit the store notes the primary's WAL position (`pg_current_wal_lsn()`, at or
/// past the commit's record); a read first asks its standby connection whether it has replayed
/// that far (`pg_last_wal_replay_lsn()`), one short statement per connection while a commit is
/// awaited and none after: each connection remembers how far its own server had replayed. A standby that was promoted (no longer in recovery) has everything it will ever
/// have, and is caught up.
///
/// Threading: safe from any thread.
final class StandbyReads: Sendable {
    /// Where this store's last commits stand, as far as reads are concerned.
    enum Awaited: Equatable, Sendable {
        /// Every commit of this store is readable on the standby.
        case nothing
        /// The standby must have replayed up to this WAL position.
        case position(UInt64)
        /// A commit's position could not be learnt (the connection was lost at COMMIT and the
        /// primary did not say): reads ask the primary for its position now, and read there until
        /// it answers.
        case unknown
    }

    let pool: ConnectionPool
    private let awaited = Mutex<Awaited>(.nothing)
    /// Reads sent to the primary because the standby had not replayed this store's commit yet.
    let primaryReads = Atomic<Int>(0)
    /// Reads answered by the standby connection (or the primary when no standby was up).
    let standbyReads = Atomic<Int>(0)

    init(location: PostgresLocation) {
        pool = ConnectionPool(location: location.forReads, timeout: location.statementTimeout)
    }

    /// Notes a commit that ended at WAL position `lsn` (`X/Y`, as PostgreSQL prints it); nil
    /// when it is not known.
    func noteCommit(at lsn: String?) {
        let position = lsn.flatMap(Self.position)
        awaited.withLock { awaited in
            switch (awaited, position) {
            case (_, nil): awaited = .unknown
            case (.position(let old), .some(let new)): awaited = .position(max(old, new))
            case (_, .some(let new)): awaited = .position(new)
            }
        }
    }

    /// Whether a commit's position is awaited but unknown.
    var awaitsUnknownPosition: Bool { awaited.withLock { $0 == .unknown } }

    /// Runs `sql` on a standby connection when the standby has replayed this store's commits;
    /// returns nil when it has not (the caller reads from the primary).
    func read(_ sql: String, _ parameters: [String?], deadline: Date) throws(ObjectGraphError) -> PostgresResult? {
        if awaitsUnknownPosition {
            primaryReads.add(1, ordering: .relaxed)
            return nil
        }
        return try pool.withConnection(deadline: deadline) { (connection) throws(ObjectGraphError) -> PostgresResult? in
            try read(sql, parameters, on: connection, deadline: deadline)
        }
    }

    /// Runs `sql` on `connection` when its server has replayed this store's commits, else nil.
    ///
    /// What a server has replayed is known per connection (``PostgresConnection/replayed``), never
    /// for the store as a whole: read connections may sit on different standbys (one was down
    /// when another connection was made), and one that has caught up says nothing of another.
    func read(_ sql: String, _ parameters: [String?], on connection: PostgresConnection, deadline: Date)
        throws(ObjectGraphError) -> PostgresResult?
    {
        let pending = awaited.withLock { $0 }
        switch pending {
        case .unknown:
            primaryReads.add(1, ordering: .relaxed)
            return nil
        case .position(let position) where connection.replayed < position:
            let answer = try connection.execute(
                "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text", [], deadline: deadline)
            // Not in recovery: a primary, or a standby promoted; it has every commit it will have.
            let replayed = answer.text(0, 0) == "t" ? answer.text(0, 1).flatMap(Self.position) ?? 0 : UInt64.max
            connection.replayed = max(connection.replayed, replayed)
            guard connection.replayed >= position else {
                primaryReads.add(1, ordering: .relaxed)
                return nil
            }
        case .position, .nothing: break
        }
        standbyReads.add(1, ordering: .relaxed)
        return try connection.execute(sql, parameters, deadline: deadline)
    }

    /// `X/Y` (two hexadecimal halves) as one number; nil for anything else.
    static func position(_ text: String) -> UInt64? {
        let halves = text.split(separator: "/")
        guard halves.count == 2, halves.allSatisfy({ (1...8).contains($0.count) }),
            let high = UInt64(halves[0], radix: 16), let low = UInt64(halves[1], radix: 16)
        else { return nil }
        return high << 32 | low
    }

    static func text(_ position: UInt64) -> String {
        String(position >> 32, radix: 16, uppercase: true) + "/"
            + String(position & 0xFFFF_FFFF, radix: 16, uppercase: true)
    }

    func close() { pool.close() }
}

extension PostgresStore {
    /// A read statement of the object graph (``reads``): on a standby when the URL names one and
    /// it has replayed this store's commits, else on the primary (``read(_:_:)``).
    func readPreferringStandby(_ sql: String, _ parameters: [String?]) throws(ObjectGraphError) -> PostgresResult {
        guard let standbyReads else { return try read(sql, parameters) }
        try checkOpen()
        // The primary's position now is at or past the commit whose own was not learnt.
        if standbyReads.awaitsUnknownPosition { noteCommitted(on: nil) }
        let started = Date()
        let deadline = started.addingTimeInterval(location.statementTimeout)
        do {
            if let result = try standbyReads.read(sql, parameters, deadline: deadline) {
                requests.add(1, ordering: .relaxed)
                return result
            }
        } catch  where error.code == .io && Date().timeIntervalSince(started) < Self.quickFailure {
            // A kept connection found dead at once (a standby restarted or promoted): the others
            // are probably dead too; the next reads connect again.
            standbyReads.pool.dropIdle()
            if let result = try standbyReads.read(sql, parameters, deadline: deadline) {
                requests.add(1, ordering: .relaxed)
                return result
            }
        }
        return try read(sql, parameters)
    }

    /// Notes where a commit of this store ended in the primary's WAL, so reads wait for a
    /// standby to replay it (nothing to do when reads stay on the primary). `connection` is the
    /// one that committed, or nil when the commit was learnt on another. Also after a save the
    /// primary refused (a conflict with another writer's commit): the reads that follow, and the
    /// retry built on them, see that commit.
    func noteCommitted(on connection: PostgresConnection?) {
        guard let standbyReads else { return }
        let query = "SELECT pg_current_wal_lsn()::text"
        var lsn: String?
        if let connection, !connection.isBroken {
            lsn = (try? run(connection, query))?.text(0, 0)
        }
        if lsn == nil { lsn = (try? read(query))?.text(0, 0) }
        standbyReads.noteCommit(at: lsn)
    }
}
