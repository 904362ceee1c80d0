import CPostgres
import Foundation
import ObjectGraph
import RelationalCore

#if canImport(Glibc)
    import Glibc
#endif

/// One libpq connection, with storefs's own bound on every statement: a server that stops
/// answering fails the statement after ``timeout`` instead of holding the FUSE request (and the
/// process in the kernel behind it) forever.
///
/// Statements are sent with libpq's asynchronous calls and waited for with poll(2) on the socket,
/// so the wait has a deadline whatever the network does; the server's `statement_timeout` and
/// `lock_timeout` bound its own side. A connection that failed (or timed out) is broken for
/// good: the pool drops it and a new one is made.
///
/// Threading: not thread-safe; one thread uses it at a time (the pool hands it out).
final class PostgresConnection {
    let handle: OpaquePointer
    /// Seconds a statement may take, send to last row.
    let timeout: Double
    var isBroken = false
    /// Whether the connection goes through a pooler rather than to a server session of its own:
    /// a pooler answers the connection with a key of its own (libpq's PQbackendPID), not the
    /// process id of the server process that runs its statements. Learnt at connect time.
    private(set) var isPooled = false
    /// Names the server in messages, without a password.
    let place: String
    /// Masks the password in libpq's connection messages.
    let location: PostgresLocation
    var schema: String { location.schema }
    /// How far this connection's server had replayed the primary's WAL when last asked
    /// (StandbyReads.swift); `UInt64.max` on a server not in recovery.
    var replayed: UInt64 = 0

    /// Milliseconds a statement waits for a row another writer holds: the fsync or close waiting
    /// for the save waits behind it, so the wait is short; a save that times out fails with EIO
    /// and is tried again by its writer. Locks are normally held for the few milliseconds of
    /// another save's commit; longer only when that writer's machine vanished mid-commit.
    static let lockTimeout = 3000
    /// Milliseconds a transaction may sit waiting for its client before the server ends it and
    /// lets go of its locks: what a machine that vanished mid-commit costs the others.
    static let idleInTransactionTimeout = 10000

    /// Seconds a connection may take to be made, at most: a server that cannot be reached (or
    /// accepts and never answers, a stopped one) fails the connect within this, and within the
    /// deadline of the call that needed the connection.
    static let connectLimit: Double = 10

    /// Connects and prepares the session: UTF-8, UTC and standard strings for the session; the
    /// store's schema first on the search path, byte values in hex, floats in their shortest exact
    /// form, and server-side bounds on statements and locks for every transaction, sent with its
    /// first statement (PostgresConnection+Settings.swift), so that a transaction-mode pooler
    /// (pgbouncer) that gives each transaction another server connection changes nothing. Every
    /// value storefs sends is a bound parameter, so no setting changes how a statement's text is read.
    ///
    /// The connection is made with libpq's non-blocking calls and waited for with poll(2), so
    /// it ends by `deadline` (or within ``connectLimit``), whatever the network or the server does.
    init(_ location: PostgresLocation, timeout: Double, deadline: Date? = nil) throws(ObjectGraphError) {
        self.timeout = timeout
        self.place = location.description
        self.location = location
        let limit = min(deadline ?? .distantFuture, Date().addingTimeInterval(min(timeout, Self.connectLimit)))
        // Several hosts: tried one by one, each with a deadline of its own (HostList.swift).
        let hosts = HostList(location)
        if let hosts {
            handle = try hosts.connect(
                until: limit, place: location.description, hidingPassword: location.hidingPassword)
        } else {
            guard let connection = PQconnectStart(location.connectionURL) else {
                throw ObjectGraphError(.io, "\(location): libpq could not make a connection (out of memory)")
            }
            handle = connection
        }
        do throws(ObjectGraphError) {
            if hosts == nil { try connect(until: limit) }
            // First the settings a transaction-mode pooler carries from one server connection to
            // the next (pgbouncer re-sends these reported ones), and whether there is one; then,
            // on a session of its own, the rest for the session; behind a pooler they go with
            // every transaction instead (PostgresConnection+Settings.swift).
            let until = min(limit.addingTimeInterval(timeout), deadline ?? .distantFuture)
            let settings = Self.sessionSettings
            let calls = settings.indices.map { "set_config($\(2 * $0 + 1), $\(2 * $0 + 2), false)" }
            let answer = try run(
                "SELECT pg_backend_pid(), " + calls.joined(separator: ", "), settings.flatMap { [$0.0, $0.1] },
                deadline: until, settingUp: true)
            isPooled = answer.integer(0, 0) != Int64(serverProcess)
            if !isPooled {
                let (sql, parameters) = transactionSettingsStatement(local: false)
                _ = try run(sql, parameters, deadline: until, settingUp: true)
            }
        } catch {
            // Fully initialized here: deinit finishes the connection.
            isBroken = true
            throw error
        }
    }

