import CoreDataSchema
import Foundation
import ObjectGraph
import RelationalCore

extension PostgresStore {
    public func save(_ request: SaveRequest) throws(ObjectGraphError) {
        _ = try saveReportingEffects(request)
    }

    /// Applies a save as one transaction on the store's write connection: inserts, updates (the
    /// rows locked and checked property by property against what was read), deletes (checked
    /// against Z_OPT), to-many differences, metadata, one history transaction, and a NOTIFY that
    /// PostgreSQL delivers when, and only when, the transaction commits.
    ///
    /// A connection lost while COMMIT was on its way leaves the outcome unknown to the client: a
    /// new connection learns it (``outcome(of:_:)``) before the save answers, so EIO always means
    /// "not saved". Any other failure rolls back everything.
    public func saveReportingEffects(_ request: SaveRequest) throws(ObjectGraphError) -> SaveEffects {
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(location) is open read-only") }
        guard !request.isEmpty else { return SaveEffects() }
        try checkOpen()
        var written = WrittenChanges<SQLValue>()
        let effects = try writer.withLock { (kept) throws(ObjectGraphError) -> SaveEffects in
            if kept == nil || kept?.isBroken == true {
                kept = try PostgresConnection(location, timeout: location.statementTimeout)
            }
            guard var connection = kept else { throw ObjectGraphError(.io, "\(location): no connection") }
            // A kept connection may have died with a server restarted since the last save; that
            // shows only when it is used. Nothing was sent yet: BEGIN again on a new one.
            do throws(ObjectGraphError) {
                try run(connection, "BEGIN")
            } catch  where connection.isBroken {
                connection = try PostgresConnection(location, timeout: location.statementTimeout)
                kept = connection
                try run(connection, "BEGIN")
            }
            var number: Int64?
            var transactionID: String?
            var serverProcess = connection.serverProcess
            let timestamp = Date()
            var committing = false
            do throws(ObjectGraphError) {
                // The transaction's id, for learning its outcome if COMMIT's answer is lost.
                // And the server process that runs it: behind a pooler, libpq's PQbackendPID is the
                // pooler's key, not a process the server knows.
                let identity = try run(connection, "SELECT txid_current(), pg_backend_pid()")
                transactionID = identity.text(0, 0)
                serverProcess = identity.integer(0, 1).flatMap { Int32(exactly: $0) } ?? connection.serverProcess
                // A large save (a migration, a big copy) works between its statements for longer
                // than a vanished client should hold locks (PostgresConnection.idleInTransactionTimeout).
                if request.inserted.count + request.updated.count + request.deleted.count + request.toManyChanges.count
                    > Self.largeSave
                {
                    try run(
                        connection, "SELECT set_config('idle_in_transaction_session_timeout', $1, true)",
                        [String(Self.largeSaveIdleTimeout)])
                }
                var extensions = NoSaveExtensions()
                let transaction = PostgresSQLConnection(store: self, connection: connection)
                written = try core.apply(request, on: transaction, history: slots, extensions: &extensions)
                if request.recordsHistory {
                    number = try appendHistory(
                        HistoryRow.rows(of: written, slots: slots, layout: layout), at: timestamp, on: connection)
                }
                committing = true
                if let hook = beforeCommit.withLock({ $0 }) { hook(connection.serverProcess) }
                try run(connection, "COMMIT")
            } catch {
                if !connection.isBroken {
                    _ = try? connection.execute("ROLLBACK")
                    // Refused for what the primary holds (another writer's commit): reads wait
                    // for a standby to have that too, or the retry reads the old row again.
                    noteCommitted(on: connection)
                    throw error
                }
                kept = nil
                pool.dropIdle()
                guard committing, let transactionID else { throw error }
                let lost = LostCommit(
                    transaction: transactionID, serverProcess: serverProcess, history: number,
                    timestamp: String(timestamp.timeIntervalSinceReferenceDate))
                guard try outcome(of: lost, error) else {
                    logger.notice(
                        "\(location): the connection was lost at COMMIT; transaction \(transactionID) did not commit: \(error.message)"
                    )
                    throw error
                }
                logger.notice(
                    "\(location): the connection was lost at COMMIT; transaction \(transactionID) committed (history \(number.map(String.init) ?? "none"))"
                )
            }
            noteCommitted(on: kept)
            var refreshed = written.repaired
            for (id, _) in written.deleted { refreshed.remove(id) }
            // No row is kept as saved (``SaveEffects/rowsAsRead``): another mount's change to it,
            // committed as soon as this commit released the row, may be announced and applied
            // before the saving thread takes the save in, and would then be overwritten in the
            // cache by this mount's older row, with nothing left to refresh it.
            return SaveEffects(refreshed: refreshed)
        }
        analyzeAfterLargeSave(request)
        return effects
    }

    /// A transaction whose COMMIT was sent and whose answer was lost.
    struct LostCommit {
        /// `txid_current()` inside it: 64 bits, never reused while the server runs on.
        var transaction: String
        /// The server process that ran it (stopped from a new connection if it still holds it).
        var serverProcess: Int32
        /// Its history transaction's number (nil for a save of metadata alone) and ZTIMESTAMP:
        /// together they name its ATRANSACTION row even after a crash, when the server may hand out
        /// the same transaction id and history number again to someone else.
        var history: Int64?
        var timestamp: String
    }

