import CoreDataSchema
import Foundation
import Logging
import ObjectGraph
import RelationalCore
import Synchronization

/// The mount's file locks as PostgreSQL session advisory locks, on a connection of their own
/// (``SharedLockingStore``).
///
/// Session advisory locks belong to the server session that took them: the connection is made
/// for locks only and kept (never pooled, never closed between calls), so a lock lasts until it
/// is let go or the session ends. A mount killed, or whose connection breaks, ends its session
/// and the server lets go of every lock it held; the next call makes a new connection and
/// reports a new ``session``, so the caller knows its old locks are gone.
///
/// Keys: one 64-bit advisory key per name, FNV-1a of the store's schema, the lock family and the
/// resource (the node's inode number: kind, entity, object key, property). Advisory locks are per
/// database, and several stores share one through their schemas, hence the schema in the hash.
/// Two names whose keys collide (a chance of about n²/2⁶⁵ for n names locked at once) exclude
/// each other: more exclusion, never less. Other applications taking advisory locks in the same
/// database share the key space the same way.
///
/// A lock newly taken also reads the history after the last transaction it knew of (a second
/// statement, so that its snapshot is later than the lock: a commit made before another mount let
/// go is in it), and answers with the objects changed, for the mount to forget before it grants.
///
/// The connection must be a session of its own on the server: through a pooler in transaction
/// mode a session lock would stay on a server connection other clients get (docs/POSTGRESQL.md).
/// So it goes to the URL's `session=` where it names one, and a connection found to go through a
/// pooler anyway (``PostgresConnection/isPooled``) is refused: the lock fails with EIO, the log
/// says why. With several hosts it is made on the primary, whatever the URL asks for (a standby's
/// advisory locks are its own), and after a failover on the promoted standby.
///
/// Threading: every call holds ``connection``'s lock for its one round trip.
final class AdvisoryLockSession: Sendable {
    private let location: PostgresLocation
    private let logger: Logger
    private struct State {
        var connection: PostgresConnection?
        var session = 0
        var closed = false
        /// The last history transaction whose changes were handed out (or that the store had
        /// when it was opened), and the layout that maps its rows to objects.
        var seenTransaction: Int64 = 0
        var layout: StoreLayout?
    }
    private let state = Mutex(State())

    /// `location` as given to the store: the session is made on its primary (``PostgresLocation/forLocks``).
    init(location: PostgresLocation, logger: Logger) {
        self.location = location.forLocks
        self.logger = logger
    }

