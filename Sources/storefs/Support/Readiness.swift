import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Tells whoever started storefs that the mount is ready, and systemd that it is stopping:
/// systemd (Type=notify, through NOTIFY_SOCKET, no library needed) and a parent `storefs mount`
/// waiting in the background path.
enum Readiness {
    /// Sends `message` (by default `READY=1` and a status line; `STOPPING=1` on the way out) to
    /// NOTIFY_SOCKET if it is set.
    static func notifySystemd(_ message: String = "READY=1\nSTATUS=mounted") {
        guard let path = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], !path.isEmpty else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // An abstract socket is written "@name" and starts with a NUL byte on the wire.
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let payload = Array(message.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                sendto(fd, payload, payload.count, 0, sa, length)
            }
        }
    }

    /// Whether `path` is a mount point of a storefs (FUSE) filesystem now.
    static func isMounted(_ path: String) -> Bool {
        let target = URL(fileURLWithPath: path).standardizedFileURL.path
        guard let table = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 2 else { continue }
            let mountPoint = fields[1].replacingOccurrences(of: "\\040", with: " ")
            if mountPoint == target && fields[2].hasPrefix("fuse") { return true }
        }
        return false
    }
}
