import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Scratch folders for tests whose files outlive one test function (stores shared by a suite,
/// helpers that hand back a store's URL): all of them lie in one folder per test process,
/// `$TMPDIR/storefs-tests-PID`, which is removed when the process exits.
///
/// A test process that crashed never runs its exit handler, so the first folder asked for also
/// removes the folders of test processes that no longer exist. Removal never enters another
/// filesystem: a FUSE mount left under a scratch folder (a test that failed before unmounting)
/// keeps its folder, and no store is deleted through a mount.
///
/// Threading: safe from any thread; the process folder is made once.
public enum ScratchSpace {
    private static let prefix = "storefs-tests-"

    /// This process's folder, made on first use (with the exit handler that removes it).
    private static let root: Result<URL, any Error> = Result {
        let parent = FileManager.default.temporaryDirectory
        removeFoldersOfEndedProcesses(in: parent)
        let url = parent.appendingPathComponent(prefix + String(getpid()))
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { ScratchSpace.removeProcessFolder() }
        return url
    }

    /// A new, empty folder named `NAME-UUID` inside this process's scratch folder.
    public static func folder(_ name: String) throws -> URL {
        let url = try root.get().appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    private static func removeProcessFolder() {
        guard case .success(let url) = root else { return }
        removeTree(url.path)
    }

    private static func removeFoldersOfEndedProcesses(in parent: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid > 0 else { continue }
            // kill(pid, 0) fails with ESRCH only when no such process exists.
            if kill(pid, 0) != 0 && errno == ESRCH { removeTree(parent.appendingPathComponent(name).path) }
        }
    }

    /// `rm -r --one-file-system PATH`: removes `path` and what it holds, except what lies on
    /// another filesystem (a mount point stays, and so do the folders above it).
    private static func removeTree(_ path: String) {
        var top = stat()
        guard lstat(path, &top) == 0 else { return }
        removeTree(path, device: top.st_dev)
    }

    private static func removeTree(_ path: String, device: dev_t) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR {
            guard info.st_dev == device else { return }
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                removeTree(path + "/" + name, device: device)
            }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