    /// The advisory key of `name` in this store.
    func key(_ name: SharedLockName) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        for byte in location.schema.utf8 { mix(byte) }
        mix(0)
        mix(name.family)
        for shift in stride(from: 0, to: 64, by: 8) { mix(UInt8(truncatingIfNeeded: name.resource >> UInt64(shift))) }
        return Int64(bitPattern: hash)
    }

    /// Notes where the history stands when the store opens: a lock reads what was committed after.
    func noteHistory(_ connection: PostgresConnection, layout: StoreLayout) throws(ObjectGraphError) {
        let last = try connection.execute("SELECT COALESCE(MAX(\"Z_PK\"), 0) FROM \"ATRANSACTION\"").integer(0, 0) ?? 0
        state.withLock {
            $0.seenTransaction = last
            $0.layout = layout
        }
    }

    /// Runs `sql` (one boolean column) with `key` as $1; the answer and the session it ran in.
    private func ask(_ sql: String, _ key: Int64, catchingUp: Bool = false) throws(ObjectGraphError) -> (
        Bool, Int, AnnouncedChanges
    ) {
        try state.withLock { (state) throws(ObjectGraphError) -> (Bool, Int, AnnouncedChanges) in
            guard !state.closed else { throw ObjectGraphError(.io, "\(location): the store is closed") }
            if state.connection == nil || state.connection?.isBroken == true {
                if state.connection != nil {
                    logger.error("\(location): the connection holding file locks broke; the locks it held are gone")
                }
                // On the primary of the URL connected to: a `session=` URL that names several hosts
                // and prefers a standby would otherwise put the locks where they exclude nobody.
                let made = try PostgresConnection(location.forSession.forLocks, timeout: location.statementTimeout)
                // A lock taken through a transaction-mode pooler would stay on a server
                // connection other clients get, and its unlock would go to another.
                guard !made.isPooled else {
                    throw ObjectGraphError(
                        .unsupported,
                        "\(location): file locks need a server session of their own and this URL goes through a connection pooler: add session=URL (the server, or a session-mode pool) to the store's URL; the lock is refused"
                    )
                }
                state.connection = made
                state.session += 1
            }
            let connection = state.connection!
            let granted = try connection.execute(sql, [String(key)]).text(0, 0) == "t"
            guard granted, catchingUp, let layout = state.layout else {
                return (granted, state.session, AnnouncedChanges())
            }
            let rows = try connection.execute(
                "SELECT \"ZTRANSACTIONID\", \"ZCHANGETYPE\", \"ZENTITY\", \"ZENTITYPK\" FROM \"ACHANGE\" WHERE \"ZTRANSACTIONID\" > $1",
                [String(state.seenTransaction)])
            var changes = AnnouncedChanges()
            for row in 0..<rows.rowCount {
                guard let number = rows.integer(row, 0), let kind = rows.integer(row, 1),
                    let zent = rows.integer(row, 2), let entity = layout.entityByZent[zent],
                    let primaryKey = rows.integer(row, 3), primaryKey > 0
                else { continue }
                state.seenTransaction = max(state.seenTransaction, number)
                let id = ObjectID(entity: entity, key: PrimaryKey(primaryKey))
                changes.changed.insert(id)
                if kind != 1 { changes.insertedOrDeleted.insert(id) }
            }
            return (granted, state.session, changes)
        }
    }

    func change(_ name: SharedLockName, from: SharedLockMode?, to: SharedLockMode?) throws(ObjectGraphError)
        -> SharedLockAnswer
    {
        let sql: String
        switch (from, to) {
        case (nil, nil), (.shared, .shared), (.exclusive, .exclusive):
            return SharedLockAnswer(granted: true, session: state.withLock { $0.session })
        case (nil, .shared): sql = "SELECT pg_try_advisory_lock_shared($1::bigint)"
        case (nil, .exclusive): sql = "SELECT pg_try_advisory_lock($1::bigint)"
        // A session's own locks never exclude its requests: the new lock is taken before the
        // old one is let go, so the change is atomic for other mounts.
        case (.shared, .exclusive):
            sql =
                "SELECT CASE WHEN pg_try_advisory_lock($1::bigint) THEN pg_advisory_unlock_shared($1::bigint) IS NOT NULL ELSE false END"
        case (.exclusive, .shared):
            sql =
                "SELECT CASE WHEN pg_try_advisory_lock_shared($1::bigint) THEN pg_advisory_unlock($1::bigint) IS NOT NULL ELSE false END"
        // Let go: true even when the session no longer held it (it ended, and took it along).
        case (.shared, nil): sql = "SELECT pg_advisory_unlock_shared($1::bigint) IS NOT NULL"
        case (.exclusive, nil): sql = "SELECT pg_advisory_unlock($1::bigint) IS NOT NULL"
        }
        let taking = to == .exclusive || from == nil
        let (granted, session, changes) = try ask(sql, key(name), catchingUp: taking && to != nil)
        return SharedLockAnswer(granted: granted, session: session, changes: changes)
    }

    /// Tries the lock and lets it go at once: refused means another session holds one that excludes it.
    func heldElsewhere(_ name: SharedLockName, excluding mode: SharedLockMode) throws(ObjectGraphError)
        -> SharedLockMode?
    {
        let key = key(name)
        let probeShared =
            "SELECT CASE WHEN pg_try_advisory_lock_shared($1::bigint) THEN NOT pg_advisory_unlock_shared($1::bigint) ELSE true END"
        if mode == .shared { return try ask(probeShared, key).0 ? .exclusive : nil }
        let probeExclusive =
            "SELECT CASE WHEN pg_try_advisory_lock($1::bigint) THEN NOT pg_advisory_unlock($1::bigint) ELSE true END"
        guard try ask(probeExclusive, key).0 else { return nil }
        return try ask(probeShared, key).0 ? .exclusive : .shared
    }

    func close() {
        state.withLock {
            $0.closed = true
            $0.connection = nil
        }
    }
}
