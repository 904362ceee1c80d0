import CPostgres
import Foundation
import ObjectGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The servers of a URL that names several (libpq's `host=A,B`), tried one by one by storefs
/// itself, each with a deadline of its own.
///
/// libpq tries the hosts of a multi-host URL in order, but its `connect_timeout` works only in
/// its blocking connect; with the non-blocking `PQconnectPoll` that ``PostgresConnection`` uses,
/// a first host that swallows packets (a machine that vanished: its address still resolves, its
/// packets go nowhere) holds the attempt until TCP gives up, long after the connection's own
/// limit, and the next host is never reached. So each host is given to libpq alone, as a
/// one-host connection, and abandoned for the next at ``perHostLimit``.
///
/// `target_session_attrs` keeps libpq's meaning: each one-host attempt carries it and libpq
/// checks the server (read-write: not read-only and not in recovery; standby: in recovery; ...).
/// `prefer-standby` is libpq's two passes: every host asked for a standby first, then for any
/// server. A host that did not answer in time within the last ``avoidSeconds`` is tried after the
/// others with a shorter deadline (it is still tried: the order among servers that qualify is the
/// only thing that changes), and is not tried twice in one connect; so a vanished primary costs
/// one full deadline, once, not one per connection.
///
/// Threading: a value; ``unanswering`` is shared by every connection of the process.
struct HostList {
    /// One host's connection options: every option of the URL, with the host's own `host`,
    /// `hostaddr` and `port`.
    struct Host {
        var options: [(String, String)]
        /// `host:port` (or the address) as messages name it.
        var name: String
    }

    let hosts: [Host]
    /// The `target_session_attrs` of each pass.
    let passes: [String]
    /// Seconds one host is given to accept a connection.
    let perHostLimit: Double

    /// Seconds a multi-host URL gives each host to accept a connection unless it sets its own
    /// `connect_timeout` (libpq's meaning: per host). Three hosts fit in
    /// ``PostgresConnection/connectLimit``; a server that accepts at all does it in milliseconds.
    static let defaultPerHostLimit: Double = 3
    /// Seconds a host that did not answer is tried after the others.
    static let avoidSeconds: Double = 30
    /// When each host (``Host/name``) last let a connect attempt run out of time.
    private static let unanswering = Mutex<[String: Date]>([:])

    /// The hosts of `location`; nil when it names one host (libpq connects to it as given) or
    /// when libpq cannot read the URL (it then says why, at the connect).
    init?(_ location: PostgresLocation) {
        guard location.namesSeveralHosts else { return nil }
        var message: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(location.connectionURL, &message) else {
            if let message { PQfreemem(message) }
            return nil
        }
        defer { PQconninfoFree(parsed) }
        var options: [(String, String)] = []
        var option = parsed
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { options.append((String(cString: keyword), String(cString: value))) }
            option += 1
        }
        func list(_ name: String) -> [String] {
            guard let value = options.first(where: { $0.0 == name })?.1 else { return [] }
            return value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        let names = list("host"), addresses = list("hostaddr"), ports = list("port")
        let count = max(names.count, addresses.count)
        // libpq's rules: as many addresses as names when both are given, one port or one per host.
        guard count > 1, names.isEmpty || addresses.isEmpty || names.count == addresses.count,
            ports.count <= 1 || ports.count == count
        else { return nil }
        let attributes = options.first { $0.0 == "target_session_attrs" }?.1 ?? "any"
        let shared = options.filter { !["host", "hostaddr", "port", "target_session_attrs"].contains($0.0) }
        hosts = (0..<count).map { index in
            var own = shared
            let name = names.isEmpty ? "" : names[index]
            let address = addresses.isEmpty ? "" : addresses[index]
            let port = ports.isEmpty ? "" : ports.count == 1 ? ports[0] : ports[index]
            // An empty entry is libpq's default (PGHOST, the socket folder): left out, libpq fills it.
            if !name.isEmpty { own.append(("host", name)) }
            if !address.isEmpty { own.append(("hostaddr", address)) }
            if !port.isEmpty { own.append(("port", port)) }
            let shown = (name.isEmpty ? address : name) + (port.isEmpty ? "" : ":\(port)")
            return Host(options: own, name: shown.isEmpty ? "host \(index + 1)" : shown)
        }
        passes = attributes == "prefer-standby" ? ["standby", "any"] : [attributes]
        let given = URLComponents(url: location.url, resolvingAgainstBaseURL: false)?.queryItems?
            .first { $0.name == "connect_timeout" }?.value.flatMap(Double.init)
        // libpq's floor: a connect_timeout under 2 s is taken as 2 s.
        perHostLimit = given.map { $0 > 0 ? max(2, $0) : Self.defaultPerHostLimit } ?? Self.defaultPerHostLimit
    }

    /// Seconds a host that recently did not answer is given when it comes round again: enough
    /// for one that is back to accept (a server that accepts does it in milliseconds), short
    /// enough that one still gone costs little.
    static let recheckLimit: Double = 1

    /// The hosts in the order to try, each with its deadline: the URL's order, hosts that
    /// recently did not answer last and with ``recheckLimit``.
    var order: [(index: Int, limit: Double)] {
        let now = Date()
        let recent = Self.unanswering.withLock { unanswering in
            Set(
                hosts.indices.filter {
                    unanswering[hosts[$0].name].map { now.timeIntervalSince($0) < Self.avoidSeconds } ?? false
                })
        }
        return hosts.indices.filter { !recent.contains($0) }.map { ($0, perHostLimit) }
            + hosts.indices.filter { recent.contains($0) }.map { ($0, min(perHostLimit, Self.recheckLimit)) }
    }

    /// Connects to the first host that qualifies, by `deadline`: a libpq connection, made.
    ///
    /// - Throws: ``ObjectGraphError/Code/io`` naming every host tried and why it was passed over.
    func connect(until deadline: Date, place: String, hidingPassword: (String) -> String) throws(ObjectGraphError)
        -> OpaquePointer
    {
        var reasons: [String] = []
        var timedOut = Set<Int>()
        let order = self.order
        for attributes in passes {
            for (index, limit) in order where !timedOut.contains(index) {
                let now = Date()
                guard deadline > now else {
                    reasons.append("no time was left for \(hosts[index].name)")
                    break
                }
                let options = hosts[index].options + [("target_session_attrs", attributes)]
                guard let handle = Self.start(options) else {
                    throw ObjectGraphError(.io, "\(place): libpq could not make a connection (out of memory)")
                }
                let outcome: PostgresConnection.ConnectOutcome
                do {
                    outcome = try PostgresConnection.drive(handle, until: min(deadline, now.addingTimeInterval(limit)))
                } catch {
                    PQfinish(handle)
                    throw error
                }
                switch outcome {
                case .connected:
                    _ = Self.unanswering.withLock { $0.removeValue(forKey: hosts[index].name) }
                    return handle
                case .failed:
                    reasons.append("\(hosts[index].name): \(hidingPassword(PostgresConnection.message(of: handle)))")
                case .timedOut:
                    timedOut.insert(index)
                    Self.unanswering.withLock { $0[hosts[index].name] = Date() }
                    reasons.append(
                        "\(hosts[index].name): no answer within \(String(format: "%.1f", Date().timeIntervalSince(now))) s"
                    )
                }
                PQfinish(handle)
            }
        }
        throw ObjectGraphError(
            .io,
            "\(place): cannot connect to PostgreSQL: no server of the URL qualified (target_session_attrs=\(passes.last ?? "any")): "
                + reasons.joined(separator: "; "))
    }

    /// Starts libpq's non-blocking connect with `options` as keyword and value arrays.
    private static func start(_ options: [(String, String)]) -> OpaquePointer? {
        let keywords = options.map { strdup($0.0) } + [nil]
        let values = options.map { strdup($0.1) } + [nil]
        defer {
            for pointer in keywords { free(pointer) }
            for pointer in values { free(pointer) }
        }
        return keywords.map { $0.map { UnsafePointer($0) } }.withUnsafeBufferPointer { keywordBuffer in
            values.map { $0.map { UnsafePointer($0) } }.withUnsafeBufferPointer { valueBuffer in
                PQconnectStartParams(keywordBuffer.baseAddress, valueBuffer.baseAddress, 0)
            }
        }
    }
}
