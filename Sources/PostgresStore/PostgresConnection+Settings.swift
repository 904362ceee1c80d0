import CPostgres
import Foundation
import ObjectGraph
import RelationalCore

#if canImport(Glibc)
    import Glibc
#endif

/// The settings every statement of storefs runs under, made so that they hold through a
/// transaction-mode pooler (pgbouncer `pool_mode=transaction`, docs/POSTGRESQL.md), which gives
/// each transaction whichever server connection is free: a setting made for the session would
/// stay on one server connection, where another client's transactions then run under it, and
/// would be missing from the next one this client gets.
///
/// A connection that is a session of its own on the server (``PostgresConnection/isPooled`` false:
/// no pooler, or a session-mode one) sets everything once, for the session, at connect time: no
/// statement pays for settings. Behind a pooler the settings are local to each transaction (`set_config(name, value, true)`, SET LOCAL):
/// sent in libpq's pipeline mode together with the statement that starts the transaction, in
/// the same round trip: after `BEGIN` for a transaction block, before the statement for one
/// outside a block (the statements before one Sync are one implicit transaction). A statement
/// inside a block runs under what its BEGIN set. Only the reported settings that pgbouncer re-sends
/// when it changes server connections (client_encoding, TimeZone, standard_conforming_strings)
/// are set for the session, once per connection, pooled or not.
extension PostgresConnection {
    /// Set once per connection; a transaction-mode pooler carries them (see above).
    static let sessionSettings: [(String, String)] = [
        ("standard_conforming_strings", "on"), ("client_encoding", "UTF8"), ("TimeZone", "UTC")
    ]

    /// Set in every transaction: the store's schema first on the search path (tables are named
    /// without their schema), byte values in hex, floats in their shortest exact form, and the
    /// server's bounds on statements, lock waits and idle transactions.
    var transactionSettings: [(String, String)] {
        let milliseconds = Int(timeout * 1000)
        return [
            ("search_path", SQL.identifier(schema)), ("bytea_output", "hex"), ("extra_float_digits", "1"),
            ("statement_timeout", String(max(1000, milliseconds - 1000))),
            ("lock_timeout", String(Self.lockTimeout)),
            ("idle_in_transaction_session_timeout", String(Self.idleInTransactionTimeout))
        ]
    }

    /// The statement that makes ``transactionSettings``, every value bound: for the transaction
    /// (`local`) or, on a connection that is a session of its own, once for the session.
    func transactionSettingsStatement(local: Bool = true) -> (String, [String?]) {
        let settings = transactionSettings
        let calls = settings.indices.map { "set_config($\(2 * $0 + 1), $\(2 * $0 + 2), \(local))" }
        return ("SELECT " + calls.joined(separator: ", "), settings.flatMap { [$0.0, $0.1] })
    }

    /// Where the settings go around `sql` (true: the statement, false: the settings), or nil when
    /// `sql` is sent alone: on a session of its own (set at connect time), inside a transaction block, which its BEGIN already set, and for
    /// statements that cannot run in a transaction block (VACUUM; they name their tables with
    /// their schema).
    func transactionSettingsOrder(for sql: String) -> [Bool]? {
        guard isPooled, PQtransactionStatus(handle) == PQTRANS_IDLE else { return nil }
        let head = sql.prefix(24).uppercased()
        if head.hasPrefix("VACUUM") { return nil }
        if head.hasPrefix("BEGIN") || head.hasPrefix("START TRANSACTION") { return [true, false] }
        return [false, true]
    }

    /// Sends `statements` in one pipeline ending in one Sync (one round trip, one implicit
    /// transaction unless one of them opens a block) and returns the result of the statement at
    /// `returning`; the first error any of them met is thrown.
    func runPipelined(_ statements: [(String, [String?])], deadline: Date, returning: Int) throws(ObjectGraphError)
        -> PostgresResult
    {
        guard PQenterPipelineMode(handle) == 1 else { throw brokenError() }
        for (sql, parameters) in statements {
            let sent: Int32 = withParameters(parameters) { values in
                PQsendQueryParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
            }
            guard sent == 1 else { throw brokenError() }
        }
        guard PQpipelineSync(handle) == 1 else { throw brokenError() }
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            guard flushed == 1, try wait(for: Int16(POLLOUT | POLLIN), until: deadline) else { throw brokenError() }
            _ = PQconsumeInput(handle)
        }
        var index = 0
        var kept: PostgresResult?
        var failure: ObjectGraphError?
        collecting: while true {
            while PQisBusy(handle) == 1 {
                guard try wait(for: Int16(POLLIN), until: deadline) else { throw brokenError() }
                guard PQconsumeInput(handle) == 1 else { throw brokenError() }
            }
            guard let result = PQgetResult(handle) else {
                // The end of one statement's results; more ends than statements: the connection
                // failed without a Sync's answer.
                index += 1
                if index > statements.count || PQstatus(handle) != CONNECTION_OK { break collecting }
                continue
            }
            let wrapped = PostgresResult(result)
            switch PQresultStatus(result) {
            case PGRES_PIPELINE_SYNC: break collecting
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                if index == returning { kept = wrapped }
            case PGRES_PIPELINE_ABORTED: break  // after an error reported by an earlier statement
            default:
                if failure == nil {
                    failure = PostgresError.map(
                        result, place: place, sql: statements[min(index, statements.count - 1)].0)
                }
            }
        }
        if PQstatus(handle) != CONNECTION_OK || PQexitPipelineMode(handle) != 1 {
            isBroken = true
            throw failure ?? brokenError()
        }
        if let failure { throw failure }
        guard let kept else { throw ObjectGraphError(.io, "\(place): PostgreSQL sent no result for a statement") }
        return kept
    }
}
