import Foundation
import ObjectGraph

/// Where a PostgreSQL store lives: a libpq connection URL and the schema that holds the store's
/// tables (several stores share a database, one schema each).
///
/// `postgresql://[user@]host[:port]/database[?parameter=value&...]`. libpq's own parameters pass
/// through (`host=/run/postgresql` for a socket folder, `sslmode`, `passfile`, `options`, ...).
/// storefs's parameters, `schema=NAME` and `timeout=SECONDS`, are taken out before libpq sees the
/// URL (libpq refuses parameters it does not know). Without `schema`, the first entry of a
/// `search_path` set in `options` (`options=-csearch_path%3DNAME`) names the schema, else
/// ``defaultSchema``.
///
/// Passwords come from `~/.pgpass`, `PGPASSWORD` or `passfile`, as libpq finds them; a password
/// written in the URL works but never appears in what storefs logs or shows (``description``).
///
/// Threading: a value; share it freely.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    /// The URL schemes libpq accepts.
    public static let schemes = ["postgresql", "postgres"]
    /// The schema of a URL that names none: not `public`, so a store never mixes its tables with
    /// whatever else a database keeps there.
    public static let defaultSchema = "storefs"

    /// The URL as given.
    public let url: URL
    /// The schema holding the store's tables.
    public let schema: String
    /// Seconds a statement may take before the store gives up on its connection (storefs's
    /// parameter `timeout=SECONDS`, 1 to 600).
    public let statementTimeout: Double
    /// How mounts follow other mounts' commits (storefs's parameter `follow=auto|poll`):
    /// `auto` listens (LISTEN/NOTIFY) where the server allows it and reads the persistent
    /// history where it does not; `poll` always reads the history (behind a transaction-mode
    /// pooler, which does not carry LISTEN).
    public let followsByPolling: Bool
    /// Seconds between reads of the history when following by polling (storefs's parameter
    /// `poll=MILLISECONDS`, 10 to 60000, default 200).
    public let pollInterval: Double
    public static let defaultPollInterval = 0.2
    /// Longer than any statement storefs makes on a sound server (a migration's largest insert),
    /// short enough that a writer blocked in the kernel by a server that stopped answering gets
    /// EIO within a minute.
    public static let defaultTimeout: Double = 30
    /// What libpq is given: the URL without storefs's parameters, with the timeouts and keepalives
    /// of ``connectionDefaults`` where the URL sets none.
    var connectionURL: String
    /// Whether the URL names several servers (libpq's `host=A,B` or `postgresql://A,B/...`): a
    /// primary and its standbys (PostgresLocation+Standbys.swift). Of the `session=` URL in
    /// ``forSession``'s copy, which connects there.
    public internal(set) var namesSeveralHosts: Bool
    /// Whether reads go to a standby where one is up: several hosts and no `reads=primary`.
    public let readsFromStandby: Bool
    /// What libpq is given for the connections that need a server session of their own (file
    /// locks, LISTEN) when the URL names a transaction-mode pooler: storefs's parameter
    /// `session=URL` (PostgresLocation+Pooler.swift); nil: the same as ``connectionURL``.
    var sessionConnectionURL: String?
    /// Whether the `session=` URL names several servers.
    var sessionNamesSeveralHosts = false
    /// The URL without its password, for logs, messages and /proc/mounts.
    public let description: String
    /// The password the URL holds, as written and decoded: libpq quotes parts of a URL it
    /// refuses in its messages, which ``hidingPassword(in:)`` masks.
    private var passwords: [String]

    /// Settings every connection gets unless the URL sets them, each for a reason:
    /// a server that cannot be reached fails a connect within 10 s; a connection whose peer
    /// vanished (a link down, a server host gone) is found dead within about 25 s by TCP
    /// keepalives and within 15 s of unacknowledged data by `tcp_user_timeout`, instead of the
    /// kernel's 15 minutes; `application_name` names storefs in `pg_stat_activity`.
    static let connectionDefaults: [(String, String)] = [
        ("connect_timeout", "10"), ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"),
        ("keepalives_count", "3"), ("tcp_user_timeout", "15000"), ("application_name", "storefs")
    ]

    /// Whether `url` names a PostgreSQL store.
    public static func isPostgres(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return schemes.contains(scheme)
    }

    public init(_ url: URL) throws(ObjectGraphError) {
        guard Self.isPostgres(url), var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw ObjectGraphError(.unsupported, "not a PostgreSQL URL (postgresql://user@host/database)")
        }
        self.url = url
        passwords = Set(
            [components.password, components.percentEncodedPassword]
                + (components.queryItems ?? []).filter { $0.name.lowercased() == "password" }.map(\.value)
                + (components.percentEncodedQueryItems ?? []).filter { $0.name.lowercased() == "password" }.map(\.value)
        ).compactMap { $0 }.filter { !$0.isEmpty }.sorted { $0.count > $1.count }
        var items = components.queryItems ?? []
        var schema: String?
        if let index = items.firstIndex(where: { $0.name == "schema" }) {
            schema = items[index].value ?? ""
            items.remove(at: index)
        } else if let options = items.first(where: { $0.name == "options" })?.value {
            schema = Self.searchPath(in: options)
        }
        if let index = items.firstIndex(where: { $0.name == "timeout" }) {
            guard let seconds = items[index].value.flatMap(Double.init), seconds >= 1, seconds <= 600 else {
                throw ObjectGraphError(
                    .unsupported,
                    "timeout= needs a number of seconds from 1 to 600 (default \(Int(Self.defaultTimeout)))")
            }
            statementTimeout = seconds
            items.remove(at: index)
        } else {
            statementTimeout = Self.defaultTimeout
        }
        if let index = items.firstIndex(where: { $0.name == "follow" }) {
            guard let mode = items[index].value, ["auto", "poll"].contains(mode) else {
                throw ObjectGraphError(.unsupported, "follow= is auto (LISTEN where allowed, else polling) or poll")
            }
            followsByPolling = mode == "poll"
            items.remove(at: index)
        } else {
            followsByPolling = false
        }
        if let index = items.firstIndex(where: { $0.name == "poll" }) {
            guard let milliseconds = items[index].value.flatMap(Int.init), milliseconds >= 10, milliseconds <= 60_000
            else {
                throw ObjectGraphError(
                    .unsupported,
                    "poll= needs milliseconds from 10 to 60000 (default \(Int(Self.defaultPollInterval * 1000)))")
            }
            pollInterval = Double(milliseconds) / 1000
            items.remove(at: index)
        } else {
            pollInterval = Self.defaultPollInterval
        }

        let session = try Self.takeSession(from: &items)
        let reads = try Self.takeReads(from: &items)
        namesSeveralHosts = Self.hostCount(components, items) > 1
        readsFromStandby = namesSeveralHosts && reads != "primary"
        let chosen = schema ?? Self.defaultSchema
        guard Self.isValidSchema(chosen) else {
            throw ObjectGraphError(
                .unsupported,
                "schema name \"\(chosen.prefix(80))\" cannot hold a store: use 1 to 63 letters, digits and _, not starting with a digit"
            )
        }
        self.schema = chosen
        for (name, value) in Self.connectionDefaults where !items.contains(where: { $0.name == name }) {
            items.append(URLQueryItem(name: name, value: value))
        }
        let attributesAdded = namesSeveralHosts && !items.contains { $0.name == "target_session_attrs" }
        if attributesAdded {
            items.append(URLQueryItem(name: "target_session_attrs", value: "read-write"))
        }
        components.queryItems = items.isEmpty ? nil : items
        connectionURL = components.string ?? url.absoluteString
        var shown = components
        shown.queryItems =
            (components.queryItems ?? []).filter { item in
                !Self.connectionDefaults.contains { $0.0 == item.name }
                    && !(attributesAdded && item.name == "target_session_attrs")
            } + (reads == nil ? [] : [URLQueryItem(name: "reads", value: reads)])
            + (schema == nil ? [] : [URLQueryItem(name: "schema", value: chosen)])
            + (statementTimeout == Self.defaultTimeout
                ? [] : [URLQueryItem(name: "timeout", value: String(Int(statementTimeout)))])
            + (followsByPolling ? [URLQueryItem(name: "follow", value: "poll")] : [])
            + (pollInterval == Self.defaultPollInterval
                ? [] : [URLQueryItem(name: "poll", value: String(Int((pollInterval * 1000).rounded())))])
            + (session == nil ? [] : [URLQueryItem(name: "session", value: session?.description)])
        if shown.queryItems?.isEmpty == true { shown.queryItems = nil }
        description = StoreURL.redacting(shown.string ?? "postgresql://(unprintable URL)")
        sessionConnectionURL = session?.connectionURL
        sessionNamesSeveralHosts = session?.namesSeveralHosts ?? false
        passwords += session?.passwords ?? []
    }

    /// `text` (a message of libpq's) with the URL's password masked wherever it appears.
    func hidingPassword(in text: String) -> String {
        passwords.reduce(text) { $0.replacingOccurrences(of: $1, with: StoreURL.mask) }
    }

    /// The first schema of `-csearch_path=A,B` (or `-c search_path=A`) in libpq's `options`.
    static func searchPath(in options: String) -> String? {
        let words = options.split(separator: " ").map(String.init)
        for (i, word) in words.enumerated() {
            var setting = word
            if word == "-c", i + 1 < words.count {
                setting = words[i + 1]
            } else if word.hasPrefix("-c") {
                setting = String(word.dropFirst(2))
            } else {
                continue
            }
            let parts = setting.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0] == "search_path" else { continue }
            return parts[1].split(separator: ",").first.map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: " \""))
            }
        }
        return nil
    }

    /// Plain identifiers only: quoted everywhere anyway, but a name that needs no quoting is one a
    /// user can type in psql and in a URL without surprises.
    static func isValidSchema(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 63, let first = name.unicodeScalars.first, !("0"..."9").contains(first)
        else {
            return false
        }
        return name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_") }
    }

    /// The channel a store's commits are announced on: one per schema, named by a hash so any
    /// schema name fits PostgreSQL's 63-byte identifiers.
    var channel: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in schema.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return "storefs_" + String(hash, radix: 16)
    }
}
