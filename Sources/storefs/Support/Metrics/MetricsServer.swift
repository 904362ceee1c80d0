import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP endpoint of `storefs mount --metrics`: answers `GET /metrics` with what `render`
/// gives (Prometheus text), and nothing else.
///
/// Bounded so that no client can stall or exhaust the mount: one thread of its own, never a FUSE
/// worker's; non-blocking sockets under `poll`; at most ``maximumClients`` connections (more are
/// answered 503 and closed); a request head of at most ``maximumRequestBytes`` (431 past it); each
/// connection closed after ``clientDeadline`` seconds whether or not it sent or read anything, and
/// after one answer (`Connection: close`). A client that reads slowly holds only its own buffer.
///
/// Threading: ``start()`` once, ``stop()`` once, from any thread; `render` runs on the server's
/// thread.
final class MetricsServer: Sendable {
    static let maximumClients = 8
    static let maximumRequestBytes = 8192
    static let clientDeadline: Double = 5
    /// Connections waiting to be accepted.
    static let backlog: Int32 = 16

    /// Where it listens, as bound (the port the kernel chose for port 0).
    let address: String
    private let listener: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let render: @Sendable () -> [UInt8]
    private let finished = DispatchSemaphore(value: 0)

    /// Binds and listens at `address` now (so a taken port fails the mount before it is made).
    init(at address: MetricsAddress, render: @escaping @Sendable () -> [UInt8]) throws(MountOptionError) {
        self.render = render
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(address.host, String(address.port), &hints, &found)
        guard status == 0, let first = found else {
            throw MountOptionError(
                "metrics: cannot resolve \(address.host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var socketDescriptor: Int32 = -1
        var failure = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate, socketDescriptor < 0 {
            candidate = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            var yes: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            if bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, listen(fd, Self.backlog) == 0 {
                socketDescriptor = fd
            } else {
                failure = String(cString: strerror(errno))
                close(fd)
            }
        }
        guard socketDescriptor >= 0 else {
            throw MountOptionError("metrics: cannot listen on \(address): \(failure)")
        }
        Self.makeNonBlocking(socketDescriptor)
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            close(socketDescriptor)
            throw MountOptionError("metrics: cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        for end in pipeEnds { Self.makeNonBlocking(end) }
        listener = socketDescriptor
        wakeRead = pipeEnds[0]
        wakeWrite = pipeEnds[1]
        self.address = Self.boundAddress(socketDescriptor) ?? address.description
    }

    deinit {
        close(listener)
        close(wakeRead)
        close(wakeWrite)
    }

    /// Serves on a thread of its own until ``stop()``.
    func start() {
        let thread = Thread { [self] in
            serve()
            finished.signal()
        }
        thread.name = "storefs-metrics"
        thread.start()
    }

    /// Stops serving and waits (a second at most) for the thread to end.
    func stop() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        _ = finished.wait(timeout: .now() + 1)
    }

    // MARK: - The loop

    private struct Client {
        var descriptor: Int32
        var received: [UInt8] = []
        var response: [UInt8]?
        var sent = 0
        /// The answer is sent and the write side shut: what the client still sends is read and
        /// dropped until it closes (closing with unread data would reset the connection, and the
        /// client could lose the answer: a 431 to an oversized request).
        var draining = false
        /// Turned away (past ``maximumClients``): answered 503 and drained for a second.
        var turnedAway = false
        var deadline: Date
    }

    private func serve() {
        var clients: [Client] = []
        defer { for client in clients { close(client.descriptor) } }
        while true {
            var descriptors = [
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            ]
            for client in clients {
                let writing = client.response != nil && !client.draining
                descriptors.append(pollfd(fd: client.descriptor, events: Int16(writing ? POLLOUT : POLLIN), revents: 0))
            }
            let now = Date()
            let nearest = clients.map(\.deadline).min().map { max(0, $0.timeIntervalSince(now)) } ?? 1
            let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(min(nearest, 1) * 1000) + 1)
            if ready < 0 && errno != EINTR { return }
            if descriptors[0].revents != 0 { return }
            var kept: [Client] = []
            for (index, var client) in clients.enumerated() {
                let events = descriptors[index + 2].revents
                var open = Date() < client.deadline
                if open, client.draining, events & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    open = drain(client)
                } else if open, events & Int16(POLLIN | POLLHUP | POLLERR) != 0, client.response == nil {
                    open = receive(&client)
                } else if open, events & Int16(POLLOUT | POLLHUP | POLLERR) != 0, client.response != nil {
                    open = send(&client)
                }
                if open { kept.append(client) } else { close(client.descriptor) }
            }
            clients = kept
            if descriptors[1].revents & Int16(POLLIN) != 0 { accept(into: &clients) }
        }
    }