    /// Drives libpq's connection to its end, waiting on its socket until `deadline`.
    private func connect(until deadline: Date) throws(ObjectGraphError) {
        switch try Self.drive(handle, until: deadline) {
        case .connected: return
        case .failed: throw connectError()
        case .timedOut:
            isBroken = true
            throw ObjectGraphError(
                .io, "\(place): PostgreSQL did not accept a connection in time; it is tried again at the next request")
        }
    }

    /// How a connect attempt ended.
    enum ConnectOutcome { case connected, failed, timedOut }

    /// Drives libpq's non-blocking connect of `handle` until it is made, fails, or `deadline`
    /// passes; a query's budget stopping (its request interrupted) throws its error.
    static func drive(_ handle: OpaquePointer, until deadline: Date) throws(ObjectGraphError) -> ConnectOutcome {
        guard PQstatus(handle) != CONNECTION_BAD else { return .failed }
        var status = PGRES_POLLING_WRITING
        while true {
            switch status {
            case PGRES_POLLING_OK: return .connected
            case PGRES_POLLING_FAILED: return .failed
            default: break
            }
            // libpq may change sockets between polls (the next address of a host name).
            let socket = PQsocket(handle)
            guard socket >= 0 else { return .failed }
            let events = status == PGRES_POLLING_READING ? Int16(POLLIN) : Int16(POLLOUT)
            while true {
                let remaining = deadline.timeIntervalSinceNow
                guard remaining > 0 else { return .timedOut }
                let budget = QueryBudget.current
                if let budget, budget.shouldStop() { throw budget.error }
                var descriptor = pollfd(fd: socket, events: events, revents: 0)
                let slice = budget == nil ? 1 : budgetPollSeconds
                let ready = poll(&descriptor, 1, Int32(min(remaining, slice) * 1000) + 1)
                if ready > 0 { break }
                if ready < 0 && errno != EINTR { return .failed }
            }
            status = PQconnectPoll(handle)
        }
    }

    private func connectError() -> ObjectGraphError {
        isBroken = true
        return ObjectGraphError(
            .io, "\(place): cannot connect to PostgreSQL: \(location.hidingPassword(in: Self.message(of: handle)))")
    }

    deinit { PQfinish(handle) }

    /// The server process serving this connection (`pg_backend_pid()`), known without a round trip.
    var serverProcess: Int32 { PQbackendPID(handle) }

    /// Runs one statement with text parameters (nil: NULL); returns its result. The answer is
    /// waited for until `deadline`, or for ``timeout`` seconds.
    ///
    /// - Throws: ``ObjectGraphError`` mapped from the server's SQLSTATE (``PostgresError``), or
    ///   ``ObjectGraphError/Code/io`` when the connection fails or the answer does not come in time
    ///   (the connection is then broken).
    @discardableResult
    func execute(_ sql: String, _ parameters: [String?] = [], deadline: Date? = nil) throws(ObjectGraphError)
        -> PostgresResult
    {
        try run(sql, parameters, deadline: deadline ?? Date().addingTimeInterval(timeout))
    }

