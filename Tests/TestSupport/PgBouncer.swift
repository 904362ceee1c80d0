import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A private pgbouncer (Debian's package) in front of a test's ``PostgresServer``, in transaction
/// pooling mode: each transaction gets whichever server connection is free, and a client's
/// session state does not follow it. It runs as the unprivileged `postgres` user (pgbouncer
/// refuses root) from a new folder under /tmp, listening on a Unix socket in that folder only
/// (port 6432 names the socket; no TCP port is taken), with `trust` authentication to and from
/// the server. Every command it runs has a timeout; ``remove()`` kills it and removes the folder.
///
/// A machine without pgbouncer makes every test that needs it fail with a message that says
/// what to install: never a silent pass.
///
/// Threading: one thread drives a given pooler's start/kill.
public final class PgBouncer: Sendable {
    /// The folder: `pgbouncer.ini`, `userlist.txt`, the socket, `pgbouncer.log`, the pid file.
    public let folder: URL
    public let server: PostgresServer
    /// Server connections per database and user: every client's transactions share these.
    public let poolSize: Int
    public static let port = 6432
    static let commandTimeout = 30
    private static let prefix = "storefs-pgb-"
    private static let binary = "/usr/sbin/pgbouncer"

    /// Where a pooler on a host of its own runs: inside `namespace`, listening on TCP at
    /// `listenAddress` (port ``port``) besides its socket, and reaching the server at
    /// `serverAddress` (the server's ``HostPair/serverAddress``).
    public struct Host: Sendable {
        public let namespace: String
        public let listenAddress: String
        public let serverAddress: String
        public init(namespace: String, listenAddress: String, serverAddress: String) {
            self.namespace = namespace
            self.listenAddress = listenAddress
            self.serverAddress = serverAddress
        }
    }
    /// The host it runs on; nil: the test's own network, the server through its socket.
    public let host: Host?

    /// Writes the configuration and starts pgbouncer in front of `server` (on `host`, if given).
    public init(name: String, in front: PostgresServer, poolSize: Int = 1, on host: Host? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw TestServerError(
                "this test needs pgbouncer and none is installed (no \(Self.binary)): scripts/setup installs Debian's pgbouncer package"
            )
        }
        server = front
        self.poolSize = poolSize
        self.host = host
        Self.removeLeftovers()
        folder = URL(fileURLWithPath: "/tmp").appendingPathComponent(
            "\(Self.prefix)\(getpid())-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let configuration = """
            [databases]
            * = host=\(host?.serverAddress ?? front.folder.path) port=5432
            [pgbouncer]
            pool_mode = transaction
            default_pool_size = \(poolSize)
            min_pool_size = 0
            reserve_pool_size = 0
            max_client_conn = 500
            listen_addr = \(host?.listenAddress ?? "")
            listen_port = \(Self.port)
            unix_socket_dir = \(folder.path)
            auth_type = trust
            auth_file = \(folder.path)/userlist.txt
            admin_users = postgres
            pidfile = \(folder.path)/pgbouncer.pid
            logfile = \(folder.path)/pgbouncer.log
            server_login_retry = 1
            query_wait_timeout = 60

            """
        try Data(configuration.utf8).write(to: folder.appendingPathComponent("pgbouncer.ini"))
        try Data("\"postgres\" \"\"\n".utf8).write(to: folder.appendingPathComponent("userlist.txt"))
        do {
            try Self.run("chown", ["-R", "postgres", folder.path])
            try start()
        } catch {
            remove()
            throw error
        }
    }

    /// A URL for a store in schema `schema` of the server's `postgres` database, through the pooler.
    public func url(schema: String) -> URL {
        URL(string: "postgresql:///postgres?host=\(folder.path)&port=\(Self.port)&user=postgres&schema=\(schema)")!
    }

    /// A URL for a store in schema `schema` through the pooler's TCP address (a pooler on a host).
    public func networkURL(schema: String) -> URL? {
        host.map {
            URL(string: "postgresql://postgres@\($0.listenAddress):\(Self.port)/postgres?schema=\(schema)")!
        }
    }

    /// ``url(schema:)`` with `session=` naming the server itself, for file locks and LISTEN.
    public func urlWithSession(schema: String) -> URL {
        // Percent-encoded whole: the server's URL has & and = of its own.
        let session = server.url(schema: schema).absoluteString.addingPercentEncoding(
            withAllowedCharacters: .alphanumerics)!
        return URL(string: url(schema: schema).absoluteString + "&session=" + session)!
    }

    /// Starts pgbouncer (again: after ``kill()``) and waits until it accepts connections.
    public func start() throws {
        let command = [
            "runuser", "-u", "postgres", "--", Self.binary, "-d", "-q",
            folder.appendingPathComponent("pgbouncer.ini").path
        ]
        try Self.run(
            "timeout", ["\(Self.commandTimeout)"] + (host.map { HostPair.inside($0.namespace, command) } ?? command))
        let deadline = Date().addingTimeInterval(Double(Self.commandTimeout))
        while true {
            if (try? admin("SHOW VERSION")) != nil { return }
            guard Date() < deadline else {
                throw TestServerError("pgbouncer did not accept connections within \(Self.commandTimeout) s: \(log)")
            }
            usleep(50_000)
        }
    }

    /// Kills pgbouncer with SIGKILL, as a crash would: every client and server connection through
    /// it breaks at once. Waits until the process is gone.
    public func kill() throws {
        guard let pid = processID else { throw TestServerError("no running pgbouncer in \(folder.path)") }
        Glibc.kill(pid, SIGKILL)
        let deadline = Date().addingTimeInterval(10)
        while Glibc.kill(pid, 0) == 0 {
            if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                stat.split(separator: ")").last?.split(separator: " ").first == "Z"
            {
                break
            }
            guard Date() < deadline else { throw TestServerError("the killed pgbouncer \(pid) did not end") }
            usleep(20_000)
        }
        try? FileManager.default.removeItem(at: folder.appendingPathComponent("pgbouncer.pid"))
        try? FileManager.default.removeItem(at: folder.appendingPathComponent(".s.PGSQL.\(Self.port)"))
        try? FileManager.default.removeItem(at: folder.appendingPathComponent(".s.PGSQL.\(Self.port).lock"))
    }

    private var processID: pid_t? {
        (try? String(contentsOf: folder.appendingPathComponent("pgbouncer.pid"), encoding: .utf8)).flatMap {
            pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// A command on pgbouncer's admin console (`SHOW POOLS`, `SHOW SERVERS`); its rows, unaligned
    /// with `|` between columns, headers included.
    @discardableResult
    public func admin(_ command: String) throws -> String {
        try Self.run(
            "timeout",
            [
                "\(Self.commandTimeout)", "runuser", "-u", "postgres", "--", "psql", "-X", "-q", "-A", "-h",
                folder.path, "-p", String(Self.port), "-d", "pgbouncer", "-c", command
            ])
    }

    /// psql on the server's `postgres` database through the pooler; its output (tuples only).
    @discardableResult
    public func psql(_ sql: String) throws -> String {
        try Self.run(
            "timeout",
            [
                "\(Self.commandTimeout)", "runuser", "-u", "postgres", "--", "psql", "-X", "-q", "-A", "-t", "-v",
                "ON_ERROR_STOP=1", "-h", folder.path, "-p", String(Self.port), "-d", "postgres", "-c", sql
            ])
    }

    /// Server connections pgbouncer holds to the server's `postgres` database (`SHOW SERVERS`).
    public func serverConnections() throws -> Int {
        let lines = try admin("SHOW SERVERS").split(separator: "\n")
        guard let header = lines.first?.split(separator: "|", omittingEmptySubsequences: false),
            let database = header.firstIndex(of: "database")
        else { return 0 }
        return lines.dropFirst().filter { line in
            let columns = line.split(separator: "|", omittingEmptySubsequences: false)
            return columns.count == header.count && columns[database] == "postgres"
        }.count
    }

    /// Kills pgbouncer (if it runs) and removes its folder.
    public func remove() {
        try? kill()
        try? FileManager.default.removeItem(at: folder)
    }

    /// What pgbouncer logged (for a failing test's message).
    public var log: String {
        (try? String(contentsOf: folder.appendingPathComponent("pgbouncer.log"), encoding: .utf8)).map {
            String($0.suffix(3000))
        } ?? ""
    }

    @discardableResult
    private static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let result = try runTool(executable, arguments)
        guard result.status == 0 else {
            let what = ([executable] + arguments).joined(separator: " ")
            throw TestServerError(
                result.status == 124
                    ? "\(what) did not finish within \(commandTimeout) s"
                    : "\(what) failed (\(result.status)): \(result.error)\(result.output)")
        }
        return result.output
    }

    /// Poolers of test processes that ended without removing theirs: killed and removed.
    private static func removeLeftovers() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for name in names where name.hasPrefix(prefix) {
            let pidText = name.dropFirst(prefix.count).prefix { $0 != "-" }
            guard let pid = pid_t(pidText), pid > 0, pid != getpid(), Glibc.kill(pid, 0) != 0, errno == ESRCH else {
                continue
            }
            let pidFile = "/tmp/\(name)/pgbouncer.pid"
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                let pooler = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pooler > 0,
                let command = try? String(contentsOfFile: "/proc/\(pooler)/comm", encoding: .utf8),
                command.hasPrefix("pgbouncer")
            {
                Glibc.kill(pooler, SIGKILL)
            }
            try? FileManager.default.removeItem(atPath: "/tmp/\(name)")
        }
    }
}