    /// Whether a transaction whose COMMIT lost its answer committed, asked on new connections
    /// again and again until the server says (a restart takes seconds), for at most
    /// ``outcomeWait``: EIO must mean "not saved", so the answer is learnt rather than guessed.
    ///
    /// "Not there yet" is not "not committed": a COMMIT still on its way (a network that held it,
    /// a server process that was stalled) may land after the first look. So the transaction must
    /// first be over: while the server says it is in progress, its process is told to end
    /// (`pg_terminate_backend`, which a COMMIT already under way outlives) and it is asked again.
    /// Once it is over, its history row says whether it committed; a save without history
    /// (metadata alone) takes `txid_status`'s word.
    ///
    /// - Throws: EIO when the server did not answer within ``outcomeWait``; the message and the
    ///   log say that whether the save committed is unknown.
    func outcome(of lost: LostCommit, _ failure: ObjectGraphError) throws(ObjectGraphError) -> Bool {
        let deadline = Date().addingTimeInterval(Self.outcomeWait)
        // Low 32 bits: the transaction id as pg_stat_activity shows it.
        let shortID = Int64(lost.transaction).map { String($0 & 0xFFFF_FFFF) } ?? ""
        var last = failure.message
        var committedWithoutRow = 0
        repeat {
            do throws(ObjectGraphError) {
                // An id from the one handed out now on was not handed out before: a crash forgot it.
                let status =
                    try read(
                        "SELECT CASE WHEN $1::bigint >= txid_current() THEN 'forgotten' ELSE txid_status($1::bigint) END",
                        [lost.transaction]
                    ).text(0, 0) ?? "unknown"
                if status == "in progress" {
                    // Not one waiting for a synchronous standby: its commit is written on the
                    // primary already and ending it would make it visible there without the
                    // standby having it, a "yes" a failover takes back. It is waited for.
                    _ = try read(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND backend_xid::text = $2"
                            + " AND wait_event IS DISTINCT FROM 'SyncRep'",
                        [String(lost.serverProcess), shortID])
                    last = "transaction \(lost.transaction) was still in progress on the server"
                    usleep(100_000)
                    continue
                }
                guard let number = lost.history else {
                    if status == "committed" { return true }
                    if status == "aborted" || status == "forgotten" { return false }
                    last = "the server no longer knows transaction \(lost.transaction) (\(status))"
                    usleep(250_000)
                    continue
                }
                let found =
                    try read(
                        "SELECT 1 FROM \"ATRANSACTION\" WHERE \"Z_PK\" = $1 AND \"ZTIMESTAMP\" = $2::double precision",
                        [String(number), lost.timestamp]
                    ).rowCount > 0
                if found { return true }
                // Committed in the commit log a moment before its rows show to new snapshots; or
                // the id went to another transaction after a crash: then its row never shows.
                guard status == "committed", committedWithoutRow < 4 else { return false }
                committedWithoutRow += 1
                usleep(50_000)
            } catch {
                last = error.message
                pool.dropIdle()
                usleep(250_000)
            }
        } while Date() < deadline
        logger.critical(
            "\(location): a commit's outcome is unknown: the connection was lost while committing and the server did not say within \(Int(Self.outcomeWait)) s whether transaction \(lost.transaction) committed (\(last))"
        )
        throw ObjectGraphError(
            .io,
            "\(location): the connection was lost while committing and the server did not say within \(Int(Self.outcomeWait)) s "
                + "whether transaction \(lost.transaction) committed: the change may be in the store (\(last))")
    }

    /// How long a save whose COMMIT lost its answer waits for the server to say whether it
    /// committed: longer than a server restart, shorter than anyone waits for an fsync.
    static let outcomeWait: Double = 60

    /// Changes above which a save is large: its transaction may sit idle between statements
    /// while storefs builds the next ones (measured: over 10 s in a 100,000-object migration on a
    /// loaded machine, debug build), up to ``largeSaveIdleTimeout`` ms.
    static let largeSave = 2_000
    static let largeSaveIdleTimeout = 600_000

    /// Runs `body` in a transaction of the writer's connection (made again when it broke), and
    /// commits; any error rolls everything back.
    func inTransaction(_ body: (PostgresConnection) throws(ObjectGraphError) -> Void) throws(ObjectGraphError) {
        try checkOpen()
        try writer.withLock { (kept) throws(ObjectGraphError) in
            if kept == nil || kept?.isBroken == true {
                kept = try PostgresConnection(location, timeout: location.statementTimeout)
            }
            guard let connection = kept else { throw ObjectGraphError(.io, "\(location): no connection") }
            try run(connection, "BEGIN")
            do throws(ObjectGraphError) {
                try body(connection)
                try run(connection, "COMMIT")
                noteCommitted(on: connection)
            } catch {
                if connection.isBroken { kept = nil } else { _ = try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }

    @discardableResult
    func run(_ connection: PostgresConnection, _ sql: String, _ parameters: [String?] = []) throws(ObjectGraphError)
        -> PostgresResult
    {
        requests.add(1, ordering: .relaxed)
        return try connection.execute(sql, parameters)
    }

}