    /// Sends `sql` with its parameters and collects its results; the last one is returned.
    /// Outside a transaction block the transaction's settings go with it, in the same round trip.
    private func run(_ sql: String, _ parameters: [String?], deadline: Date, settingUp: Bool = false)
        throws(ObjectGraphError) -> PostgresResult
    {
        guard !isBroken else { throw ObjectGraphError(.io, "\(place): the connection to PostgreSQL was lost") }
        if !settingUp, let order = transactionSettingsOrder(for: sql) {
            return try runPipelined(
                order.map { $0 ? (sql, parameters) : transactionSettingsStatement() }, deadline: deadline,
                returning: order.firstIndex(of: true) ?? 0)
        }
        let sent: Int32 = withParameters(parameters) { values in
            PQsendQueryParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        guard sent == 1 else { throw brokenError() }
        // Flushing: a large statement may not go out in one write.
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            guard flushed == 1, try wait(for: Int16(POLLOUT | POLLIN), until: deadline) else { throw brokenError() }
            _ = PQconsumeInput(handle)
        }
        var last: PostgresResult?
        var failure: ObjectGraphError?
        while true {
            while PQisBusy(handle) == 1 {
                guard try wait(for: Int16(POLLIN), until: deadline) else { throw brokenError() }
                guard PQconsumeInput(handle) == 1 else { throw brokenError() }
            }
            guard let result = PQgetResult(handle) else { break }
            let wrapped = PostgresResult(result)
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                last = wrapped
            default:
                if failure == nil { failure = PostgresError.map(result, place: place, sql: sql) }
            }
        }
        if PQstatus(handle) != CONNECTION_OK {
            isBroken = true
            throw failure ?? brokenError()
        }
        if let failure { throw failure }
        guard let last else { throw ObjectGraphError(.io, "\(place): PostgreSQL sent no result for a statement") }
        return last
    }

    /// Waits until the socket is ready or the deadline passes; false when it passed (the
    /// connection is then broken: an answer may still be on its way and cannot be told apart).
    func wait(for events: Int16, until deadline: Date) throws(ObjectGraphError)
        -> Bool
    {
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                isBroken = true
                throw ObjectGraphError(
                    .io,
                    "\(place): PostgreSQL did not answer within \(Int(timeout)) s; the connection is dropped and made again"
                )
            }
            // A query's budget (ObjectGraph's QueryBudget: its time limit, or its request
            // interrupted) stops the wait: the connection is dropped and the server asked to stop
            // the statement, since nothing in the server polls the budget.
            let budget = QueryBudget.current
            if let budget, budget.shouldStop() {
                isBroken = true
                cancelStatement()
                throw budget.error
            }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let slice = budget == nil ? 1 : Self.budgetPollSeconds
            let ready = poll(&descriptor, 1, Int32(min(remaining, slice) * 1000) + 1)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    /// Seconds between two looks at a query's budget while an answer is awaited.
    static let budgetPollSeconds = 0.05

    /// Asks the server to stop this connection's running statement (PQcancel), from a thread of
    /// its own: the request opens a connection of its own, which a server that does not answer
    /// would hold.
    private func cancelStatement() {
        guard let cancel = PQgetCancel(handle) else { return }
        let request = CancelRequest(pointer: cancel)
        Thread {
            var message = [CChar](repeating: 0, count: 256)
            _ = PQcancel(request.pointer, &message, Int32(message.count))
            PQfreeCancel(request.pointer)
        }.start()
    }

    /// Waits up to `seconds` for something to read (a notification), consumes it and returns
    /// the notifications that arrived; throws when the connection failed.
    func notifications(waiting seconds: Double) throws(ObjectGraphError) -> [(channel: String, payload: String)] {
        guard !isBroken else { throw ObjectGraphError(.io, "\(place): the connection to PostgreSQL was lost") }
        var found: [(String, String)] = []
        func drain() {
            while let notice = PQnotifies(handle) {
                found.append((String(cString: notice.pointee.relname), String(cString: notice.pointee.extra)))
                PQfreemem(notice)
            }
        }
        drain()
        if found.isEmpty {
            let socket = PQsocket(handle)
            guard socket >= 0 else { throw brokenError() }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(seconds * 1000))
            if ready < 0 && errno != EINTR { throw brokenError() }
            if ready > 0 { guard PQconsumeInput(handle) == 1 else { throw brokenError() } }
            drain()
        }
        if PQstatus(handle) != CONNECTION_OK { throw brokenError() }
        return found
    }

    func brokenError() -> ObjectGraphError {
        isBroken = true
        return ObjectGraphError(
            .io,
            "\(place): the connection to PostgreSQL failed: \(location.hidingPassword(in: Self.message(of: handle)))")
    }

    static func message(of connection: OpaquePointer) -> String {
        guard let text = PQerrorMessage(connection) else { return "unknown error" }
        let message = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        return message.isEmpty ? "the server closed the connection" : message.replacingOccurrences(of: "\n", with: "; ")
    }

    /// Calls `body` with the parameters as C strings (nil for NULL) that live for the call.
    func withParameters<T>(_ parameters: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        guard !parameters.isEmpty else { return body(nil) }
        var storage: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { for pointer in storage { free(pointer) } }
        return storage.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
        }
    }
}

