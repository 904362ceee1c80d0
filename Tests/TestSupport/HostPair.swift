import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Two hosts joined by one cable: two network namespaces, `server` and `client`, and a veth pair
/// between them with the addresses ``serverAddress`` and ``clientAddress``, which exist only
/// inside those namespaces (nothing outside the test can reach them, and they collide with
/// nobody's). ``cut()`` pulls the cable at the server's end, so the client's side stays up and
/// hears nothing: its packets vanish, as they do when a switch or a far host goes away, and
/// connects and answers wait for their timeouts instead of failing at once.
///
/// Names are unique per instance (`sfsPID-HEX-server`); ``remove()`` deletes both namespaces
/// (which removes the veth pair), and the first pair made in a process also deletes the pairs of
/// test processes that ended without removing theirs. Every command has a timeout.
///
/// Threading: one thread drives a pair.
public final class HostPair: Sendable {
    public let serverNamespace: String
    public let clientNamespace: String
    public let serverAddress = "10.35.0.1"
    public let clientAddress = "10.35.0.2"
    /// The veth ends, as seen inside each namespace (at most 15 characters: IFNAMSIZ).
    private let serverLink: String
    private let clientLink: String

    /// Client hosts added by ``addClient()``: their namespaces.
    private let otherClients = Mutex<[String]>([])

    private static let prefix = "sfs"

