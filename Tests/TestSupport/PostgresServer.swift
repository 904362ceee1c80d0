import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A private PostgreSQL cluster for tests: `initdb` in a new folder, the server run as the
/// unprivileged `postgres` user (PostgreSQL refuses to run as root; Debian's `postgresql`
/// package makes the user), listening on a Unix socket in that folder only, so no port is taken
/// and nothing outside the test can reach it. Every command it runs has a timeout.
///
/// ``shared()`` is one cluster per test process, stopped and removed when the process exits;
/// tests that stop, kill or restart a server make their own with ``init(name:)``. A cluster a
/// crashed test process left behind is stopped and removed by the next one.
///
/// A machine without PostgreSQL makes every test that needs it fail with a message that says
/// what to install: never a silent pass.
///
/// Threading: ``shared()`` is safe from any thread; one thread drives a given server's
/// start/stop/kill.
public final class PostgresServer: Sendable {
    /// The folder: `data/` (the cluster), the socket, `server.log`.
    public let folder: URL
    let bin: String
    /// The host it runs on when it listens on a network too (``init(name:standbyOf:on:)``).
    public let host: HostPair?
    /// Seconds any one command (initdb, pg_ctl) may take before the test fails.
    static let commandTimeout = 90

    private static let prefix = "storefs-pg-"
    private static let sharedServer = Mutex<Result<PostgresServer, TestServerError>?>(nil)

    /// The process's shared cluster, started at the first call.
    public static func shared() throws -> PostgresServer {
        try sharedServer.withLock { (shared) throws -> PostgresServer in
            if let shared { return try shared.get() }
            let result: Result<PostgresServer, TestServerError>
            do {
                result = .success(try PostgresServer(name: "shared"))
            } catch let error as TestServerError {
                result = .failure(error)
            } catch {
                result = .failure(TestServerError("\(error)"))
            }
            shared = result
            if case .success = result { atexit { PostgresServer.stopShared() } }
            return try result.get()
        }
    }

    private static func stopShared() {
        guard case .success(let server)? = sharedServer.withLock({ $0 }) else { return }
        server.remove()
    }

