/// Where `--metrics` (or `-o metrics=`) serves: `PORT` or `:PORT` on the loopback address,
/// `HOST:PORT` (an address or a name), `[IPv6]:PORT`.
struct MetricsAddress: Hashable, Sendable, CustomStringConvertible {
    var host: String
    var port: UInt16

    /// Loopback unless an address is given: metrics say what a store holds (its size, its rate of
    /// change) and are for the machine's own Prometheus unless the operator opens them.
    static let defaultHost = "127.0.0.1"

    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    init(parsing text: String) throws(MountOptionError) {
        let usage = "metrics needs a port or ADDRESS:PORT (e.g. 9567, 127.0.0.1:9567, 0.0.0.0:9567, [::1]:9567)"
        var host = Self.defaultHost
        var portText = Substring(text)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw MountOptionError(usage)
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":") {
            let given = text[..<colon]
            guard !given.contains(":") else { throw MountOptionError(usage + "; put an IPv6 address in brackets") }
            if !given.isEmpty { host = String(given) }
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, host.count <= 253, !host.contains(where: { $0.isWhitespace || $0 == "/" }),
            let port = UInt16(portText)
        else {
            throw MountOptionError(usage)
        }
        self.host = host
        self.port = port
    }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
