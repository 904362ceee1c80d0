import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a store found in a device tree is opened from: the store file's path, with its `-wal`,
/// `-journal` and external data beside it under the names its type looks for.
///
/// A folder's stores are opened where they are. A backup keeps every file under a hash, so its
/// store is laid out in a private folder of its own under TMPDIR (`storefs-backup-PID-…`, 0700)
/// as copies of the backup's files, named as the manifest names them: the store types check a
/// file's size and copy it by name, which links would defeat, and a hard link would change the
/// backup's files' ctime. A read-only open of the copy writes nothing anywhere near the backup. The
/// folder goes at ``remove()`` (the store's close); one a killed process left is removed by the
/// next process that makes one.
///
/// Threading: immutable but for ``remove()``, which runs once.
public final class StoreLocation: Sendable {
    /// The store file to open.
    public let url: URL
    /// How the store is named in the tree (`HomeDomain/Library/x.sqlite`, `Documents/x.sqlite`).
    public let path: String
    /// The private folder of copies, for a backup's store.
    public let staging: URL?
    private let removed = Atomic<Bool>(false)

    public init(url: URL, path: String, staging: URL? = nil) {
        self.url = url
        self.path = path
        self.staging = staging
    }

    deinit { remove() }

    /// Removes the private folder (once); nothing for a store opened where it is.
    public func remove() {
        guard let staging, !removed.exchange(true, ordering: .relaxed) else { return }
        try? FileManager.default.removeItem(at: staging)
    }

    static let stagingPrefix = "storefs-backup-"

    /// A new private folder holding a copy of each of `files` (relative path there → a
    /// descriptor to read from, left open), the first of them the store file.
    static func staged(_ files: [(name: String, descriptor: Int32)], path: String) throws(DeviceError)
        -> StoreLocation
    {
        _ = staleRemoved
        let folder = try makeFolder()
        for file in files {
            let at = folder.appendingPathComponent(file.name)
            do {
                try FileManager.default.createDirectory(
                    at: at.deletingLastPathComponent(), withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                try? FileManager.default.removeItem(at: folder)
                throw DeviceError(.io, "cannot lay out \(path) in \(folder.path): \(error)")
            }
            if let reason = copy(file.descriptor, to: at.path) {
                try? FileManager.default.removeItem(at: folder)
                throw DeviceError(.io, "cannot copy \(path) to \(folder.path): \(reason)")
            }
        }
        return StoreLocation(url: folder.appendingPathComponent(files[0].name), path: path, staging: folder)
    }

    /// Copies what `source` holds from its start to a new file at `destination` (0600); the
    /// reason when it fails.
    private static func copy(_ source: Int32, to destination: String) -> String? {
        let target = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard target >= 0 else { return String(cString: strerror(errno)) }
        defer { close(target) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress!, $0.count, offset) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return String(cString: strerror(errno)) }
            if count == 0 { return nil }
            var written = 0
            while written < count {
                let n = buffer.withUnsafeBytes { write(target, $0.baseAddress! + written, count - written) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return String(cString: strerror(errno)) }
                written += n
            }
            offset += off_t(count)
        }
    }

    private static var temporaryFolder: String {
        let tmp = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return tmp.hasSuffix("/") ? String(tmp.dropLast()) : tmp
    }

    private static func makeFolder() throws(DeviceError) -> URL {
        var template = Array("\(temporaryFolder)/\(stagingPrefix)\(getpid())-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!) }
        guard made != nil else {
            throw DeviceError(
                .io,
                "cannot make a private folder in \(temporaryFolder) (\(String(cString: strerror(errno)))); set TMPDIR to a folder storefs can write"
            )
        }
        return URL(
            fileURLWithPath: String(
                decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Done by the first folder a process makes.
    private static let staleRemoved: Bool = {
        let tmp = temporaryFolder
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []
        where name.hasPrefix(stagingPrefix) {
            guard let pid = pid_t(name.dropFirst(stagingPrefix.count).prefix(while: { $0 != "-" })), pid > 0,
                pid != getpid(), kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            var info = stat()
            guard lstat("\(tmp)/\(name)", &info) == 0, info.st_uid == getuid(), (info.st_mode & S_IFMT) == S_IFDIR
            else { continue }
            try? FileManager.default.removeItem(atPath: "\(tmp)/\(name)")
        }
        return true
    }()
}