    public init() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/nsenter") else {
            throw TestServerError("this test needs nsenter (Debian's util-linux)")
        }
        Self.removeLeftovers()
        let tag = "\(getpid())-\(UUID().uuidString.prefix(6).lowercased())"
        serverNamespace = "\(Self.prefix)\(tag)-server"
        clientNamespace = "\(Self.prefix)\(tag)-client"
        let short = String(UUID().uuidString.prefix(8).lowercased())
        serverLink = "vs\(short)"
        clientLink = "vc\(short)"
        do {
            try Self.ip(["netns", "add", serverNamespace])
            try Self.ip(["netns", "add", clientNamespace])
            try Self.ip(["link", "add", serverLink, "type", "veth", "peer", "name", clientLink])
            try Self.ip(["link", "set", serverLink, "netns", serverNamespace])
            try Self.ip(["link", "set", clientLink, "netns", clientNamespace])
            for (namespace, link, address) in [
                (serverNamespace, serverLink, serverAddress), (clientNamespace, clientLink, clientAddress)
            ] {
                try Self.ip(["-n", namespace, "link", "set", "lo", "up"])
                try Self.ip(["-n", namespace, "addr", "add", "\(address)/24", "dev", link])
                try Self.ip(["-n", namespace, "link", "set", link, "up"])
            }
        } catch {
            remove()
            throw error
        }
    }

    /// `executable arguments` run inside `namespace`'s network (the mount namespace stays the
    /// test's: a FUSE mount made there is seen by the test), as the words a tool runner takes.
    public static func inside(_ namespace: String, _ command: [String]) -> [String] {
        ["nsenter", "--net=/run/netns/\(namespace)"] + command
    }

    /// Pulls the cable out at the server's end.
    public func cut() throws { try Self.ip(["-n", serverNamespace, "link", "set", serverLink, "down"]) }

    /// Plugs it back in.
    public func restore() throws { try Self.ip(["-n", serverNamespace, "link", "set", serverLink, "up"]) }

    /// Another client host, on a cable of its own to the server (`10.35.N.2`, the server's end
    /// `10.35.N.1`, N from 1), routed to ``serverAddress`` through the server: a second machine
    /// reaching the same server. Returns its namespace and address; ``remove()`` deletes it.
    public func addClient() throws -> (namespace: String, address: String) {
        let number = otherClients.withLock { $0.count } + 1
        let namespace = "\(serverNamespace.dropLast("-server".count))-client\(number)x"
        let short = String(UUID().uuidString.prefix(7).lowercased())
        let (serverEnd, clientEnd) = ("vs\(short)\(number)", "vc\(short)\(number)")
        let (serverSide, clientSide) = ("10.35.\(number).1", "10.35.\(number).2")
        try Self.ip(["netns", "add", namespace])
        otherClients.withLock { $0.append(namespace) }
        try Self.ip(["link", "add", serverEnd, "type", "veth", "peer", "name", clientEnd])
        try Self.ip(["link", "set", serverEnd, "netns", serverNamespace])
        try Self.ip(["link", "set", clientEnd, "netns", namespace])
        try Self.ip(["-n", serverNamespace, "addr", "add", "\(serverSide)/24", "dev", serverEnd])
        try Self.ip(["-n", serverNamespace, "link", "set", serverEnd, "up"])
        try Self.ip(["-n", namespace, "link", "set", "lo", "up"])
        try Self.ip(["-n", namespace, "addr", "add", "\(clientSide)/24", "dev", clientEnd])
        try Self.ip(["-n", namespace, "link", "set", clientEnd, "up"])
        try Self.ip(["-n", namespace, "route", "add", "\(serverAddress)/32", "via", serverSide])
        return (namespace, clientSide)
    }

    /// Routes between a client host from ``addClient()`` and the first client host, through the
    /// server host (which forwards): a machine that reaches a service (a pooler) on the other
    /// client host. ``cut()`` then cuts that path too, since it runs over the server's cable.
    public func route(between added: (namespace: String, address: String)) throws {
        let gateway = added.address.split(separator: ".").dropLast().joined(separator: ".") + ".1"
        let forwarding = try runTool(
            "timeout", ["30"] + Self.inside(serverNamespace, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]),
            timeout: 60)
        guard forwarding.status == 0 else {
            throw TestServerError("the server host does not forward: \(forwarding.error)")
        }
        try Self.ip(["-n", added.namespace, "route", "add", "\(clientAddress)/32", "via", gateway])
        try Self.ip(["-n", clientNamespace, "route", "add", "\(added.address)/32", "via", serverAddress])
    }

    /// Makes `address` (in the pair's /24) a machine that vanished, as the client sees it: the
    /// client's neighbour table says it is there (a permanent entry for a hardware address nobody
    /// has), so packets to it leave on the cable and are dropped at the far end without an answer,
    /// as those to a dead host whose address the client still has cached. Connects to it wait.
    public func vanish(_ address: String) throws {
        try Self.ip([
            "-n", clientNamespace, "neigh", "replace", address, "lladdr", "02:00:5e:10:00:99", "dev", clientLink,
            "nud", "permanent"
        ])
    }

    /// Deletes both namespaces (and with them the veth pair). Processes still running in one
    /// keep it alive until they end; its name is gone at once.
    public func remove() {
        for namespace in [serverNamespace, clientNamespace] + otherClients.withLock({ $0 }) {
            _ = try? runTool("timeout", ["30", "ip", "netns", "delete", namespace], timeout: 60)
        }
    }

    @discardableResult
    private static func ip(_ arguments: [String]) throws -> String {
        let result = try runTool("timeout", ["30", "ip"] + arguments, timeout: 60)
        guard result.status == 0 else {
            throw TestServerError("ip \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.error)")
        }
        return result.output
    }

    /// Pairs of test processes that no longer run.
    private static func removeLeftovers() {
        guard let listed = try? runTool("timeout", ["30", "ip", "netns", "list"], timeout: 60) else { return }
        for line in listed.output.split(separator: "\n") {
            guard let name = line.split(separator: " ").first, name.hasPrefix(prefix),
                name.hasSuffix("-server") || name.hasSuffix("-client") || name.hasSuffix("x")
            else { continue }
            let pidText = name.dropFirst(prefix.count).prefix { $0 != "-" }
            guard let pid = pid_t(pidText), pid > 0, pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else {
                continue
            }
            _ = try? runTool("timeout", ["30", "ip", "netns", "delete", String(name)], timeout: 60)
        }
    }
}
