import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A primary and its streaming hot standby as tests use them: a URL naming both (libpq's
/// multi-host form, one socket folder per server), promotion, synchronous replication, replay
/// paused and caught up. Every wait is bounded.
extension PostgresServer {
    /// A URL for a store in schema `schema` naming `servers` in order (libpq's `host=A,B`), with
    /// storefs's `extra` parameters (`reads=primary`, `timeout=5`).
    public static func url(schema: String, servers: [PostgresServer], extra: String = "") -> URL {
        let hosts = servers.map(\.folder.path).joined(separator: ",")
        return URL(
            string: "postgresql:///postgres?host=\(hosts)&port=5432&user=postgres&schema=\(schema)"
                + (extra.isEmpty ? "" : "&\(extra)"))!
    }

    /// Ends recovery on a standby (`pg_ctl promote`, waited for): it takes writes from now on.
    public func promote() throws {
        try asPostgres("\(bin)/pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-w", "-t", "60", "promote"])
    }

    /// Makes every commit on this primary wait for a standby to have flushed it
    /// (`synchronous_standby_names = '*'`, `synchronous_commit = on`), and waits until a standby
    /// streams as synchronous.
    public func requireSynchronousStandby() throws {
        try psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
        try psql("ALTER SYSTEM SET synchronous_commit = on")
        try psql("SELECT pg_reload_conf()")
        try wait("a synchronous standby", seconds: 30) {
            try value("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") != "0"
        }
    }

    /// Waits until this standby has replayed everything `primary` has written so far.
    public func waitForReplay(of primary: PostgresServer) throws {
        let position = try primary.value("SELECT pg_current_wal_lsn()")
        try wait("the standby to replay \(position)", seconds: 30) {
            try value("SELECT pg_last_wal_replay_lsn() >= '\(position)'::pg_lsn") == "t"
        }
    }

    /// psql's answer without its line end.
    public func value(_ sql: String) throws -> String {
        try psql(sql).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Storefs's connections to this server (`application_name` `storefs`, or `storefs listener …`).
    public func storefsConnections() throws -> Int {
        Int(try value("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'storefs%'")) ?? -1
    }

    /// Polls `condition` every 50 ms for up to `seconds`; throws naming `what` when it never holds.
    public func wait(_ what: String, seconds: Double, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try !condition() {
            guard Date() < deadline else { throw TestServerError("waited \(Int(seconds)) s for \(what)\n\(log)") }
            usleep(50_000)
        }
    }
}
