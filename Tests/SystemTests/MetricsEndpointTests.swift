import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `storefs mount --metrics` (and `-o metrics=` as fstab and the unit give it): Prometheus text
/// read by a real Prometheus parser (the Python client's, Debian's python3-prometheus-client),
/// its names held to Prometheus's naming rules; the endpoint held to its bounds by hostile
/// clients while the mount keeps answering.
@Suite struct MetricsEndpointTests {
    /// Debian's Python, where python3-prometheus-client installs (scripts/setup).
    static func python() throws -> String {
        let path = "/usr/bin/python3"
        let check = try run(path, ["-c", "import prometheus_client.parser"])
        guard check.succeeded else {
            throw SystemTestError(
                "these tests parse metrics with Prometheus's Python client: apt-get install -y python3-prometheus-client (scripts/setup installs it): \(check.errorOutput)"
            )
        }
        return path
    }

    /// Fetches `url` and parses it with prometheus_client; checks Prometheus's naming rules.
    static let parser = #"""
        import json, re, sys, urllib.request
        from prometheus_client.parser import text_string_to_metric_families
        with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
            content_type = response.headers.get("Content-Type", "")
            text = response.read().decode("utf-8")
        NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
        LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
        problems, samples, types = [], {}, {}
        typed = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
        for family in text_string_to_metric_families(text):
            types[family.name] = family.type
            if not family.name.startswith("storefs_"):
                problems.append(family.name + ": not in the storefs_ namespace")
            if not NAME.match(family.name):
                problems.append(family.name + ": not a metric name")
            if family.type == "untyped" or not (family.name in typed or family.name + "_total" in typed):
                problems.append(family.name + ": no TYPE")
            if family.type == "gauge" and re.search(r"_(total|count|sum|bucket)$", family.name):
                problems.append(family.name + ": a gauge with a counter's or histogram's suffix")
            if family.type == "histogram" and not family.name.endswith("_seconds"):
                problems.append(family.name + ": a histogram of durations not in seconds")
            buckets = {}
            for sample in family.samples:
                for label in sample.labels:
                    if not LABEL.match(label) or label.startswith("__"):
                        problems.append(sample.name + ": label " + label)
                    if label == "le" and not sample.name.endswith("_bucket"):
                        problems.append(sample.name + ": le outside a bucket")
                if family.type == "counter" and not sample.name.endswith(("_total", "_created")):
                    problems.append(sample.name + ": a counter without _total")
                labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(sample.labels.items()) if k != "le")
                if sample.name.endswith("_bucket"):
                    buckets.setdefault(labels, []).append((float(sample.labels["le"]), sample.value))
                    continue
                samples[sample.name + ("{" + labels + "}" if labels else "")] = sample.value
            for labels, values in buckets.items():
                counts = [value for _, value in sorted(values)]
                if counts != sorted(counts):
                    problems.append(family.name + labels + ": buckets not cumulative")
                total = samples.get(family.name + "_count" + ("{" + labels + "}" if labels else ""))
                if sorted(values)[-1][0] != float("inf") or counts[-1] != total:
                    problems.append(family.name + labels + ": +Inf bucket is not the count")
        print(json.dumps({"contentType": content_type, "problems": problems, "samples": samples, "types": types}))
        """#

    /// Scrapes `port` with the parser above.
    static func scrape(_ port: Int) throws -> (
        problems: [String], samples: [String: Double], types: [String: String], contentType: String
    ) {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent(
            "storefs-scrape-\(UUID().uuidString.prefix(8)).py")
        try parser.write(to: scratch, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let result = try run("/usr/bin/timeout", ["30", try python(), scratch.path, "http://127.0.0.1:\(port)/metrics"])
        guard result.succeeded,
            let object = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any]
        else {
            throw SystemTestError(
                "scraping port \(port) failed (\(result.status)): \(result.output)\(result.errorOutput)")
        }
        return (
            object["problems"] as? [String] ?? ["no problems list"],
            (object["samples"] as? [String: NSNumber] ?? [:]).mapValues(\.doubleValue),
            object["types"] as? [String: String] ?? [:], object["contentType"] as? String ?? ""
        )
    }

    /// The metrics docs/PRODUCTION.md's table lists (its first column).
    static func documentedMetrics() throws -> Set<String> {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("docs/PRODUCTION.md"), encoding: .utf8)
        var names = Set<String>()
        for line in text.split(separator: "\n") where line.hasPrefix("| `storefs_") {
            let first = line.split(separator: "|")[0]
            for part in first.split(separator: "`") where part.hasPrefix("storefs_") { names.insert(String(part)) }
        }
        return names
    }

    /// A TCP port nobody listens on now.
    static func freePort() throws -> Int {
        let result = try run(
            try python(),
            ["-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"])
        guard let port = Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw SystemTestError("no free port: \(result.errorOutput)")
        }
        return port
    }

    @Test func aMountsMetricsParseAndFollowPrometheusNamingRules() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let port = try Self.freePort()
        let mounted = try run(
            try storefsBinary(), ["mount", scratch.store, scratch.mountPoint, "--metrics", String(port)])
        #expect(mounted.succeeded, "\(mounted.errorOutput)")
        defer { _ = try? run(try storefsBinary(), ["unmount", scratch.mountPoint]) }
        // Work for every metric: listings, reads, a write with fsync (a commit), a failed commit.
        #expect(try run("/bin/ls", ["-l", scratch.mountPoint + "/Employee"]).succeeded)
        #expect(try run("/bin/cat", [scratch.mountPoint + "/Employee/p2/lastName"]).succeeded)
        #expect(try shell("echo Hopper > \(quoted(scratch.mountPoint + "/Employee/p2/lastName")) && sync").succeeded)
        #expect(try run("/bin/sync", [scratch.mountPoint + "/Employee/p2/lastName"]).succeeded)
        let missing = try run("/bin/cat", [scratch.mountPoint + "/Employee/p99999/lastName"])
        #expect(!missing.succeeded)
        let scraped = try Self.scrape(port)
        #expect(scraped.problems.isEmpty, "\(scraped.problems)")
        #expect(scraped.contentType.hasPrefix("text/plain; version=0.0.4"))
        let samples = scraped.samples
        #expect((samples["storefs_fuse_requests_total{op=\"lookup\"}"] ?? 0) > 0)
        #expect((samples["storefs_fuse_requests_total{op=\"readdirplus\"}"] ?? 0) > 0)
        #expect((samples["storefs_fuse_request_seconds_count{op=\"lookup\"}"] ?? 0) > 0)
        #expect((samples["storefs_fuse_request_seconds_sum{op=\"lookup\"}"] ?? 0) > 0)
        #expect((samples["storefs_fuse_errors_total"] ?? 0) > 0, "the missing object's lookup")
        #expect((samples["storefs_commits_total"] ?? 0) >= 1)
        #expect((samples["storefs_commit_seconds_count"] ?? 0) >= 1)
        #expect((samples["storefs_cache_objects"] ?? 0) > 0)
        #expect((samples["storefs_cache_bytes"] ?? 0) > 0)
        #expect((samples["storefs_kernel_invalidations_total"] ?? 0) > 0, "the write invalidated what the kernel held")
        #expect(samples["storefs_mount_info{store=\"\(scratch.store)\",type=\"SQLite\",version=\"0.1.0\"}"] == 1)
        #expect(scraped.types["storefs_fuse_request_seconds"] == "histogram")
        #expect(scraped.types["storefs_commits"] == "counter")
        #expect(scraped.types["storefs_cache_objects"] == "gauge")
        #expect(samples.keys.allSatisfy { !$0.hasPrefix("storefs_postgres") }, "no PostgreSQL metrics for a file store")
        // docs/PRODUCTION.md lists exactly what a mount serves.
        let exposed = Set(scraped.types.map { $0.value == "counter" ? $0.key + "_total" : $0.key })
        let documented = try Self.documentedMetrics()
        #expect(exposed == documented.filter { !$0.hasPrefix("storefs_postgres") }, "docs/PRODUCTION.md's list")
        // Counters only grow: a second scrape after more work is at least the first.
        #expect(try run("/bin/ls", [scratch.mountPoint + "/Department"]).succeeded)
        let again = try Self.scrape(port).samples
        for (name, value) in samples where name.hasSuffix("_total") || name.contains("_total{") {
            #expect((again[name] ?? -1) >= value, "\(name)")
        }
    }

    /// Idle clients, a client past the connection limit, an oversized request, wrong methods and
    /// paths: each answered or cut off within its bounds, and the mount answers throughout.
    @Test func hostileClientsNeverStallTheMountOrTheEndpoint() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let port = try Self.freePort()
        #expect(
            try run(
                try storefsBinary(), ["mount", scratch.store, scratch.mountPoint, "-o", "metrics=127.0.0.1:\(port)"]
            ).succeeded)
        defer { _ = try? run(try storefsBinary(), ["unmount", scratch.mountPoint]) }
        let script = #"""
            import json, socket, subprocess, sys, time
            port, mount = int(sys.argv[1]), sys.argv[2]
            result = {}
            def ask(request, timeout=10):
                s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
                s.sendall(request)
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
                s.close()
                return data.split(b"\r\n", 1)[0].decode()
            idle = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(8)]
            time.sleep(0.5)
            result["ninth"] = ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            started = time.time()
            result["ls"] = subprocess.run(["ls", mount + "/Employee"], capture_output=True, timeout=20).returncode
            result["lsSeconds"] = time.time() - started
            # The idle ones are closed by the server once their deadline passes.
            closed = 0
            for s in idle:
                try:
                    closed += 1 if s.recv(1) == b"" else 0
                except OSError:
                    closed += 1
            result["idleClosed"] = closed
            result["oversized"] = ask(b"GET /metrics HTTP/1.1\r\nX-Padding: " + b"a" * 20000 + b"\r\n\r\n")
            result["post"] = ask(b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            result["elsewhere"] = ask(b"GET /secrets HTTP/1.1\r\n\r\n")
            result["garbage"] = ask(b"\x00\xff\xfe nonsense\r\n\r\n")
            result["metrics"] = ask(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n")
            print(json.dumps(result))
            """#
        let file = scratch.path + "/hostile.py"
        try script.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try run("/usr/bin/timeout", ["120", try Self.python(), file, String(port), scratch.mountPoint])
        let object = try #require(
            (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any],
            "the script printed no JSON (\(result.status)): \(result.output)\(result.errorOutput)")
        #expect(object["ninth"] as? String == "HTTP/1.1 503 Service Unavailable", "past 8 connections")
        #expect(object["ls"] as? Int == 0, "the mount answers while the endpoint is full")
        #expect(object["idleClosed"] as? Int == 8, "idle clients are cut off at their deadline")
        #expect(object["oversized"] as? String == "HTTP/1.1 431 Request Header Fields Too Large")
        #expect(object["post"] as? String == "HTTP/1.1 405 Method Not Allowed")
        #expect(object["elsewhere"] as? String == "HTTP/1.1 404 Not Found")
        #expect(object["garbage"] as? String == "HTTP/1.1 400 Bad Request")
        #expect(object["metrics"] as? String == "HTTP/1.1 200 OK")
    }

    /// `-o metrics=` as the systemd unit passes it (`storefs mount --foreground -o ${OPTIONS}`),
    /// the unit with the metrics drop-in still verifies, and a taken port fails the mount.
    @Test func theUnitsOptionServesMetricsAndATakenPortFailsTheMount() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let port = try Self.freePort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: try storefsBinary())
        server.arguments = [
            "mount", "--foreground", "-o", "ro,metrics=127.0.0.1:\(port)", scratch.store, scratch.mountPoint
        ]
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer {
            kill(server.processIdentifier, SIGTERM)
            _ = waitForExit(server, timeout: 30)
        }
        #expect(eventually(timeout: 30) { isMounted(scratch.mountPoint) })
        #expect(try run("/bin/ls", [scratch.mountPoint + "/Employee"]).succeeded)
        let scraped = try Self.scrape(port)
        #expect(scraped.problems.isEmpty, "\(scraped.problems)")
        #expect((scraped.samples["storefs_fuse_requests_total{op=\"readdirplus\"}"] ?? 0) > 0)
        // The port is taken now: a second mount asking for it fails before mounting.
        let other = try Scratch()
        defer { other.remove() }
        try other.makeStore()
        let refused = try run(
            try storefsBinary(), ["mount", other.store, other.mountPoint, "--metrics", "127.0.0.1:\(port)"])
        #expect(!refused.succeeded)
        #expect(refused.errorOutput.contains("cannot listen on 127.0.0.1:\(port)"), "\(refused.errorOutput)")
        #expect(!isMounted(other.mountPoint))
        #expect(
            !(try run(try storefsBinary(), ["mount", other.store, other.mountPoint, "--metrics", "[::1"])).succeeded,
            "an address that does not parse is refused")
        // An fstab line's options, as mount(8) hands them to the helper (run here as mount(8)
        // would run it, with the storefs just built).
        let helperPort = try Self.freePort()
        let helper = try run(
            "/usr/bin/env",
            [
                "STOREFS=\(try storefsBinary())", "/bin/sh",
                packageRoot.appendingPathComponent("scripts/mount.storefs").path,
                other.store, other.mountPoint, "-o", "defaults,nofail,ro,metrics=127.0.0.1:\(helperPort)"
            ])
        #expect(helper.succeeded, "\(helper.errorOutput)")
        #expect(try run("/bin/ls", [other.mountPoint + "/Department"]).succeeded)
        #expect((try Self.scrape(helperPort).samples["storefs_fuse_requests_total{op=\"readdirplus\"}"] ?? 0) > 0)
        #expect(try run(try storefsBinary(), ["unmount", other.mountPoint]).succeeded)
        // The unit with the drop-in systemd/metrics.conf appended still verifies.
        let unit = try String(
            contentsOf: packageRoot.appendingPathComponent("systemd/storefs@.service"), encoding: .utf8)
        let dropIn = try String(contentsOf: packageRoot.appendingPathComponent("systemd/metrics.conf"), encoding: .utf8)
        #expect(dropIn.contains("IPAddressAllow=localhost"))
        let complaint = try SystemdUnitTests.verify(unit: unit + "\n" + dropIn, named: "storefs@.service", in: scratch)
        #expect(complaint == nil, "\(complaint ?? "")")
    }

    /// A PostgreSQL mount's connections, reconnects and the lag of other writers' announcements.
    @Test func aPostgreSQLMountsConnectionsAndAnnouncementsAreMetrics() throws {
        let server = try PostgresServer.shared()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let schema = PostgresServer.uniqueSchema("metrics")
        let url = server.url(schema: schema).absoluteString
        #expect(try run(try storefsBinary(), ["create", "--model", "sample", url]).succeeded)
        let port = try Self.freePort()
        #expect(try run(try storefsBinary(), ["mount", url, scratch.mountPoint, "--metrics", String(port)]).succeeded)
        defer { _ = try? run(try storefsBinary(), ["unmount", scratch.mountPoint]) }
        let writer = scratch.path + "/writer"
        try FileManager.default.createDirectory(atPath: writer, withIntermediateDirectories: true)
        #expect(try run(try storefsBinary(), ["mount", url, writer]).succeeded)
        defer { _ = try? run(try storefsBinary(), ["unmount", writer]) }
        #expect(try run("/bin/ls", [scratch.mountPoint + "/Department"]).succeeded, "the first mount listens")
        #expect(try run("/bin/mkdir", [writer + "/Department/p1"]).succeeded)
        #expect(try shell("echo Research > \(quoted(writer + "/Department/p1/name")) && sync").succeeded)
        var samples: [String: Double] = [:]
        #expect(
            eventually(timeout: 20) {
                samples = (try? Self.scrape(port).samples) ?? [:]
                return (samples["storefs_postgres_announcements_total"] ?? 0) >= 1
            }, "the other mount's commits are heard: \(samples.filter { $0.key.hasPrefix("storefs_postgres") })")
        #expect((samples["storefs_postgres_connections"] ?? 0) >= 2, "a reader and the listener")
        #expect((samples["storefs_postgres_announcement_lag_seconds"] ?? -1) >= 0)
        #expect(samples["storefs_postgres_reconnects_total"] == 0)
        // The server ends the listeners' sessions (this store's only: ChangeListener names them for
        // the channel, PostgresLocation's FNV-1a of the schema): the mount reconnects, counts it, and hears again.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in schema.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        let ended = try server.psql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'storefs listener storefs_\(String(hash, radix: 16))'"
        )
        #expect(ended.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "both mounts' listeners: \(ended)")
        let heard = samples["storefs_postgres_announcements_total"] ?? 0
        #expect(
            eventually(timeout: 30) {
                samples = (try? Self.scrape(port).samples) ?? [:]
                return (samples["storefs_postgres_reconnects_total"] ?? 0) >= 1
            },
            "the ended listener is counted as a reconnect: \(samples.filter { $0.key.hasPrefix("storefs_postgres") })")
        #expect(try shell("echo Sales > \(quoted(writer + "/Department/p1/name")) && sync").succeeded)
        #expect(
            eventually(timeout: 30) {
                samples = (try? Self.scrape(port).samples) ?? [:]
                return (samples["storefs_postgres_announcements_total"] ?? 0) > heard
            }, "announcements are heard again after the reconnect")
        #expect(
            eventually(timeout: 20) {
                (try? String(contentsOfFile: scratch.mountPoint + "/Department/p1/name", encoding: .utf8)) == "Sales\n"
            }, "the reconnected mount shows the other mount's commit")
        let scraped = try Self.scrape(port)
        #expect(scraped.problems.isEmpty)
        let exposed = Set(scraped.types.map { $0.value == "counter" ? $0.key + "_total" : $0.key })
        #expect(exposed == (try Self.documentedMetrics()), "docs/PRODUCTION.md's list")
    }
}