    /// Makes and starts a new cluster; with `primary`, a hot standby of that cluster's server
    /// (pg_basebackup with streaming replication, as a replica for read-only mounts would run);
    /// with `host`, run inside its server namespace, listening on its address too (any client
    /// there may connect, without a password), as a server on a machine of its own.
    public init(name: String, standbyOf primary: PostgresServer? = nil, on host: HostPair? = nil) throws {
        guard let bin = Self.binaries() else {
            throw TestServerError(
                "this test needs a PostgreSQL server and none is installed (no /usr/lib/postgresql/*/bin/initdb): "
                    + "scripts/setup installs Debian's postgresql package")
        }
        guard getpwnam("postgres") != nil else {
            throw TestServerError(
                "this test runs PostgreSQL as the user postgres, which does not exist: install Debian's postgresql package"
            )
        }
        self.bin = bin
        self.host = host
        Self.removeLeftovers()
        folder = URL(fileURLWithPath: "/tmp").appendingPathComponent(
            "\(Self.prefix)\(getpid())-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Self.run("chown", ["postgres", folder.path])
        do {
            let data = folder.appendingPathComponent("data").path
            if let primary {
                try asPostgres(
                    "\(bin)/pg_basebackup",
                    // A fast checkpoint: a spread one on a freshly loaded primary outlasted the harness's
                    // timeout once.
                    [
                        "-D", data, "-R", "-c", "fast", "-h", primary.folder.path, "-p", "5432", "-U", "postgres",
                        "-X", "stream",
                    ])
            } else {
                try asPostgres(
                    "\(bin)/initdb",
                    ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"])
            }
            if let host {
                let rules = try FileHandle(forWritingTo: folder.appendingPathComponent("data/pg_hba.conf"))
                defer { try? rules.close() }
                try rules.seekToEnd()
                try rules.write(contentsOf: Data("host all all \(host.clientAddress)/32 trust\n".utf8))
            }
            try start()
        } catch {
            remove()
            throw error
        }
    }

    /// A URL for a store in schema `schema` of the cluster's `postgres` database, through the
    /// network from ``host``'s client namespace (``url(schema:)`` is the socket, from anywhere).
    public func networkURL(schema: String) -> URL? {
        host.map { URL(string: "postgresql://postgres@\($0.serverAddress):5432/postgres?schema=\(schema)")! }
    }

    /// Lets a client at `address` connect without a password too (another client host of
    /// ``host``: ``HostPair/addClient()``), and reloads the server's rules.
    public func allow(_ address: String) throws {
        let rules = try FileHandle(forWritingTo: folder.appendingPathComponent("data/pg_hba.conf"))
        defer { try? rules.close() }
        try rules.seekToEnd()
        try rules.write(contentsOf: Data("host all all \(address)/32 trust\n".utf8))
        try psql("SELECT pg_reload_conf()")
    }

    /// A URL for a store in schema `schema` of the cluster's `postgres` database.
    public func url(schema: String) -> URL {
        URL(string: "postgresql:///postgres?host=\(folder.path)&port=5432&user=postgres&schema=\(schema)")!
    }

    /// A schema name no other test uses.
    public static func uniqueSchema(_ name: String) -> String {
        "\(name)_\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Starts the server (again) and waits until it accepts connections.
    public func start() throws {
        // fsync off: the tests kill the server process, never the machine, and a process kill
        // keeps what PostgreSQL wrote to the kernel.
        let options =
            "-k \(folder.path) -p 5432 -c listen_addresses='\(host?.serverAddress ?? "")' -c fsync=off -c max_connections=200"
        try asPostgres(
            inside: host?.serverNamespace,
            "\(bin)/pg_ctl",
            [
                "-D", folder.appendingPathComponent("data").path, "-o", options, "-l",
                folder.appendingPathComponent("server.log").path, "-w",
                "-t", "60", "start"
            ])
    }

    /// Stops the server as `pg_ctl stop -m MODE` does: `immediate` is a crash (every server process
    /// killed at once, recovery at the next start); `fast` a clean stop.
    public func stop(mode: String = "fast") throws {
        try asPostgres(
            "\(bin)/pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", mode, "-w", "-t", "60", "stop"])
    }

    /// Stops (SIGSTOP) or continues (SIGCONT) the server and every process it started: a
    /// server that keeps its connections open and answers nothing.
    public func signalAll(_ signal: Int32) throws {
        for pid in try processes() { kill(pid, signal) }
    }

    /// The server's postmaster (named by its pid file) and the processes it started.
    private func processes() throws -> [pid_t] {
        let pidFile = folder.appendingPathComponent("data/postmaster.pid")
        guard let text = try? String(contentsOf: pidFile, encoding: .utf8),
            let first = text.split(separator: "\n").first,
            let postmaster = pid_t(first)
        else { throw TestServerError("no running server in \(folder.path)") }
        let children = try Self.run("timeout", ["10", "pgrep", "-P", String(postmaster)]).split(separator: "\n")
            .compactMap { pid_t($0) }
        return [postmaster] + children
    }

    /// Kills the server and every process it started with SIGKILL (whatever state they are in,
    /// stopped included), as a crash of its machine would, and clears what a dead server leaves
    /// that would stop ``start()`` (its pid file names a process that may linger as a zombie
    /// where nothing reaps it).
    public func killAll() throws {
        let all = try processes()
        for pid in all { kill(pid, SIGKILL) }
        func gone(_ pid: pid_t) -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            // The state follows the command's closing parenthesis: Z is a zombie, dead already.
            return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
        }
        let deadline = Date().addingTimeInterval(10)
        while !all.allSatisfy(gone) {
            guard Date() < deadline else { throw TestServerError("the killed server's processes did not end") }
            usleep(20_000)
        }
        try? FileManager.default.removeItem(at: folder.appendingPathComponent("data/postmaster.pid"))
        try? FileManager.default.removeItem(at: folder.appendingPathComponent(".s.PGSQL.5432.lock"))
    }

    /// psql on the `postgres` database; returns its output (unaligned, tuples only).
    @discardableResult
    public func psql(_ sql: String) throws -> String {
        try Self.run(
            "timeout",
            [
                "\(Self.commandTimeout)", "runuser", "-u", "postgres", "--", "\(bin)/psql", "-X", "-q", "-A", "-t",
                "-v", "ON_ERROR_STOP=1", "-h",
                folder.path, "-p", "5432", "-d", "postgres", "-c", sql
            ])
    }

    /// Stops the server (if it runs) and removes its folder.
    public func remove() {
        _ = try? stop(mode: "immediate")
        try? FileManager.default.removeItem(at: folder)
    }

    /// What the server logged (for a failing test's message).
    public var log: String {
        (try? String(contentsOf: folder.appendingPathComponent("server.log"), encoding: .utf8)).map {
            String($0.suffix(3000))
        } ?? ""
    }

    /// Runs `executable` as the user postgres; `inside` a network namespace when given.
    func asPostgres(inside namespace: String? = nil, _ executable: String, _ arguments: [String]) throws {
        let command = ["runuser", "-u", "postgres", "--", executable] + arguments
        try Self.run(
            "timeout", ["\(Self.commandTimeout)"] + (namespace.map { HostPair.inside($0, command) } ?? command))
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

    /// The newest installed PostgreSQL's bin folder.
    private static func binaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init)
            .sorted()
        return versions.reversed().map { "\(root)/\($0)/bin" }.first {
            FileManager.default.isExecutableFile(atPath: "\($0)/initdb")
        }
    }

    /// Clusters of test processes that ended without removing theirs: stopped and removed.
    private static func removeLeftovers() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for name in names where name.hasPrefix(prefix) {
            let pidText = name.dropFirst(prefix.count).prefix { $0 != "-" }
            guard let pid = pid_t(pidText), pid > 0, pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else {
                continue
            }
            let data = "/tmp/\(name)/data"
            if let bin = binaries() {
                _ = try? runTool(
                    "timeout",
                    ["30", "runuser", "-u", "postgres", "--", "\(bin)/pg_ctl", "-D", data, "-m", "immediate", "stop"])
            }
            try? FileManager.default.removeItem(atPath: "/tmp/\(name)")
        }
    }
}

public struct TestServerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
