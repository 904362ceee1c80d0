import CPostgres
import Foundation
import ObjectGraph

#if canImport(Glibc)
    import Glibc
#endif

/// `COPY ... FROM STDIN` on a connection: many rows in one statement, sent as a stream of text
/// while the server parses what came before, with no statement text or parameter per value to
/// build, send and parse (docs/benchmarks.md, section 40i, measures it against multi-row INSERTs).
extension PostgresConnection {
    /// Runs `sql`, a `COPY ... FROM STDIN` inside the current transaction block, and sends the
    /// data `produce` writes: it is called with an empty buffer again and again, appends the next
    /// rows (about ``copyChunkBytes`` at a time) and returns false once it appended the last.
    /// Returns the rows the server copied.
    ///
    /// Every wait is bounded: each piece of data, and then the server's answer, must go through
    /// within ``timeout`` seconds of the last progress (the connection is broken otherwise), so a
    /// large load takes as long as it needs while a stalled server still fails it. The socket is
    /// non-blocking while data is sent, so a server that stops reading cannot hold a write.
    ///
    /// - Throws: the server's error (``PostgresError``) or EIO; after any error the transaction
    ///   is aborted and the caller rolls back.
    func copyIn(_ sql: String, produce: (inout [UInt8]) throws(ObjectGraphError) -> Bool) throws(ObjectGraphError)
        -> Int
    {
        guard !isBroken else { throw ObjectGraphError(.io, "\(place): the connection to PostgreSQL was lost") }
        // Behind a transaction-mode pooler, settings ride with a transaction's first statement
        // (PostgresConnection+Settings.swift); a COPY is never one.
        guard PQtransactionStatus(handle) == PQTRANS_INTRANS else {
            throw ObjectGraphError(.io, "\(place): a COPY runs only inside a save's transaction")
        }
        guard PQsendQuery(handle, sql) == 1 else { throw brokenError() }
        try flush(until: Date().addingTimeInterval(timeout))
        // The server answers COPY IN, or an error (a table that is not there, a bad column).
        let start = try nextResult(until: Date().addingTimeInterval(timeout))
        guard let start, PQresultStatus(start.handle) == PGRES_COPY_IN else {
            let failure = start.map { PostgresError.map($0.handle, place: place, sql: sql) }
            try drainResults(until: Date().addingTimeInterval(timeout))
            throw failure ?? brokenError()
        }
        guard PQsetnonblocking(handle, 1) == 0 else { throw brokenError() }
        defer { if !isBroken { _ = PQsetnonblocking(handle, 0) } }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(Self.copyChunkBytes + Self.copyChunkBytes / 4)
        var more = true
        var producing: ObjectGraphError?
        // The server ended the COPY early (an error at a row: a key taken, a value refused): what
        // it said is among the results below.
        var serverEnded = false
        sending: while more {
            buffer.removeAll(keepingCapacity: true)
            do throws(ObjectGraphError) {
                more = try produce(&buffer)
            } catch {
                producing = error
                break
            }
            guard !buffer.isEmpty else { continue }
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                let put = buffer.withUnsafeBytes { bytes in
                    PQputCopyData(handle, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
                }
                if put == 1 { break }
                if put < 0 && PQstatus(handle) == CONNECTION_OK {
                    serverEnded = true
                    break
                }
                guard put == 0, try wait(for: Int16(POLLOUT | POLLIN), until: deadline) else { throw brokenError() }
                guard PQconsumeInput(handle) == 1 else { throw brokenError() }
            }
            if serverEnded { break sending }
        }
        // A failure while producing ends the COPY with an error: the server discards the rows.
        let deadline = Date().addingTimeInterval(timeout)
        while !serverEnded {
            let ended = PQputCopyEnd(handle, producing == nil ? nil : "storefs stopped the copy")
            if ended == 1 { break }
            if ended < 0 && PQstatus(handle) == CONNECTION_OK { break }
            guard ended == 0, try wait(for: Int16(POLLOUT | POLLIN), until: deadline) else { throw brokenError() }
            guard PQconsumeInput(handle) == 1 else { throw brokenError() }
        }
        try flush(until: deadline)
        var copied = 0
        var failure: ObjectGraphError?
        let answered = Date().addingTimeInterval(timeout)
        while let result = try nextResult(until: answered) {
            switch PQresultStatus(result.handle) {
            case PGRES_COMMAND_OK: copied = result.changedCount
            default: if failure == nil { failure = PostgresError.map(result.handle, place: place, sql: sql) }
            }
        }
        if PQstatus(handle) != CONNECTION_OK {
            isBroken = true
            throw producing ?? failure ?? brokenError()
        }
        if let producing { throw producing }
        if let failure { throw failure }
        return copied
    }

    /// Bytes of rows handed to libpq at a time: the server parses one piece while the next is made.
    static let copyChunkBytes = 1 << 20

    /// Sends what libpq holds, waiting on the socket until `deadline`.
    private func flush(until deadline: Date) throws(ObjectGraphError) {
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { return }
            guard flushed == 1, try wait(for: Int16(POLLOUT | POLLIN), until: deadline) else { throw brokenError() }
            guard PQconsumeInput(handle) == 1 else { throw brokenError() }
        }
    }

    /// The next result of the statement sent, nil after its last; waits until `deadline`.
    private func nextResult(until deadline: Date) throws(ObjectGraphError) -> PostgresResult? {
        while PQisBusy(handle) == 1 {
            guard try wait(for: Int16(POLLIN), until: deadline) else { throw brokenError() }
            guard PQconsumeInput(handle) == 1 else { throw brokenError() }
        }
        return PQgetResult(handle).map(PostgresResult.init)
    }

    /// Reads and drops the results left of the statement sent.
    private func drainResults(until deadline: Date) throws(ObjectGraphError) {
        while try nextResult(until: deadline) != nil {}
    }
}