    /// Accepts every waiting connection. Past ``maximumClients``, answers 503 (drained for a
    /// second, so the answer arrives rather than a reset), and past twice that, closes at once.
    private func accept(into clients: inout [Client]) {
        while true {
            let fd = Glibc.accept(listener, nil, nil)
            guard fd >= 0 else { return }
            Self.makeNonBlocking(fd)
            let served = clients.filter { !$0.turnedAway }.count
            guard served < Self.maximumClients else {
                guard clients.count < 2 * Self.maximumClients else {
                    close(fd)
                    continue
                }
                let busy = Self.response(status: "503 Service Unavailable", body: Array("too many connections\n".utf8))
                var client = Client(descriptor: fd, turnedAway: true, deadline: Date().addingTimeInterval(1))
                client.response = busy
                clients.append(client)
                continue
            }
            clients.append(Client(descriptor: fd, deadline: Date().addingTimeInterval(Self.clientDeadline)))
        }
    }

    /// Reads what the client sent; once its request head is complete (or too long), prepares the
    /// answer. False when the connection is done.
    private func receive(_ client: inout Client) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(client.descriptor, $0.baseAddress, $0.count, 0) }
        if count < 0 { return errno == EAGAIN || errno == EINTR }
        if count == 0 { return false }
        client.received += chunk[0..<count]
        if client.received.count > Self.maximumRequestBytes {
            client.response = Self.response(
                status: "431 Request Header Fields Too Large", body: Array("request too large\n".utf8))
            return true
        }
        guard let head = Self.requestHead(client.received) else { return true }
        client.response = answer(head)
        return true
    }

    /// Sends what is left of the answer; once it is all sent, shuts the write side and drains.
    /// False when the client went.
    private func send(_ client: inout Client) -> Bool {
        guard let response = client.response else { return true }
        let count = response.withUnsafeBytes {
            Glibc.send(client.descriptor, $0.baseAddress! + client.sent, $0.count - client.sent, Int32(MSG_NOSIGNAL))
        }
        if count < 0 { return errno == EAGAIN || errno == EINTR }
        client.sent += count
        if client.sent == response.count {
            shutdown(client.descriptor, Int32(SHUT_WR))
            client.draining = true
        }
        return true
    }

    /// Reads and drops what a client sends after its answer. False once it closed.
    private func drain(_ client: Client) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(client.descriptor, $0.baseAddress, $0.count, 0) }
        if count < 0 { return errno == EAGAIN || errno == EINTR }
        return count > 0
    }

    /// The request line, once the head (up to an empty line) has arrived.
    private static func requestHead(_ bytes: [UInt8]) -> String? {
        // Bytes, not characters: "\r\n" is one Character to Swift.
        let newline = UInt8(ascii: "\n")
        var ended = false
        for i in bytes.indices where bytes[i] == newline {
            let next = i + 1 < bytes.count ? bytes[i + 1] : 0
            let afterReturn = i + 2 < bytes.count ? bytes[i + 2] : 0
            if next == newline || (next == UInt8(ascii: "\r") && afterReturn == newline) {
                ended = true
                break
            }
        }
        guard ended else { return nil }
        let line = bytes.prefix { $0 != newline && $0 != UInt8(ascii: "\r") }
        return String(decoding: line, as: UTF8.self)
    }

    private func answer(_ requestLine: String) -> [UInt8] {
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/") else {
            return Self.response(status: "400 Bad Request", body: Array("bad request\n".utf8))
        }
        let path = parts[1].split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        let method = parts[0]
        guard method == "GET" || method == "HEAD" else {
            return Self.response(
                status: "405 Method Not Allowed", body: Array("only GET\n".utf8), extra: "Allow: GET, HEAD\r\n")
        }
        switch path {
        case "/metrics":
            let body = render()
            return Self.response(
                status: "200 OK", body: body, type: "text/plain; version=0.0.4; charset=utf-8",
                headOnly: method == "HEAD")
        case "/":
            return Self.response(status: "200 OK", body: Array("storefs: metrics at /metrics\n".utf8))
        default:
            return Self.response(status: "404 Not Found", body: Array("not found; metrics are at /metrics\n".utf8))
        }
    }

    private static func response(
        status: String, body: [UInt8], type: String = "text/plain; charset=utf-8", extra: String = "",
        headOnly: Bool = false
    ) -> [UInt8] {
        let head =
            "HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\n\(extra)Connection: close\r\n\r\n"
        return Array(head.utf8) + (headOnly ? [] : body)
    }

    /// Non-blocking, and closed in programs storefs starts.
    private static func makeNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
    }

    /// `127.0.0.1:9567` (`[::1]:9567`) of a bound socket.
    private static func boundAddress(_ fd: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let found = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo(
                    $0, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                    NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard found == 0 else { return nil }
        let name = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let port = String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.contains(":") ? "[\(name)]:\(port)" : "\(name):\(port)"
    }
}
