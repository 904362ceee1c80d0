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
    /// A connection lost while COMMIT was on its way leaves the outcome unknown to the client;
    /// the history row says: a new connection looks for this save's transaction number, and the
    /// save succeeded if it is there. Any other failure rolls back everything.
    public func saveReportingEffects(_ request: SaveRequest) throws(ObjectGraphError) -> SaveEffects {
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(location) is open read-only") }
        guard !request.isEmpty else { return SaveEffects() }
        try checkOpen()
        var written = WrittenChanges<SQLValue>()
        return try writer.withLock { (kept) throws(ObjectGraphError) -> SaveEffects in
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
            var committing = false
            do throws(ObjectGraphError) {
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
                        HistoryRow.rows(of: written, slots: slots, layout: layout), on: connection)
                }
                committing = true
                try run(connection, "COMMIT")
            } catch {
                if !connection.isBroken {
                    _ = try? connection.execute("ROLLBACK")
                    throw error
                }
                kept = nil
                pool.dropIdle()
                guard committing, let number, try committed(number) else { throw error }
                logger.notice(
                    "\(location): the connection was lost at COMMIT; history transaction \(number) shows the save committed"
                )
            }
            var refreshed = written.repaired
            for (id, _) in written.deleted { refreshed.remove(id) }
            return SaveEffects(refreshed: refreshed)
        }
    }

    /// Whether history transaction `number` exists: asked on a new connection after a COMMIT
    /// whose answer was lost, again and again until the server answers (a restart takes seconds),
    /// for at most ``outcomeWait``: EIO must mean "not saved", so the answer is waited for
    /// rather than guessed.
    private func committed(_ number: Int64) throws(ObjectGraphError) -> Bool {
        let deadline = Date().addingTimeInterval(Self.outcomeWait)
        var last = ""
        repeat {
            do {
                return try read("SELECT 1 FROM \"ATRANSACTION\" WHERE \"Z_PK\" = $1", [String(number)]).rowCount > 0
            } catch {
                last = error.message
                pool.dropIdle()
                usleep(250_000)
            }
        } while Date() < deadline
        logger.critical(
            "\(location): a commit's outcome is unknown: the connection was lost while committing and the server did not answer for \(Int(Self.outcomeWait)) s (\(last))"
        )
        throw ObjectGraphError(
            .io,
            "\(location): the connection was lost while committing and the server did not answer for \(Int(Self.outcomeWait)) s; "
                + "whether history transaction \(number) committed is unknown (\(last)); the changes stay pending")
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