/// A statement's result: rows of text values, read in place.
///
/// Threading: not thread-safe; owned by the caller that ran the statement.
final class PostgresResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { PQclear(handle) }

    var rowCount: Int { Int(PQntuples(handle)) }
    var columnCount: Int { Int(PQnfields(handle)) }
    /// Rows a command changed (UPDATE, DELETE, INSERT); 0 when it says none.
    var changedCount: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) == 1 }

    /// The value's text; nil for NULL.
    func text(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column), let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        return String(cString: value)
    }

    /// The value's bytes as sent (text format), without a copy; nil for NULL.
    func bytes(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer? {
        guard !isNull(row, column), let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        return UnsafeRawBufferPointer(start: value, count: Int(PQgetlength(handle, Int32(row), Int32(column))))
    }

    func integer(_ row: Int, _ column: Int) -> Int64? { text(row, column).flatMap { Int64($0) } }

    /// The type of `column` (PostgreSQL's type OID: 20 bigint, 17 bytea, 701 double precision, ...).
    func typeOID(_ column: Int) -> UInt32 { UInt32(PQftype(handle, Int32(column))) }

    /// Whether `column` is bytea (its text is the hex form).
    func isBytea(_ column: Int) -> Bool { typeOID(column) == 17 }
}

/// PostgreSQL's SQLSTATE codes mapped to the engine's, with the server's message.
enum PostgresError {
    static func map(_ result: OpaquePointer, place: String, sql: String) -> ObjectGraphError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        let message =
            PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? "unknown error"
        let text = "\(place): \(message) (SQLSTATE \(state))"
        switch state {
        case "23505": return ObjectGraphError(.exists, text)
        case "40001", "40P01", "55P03":
            // Serialization failures, deadlocks and lock timeouts: another writer held the rows;
            // nothing was written, and the next commit tries again.
            return ObjectGraphError(.io, "\(text); another writer held the rows, the commit is tried again")
        case "57014": return ObjectGraphError(.io, "\(text); the statement took too long")
        case "42P01", "3F000", "3D000": return ObjectGraphError(.notFound, text)
        case "25006":
            return ObjectGraphError(.readOnly, "\(text); the server is a read-only replica: mount it with -o ro")
        case "42501", "28000", "28P01": return ObjectGraphError(.notPermitted, text)
        case "53100": return ObjectGraphError(.noSpace, "\(text); the server's disk is full")
        default:
            if state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") {
                return ObjectGraphError(.io, text)
            }
            return ObjectGraphError(.io, text)
        }
    }
}

/// libpq's cancel object, handed to the thread that sends it once and frees it.
private struct CancelRequest: @unchecked Sendable {
    // @unchecked: PQcancel may be called from any thread; only that thread uses it afterwards.
    let pointer: OpaquePointer
}
