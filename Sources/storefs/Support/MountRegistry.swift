import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where a running server says which mount it serves and, when it ends, how it ended: what
/// `storefs unmount` needs to wait for the server (the kernel lets go of a FUSE mount before the
/// server has committed and written the store) and to report whether everything was saved.
///
/// One JSON file per mount point in the runtime folder: `/run/storefs` for root, else
/// `$XDG_RUNTIME_DIR/storefs` or `/tmp/storefs-UID`.
enum MountRegistry {
    /// What a server records.
    struct Record: Codable {
        var pid: Int32
        var mountPoint: String
        var store: String
        /// Set when the server ends: its exit status and what it could not save.
        var exitStatus: Int32?
        var message: String?
    }

    static var folder: URL {
        if getuid() == 0 { return URL(fileURLWithPath: "/run/storefs") }
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return URL(fileURLWithPath: runtime).appendingPathComponent("storefs")
        }
        return URL(fileURLWithPath: "/tmp/storefs-\(getuid())")
    }

    /// The record's file for `mountPoint` (an absolute, standardized path).
    static func file(for mountPoint: String) -> URL {
        // FNV-1a of the path: short, stable, and free of slashes.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in mountPoint.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0100_0000_01b3
        }
        return folder.appendingPathComponent(String(hash, radix: 16) + ".json")
    }

    /// The mount point's absolute path, its folder's symlinks resolved: the same text whether the
    /// mount exists or not, found without looking into the mount (a server that does not answer
    /// would hang whoever looks).
    static func standardized(_ path: String) -> String {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        guard url.path != "/" else { return "/" }
        return url.deletingLastPathComponent().resolvingSymlinksInPath().appendingPathComponent(url.lastPathComponent)
            .path
    }

    static func write(_ record: Record) {
        do {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            if record.exitStatus == nil { removeStale() }
            let data = try JSONEncoder().encode(record)
            try data.write(to: file(for: record.mountPoint), options: .atomic)
        } catch {
            // Without the record, `storefs unmount` still unmounts; it cannot wait for the commit.
            FileHandle.standardError.write(Data("storefs: cannot record the mount in \(folder.path): \(error)\n".utf8))
        }
    }

    static func read(mountPoint: String) -> Record? {
        guard let data = try? Data(contentsOf: file(for: mountPoint)) else { return nil }
        return try? JSONDecoder().decode(Record.self, from: data)
    }

    /// Removes records of servers that ended more than an hour ago and whose status nobody read
    /// (a mount unmounted with plain fusermount3).
    private static func removeStale() {
        let files =
            (try? FileManager.default.contentsOfDirectory(
                at: folder, includingPropertiesForKeys: [.contentModificationDateKey])) ?? []
        for file in files where file.pathExtension == "json" {
            let modified =
                (try? file.resourceValues(forKeys: [.contentModificationDateKey]))?.contentModificationDate
                ?? .distantFuture
            guard Date().timeIntervalSince(modified) > 3600, let data = try? Data(contentsOf: file),
                let record = try? JSONDecoder().decode(Record.self, from: data), !isRunning(record.pid)
            else { continue }
            try? FileManager.default.removeItem(at: file)
        }
    }

    static func remove(mountPoint: String) {
        try? FileManager.default.removeItem(at: file(for: mountPoint))
    }

    /// Whether process `pid` still runs this storefs binary (a pid is reused once it ends).
    static func isRunning(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) ?? ""
        return exe.hasSuffix("/storefs") || exe.hasSuffix("/storefs (deleted)")
    }
}
