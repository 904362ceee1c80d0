import Foundation
import ObjectGraph

/// A URL that names a transaction-mode pooler (pgbouncer `pool_mode=transaction`), which gives
/// each transaction whichever server connection is free. Reads and saves work through it as
/// through a server (their settings go with every transaction: PostgresConnection+Settings.swift).
/// File locks (session advisory locks) and LISTEN belong to a server session and cannot go
/// through it: storefs's parameter `session=URL` (percent-encoded, a PostgreSQL URL of the same
/// database that reaches the server directly or through a session-mode pool) names where they
/// go. Without it, a connection that finds itself behind a pooler (``PostgresConnection/isPooled``)
/// follows other mounts by reading the history, and file locks are refused (docs/POSTGRESQL.md,
/// "Through a connection pooler").
extension PostgresLocation {
    /// Takes `session=URL` out of `items` and reads it as a location of its own.
    static func takeSession(from items: inout [URLQueryItem]) throws(ObjectGraphError) -> PostgresLocation? {
        guard let index = items.firstIndex(where: { $0.name == "session" }) else { return nil }
        let value = items[index].value ?? ""
        guard let url = URL(string: value), isPostgres(url) else {
            throw ObjectGraphError(
                .unsupported,
                "session= needs a percent-encoded PostgreSQL URL of the same database that reaches the server in session mode (for file locks and LISTEN)"
            )
        }
        let session = try PostgresLocation(url)
        guard session.sessionConnectionURL == nil else {
            throw ObjectGraphError(.unsupported, "session= names a URL that has a session= of its own")
        }
        items.remove(at: index)
        return session
    }

    /// Whether the URL names where session connections go (`session=`).
    public var hasSessionURL: Bool { sessionConnectionURL != nil }

    /// This location for the connections that need a session of their own (file locks, LISTEN):
    /// the `session=` URL with this store's schema and timeouts, and its own host count (so that
    /// ``forLocks`` and HostList.swift judge the URL that is connected to); itself without one.
    var forSession: PostgresLocation {
        var copy = self
        if let sessionConnectionURL {
            copy.connectionURL = sessionConnectionURL
            copy.namesSeveralHosts = sessionNamesSeveralHosts
        }
        return copy
    }
}
