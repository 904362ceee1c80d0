import Foundation
import SQLiteRecovery

#if canImport(Glibc)
    import Glibc
#endif

/// What an examiner asks of an SQLite store's files before anything else, read from their pages
/// (SQLiteRecovery) without SQLite: frames in its `-wal` (committed and not), pages on its
/// freelist (where deleted records linger), and the persistent history it keeps
/// (`ATRANSACTION` rows). Reading opens the files read-only and writes, locks and makes nothing.
public struct SQLiteFileFacts: Sendable, Hashable {
    /// Frames in the `-wal` that SQLite would read (committed or not): 0 without a log.
    public var walFrames: Int
    /// Commits those frames make.
    public var walCommits: Int
    /// Frames after the last commit (a transaction that never committed).
    public var uncommittedFrames: Int
    /// Pages on the freelist of the store as SQLite reads it (its log included).
    public var freelistPages: Int
    /// Persistent history transactions (`ATRANSACTION` rows); nil when the store keeps no history.
    public var historyTransactions: Int?

    /// The facts of the SQLite store at `url` (its `-wal` beside it); nil when it is no SQLite
    /// database. Links are followed (a backup's store is laid out as links).
    public static func read(store url: URL) -> SQLiteFileFacts? {
        guard let fd = openFollowing(url.path) else { return nil }
        let database = FileBytes(descriptor: fd)
        let log = openFollowing(url.path + "-wal").map { FileBytes(descriptor: $0) }
        guard let files = DatabaseFiles(database: database, log: log) else { return nil }
        var facts = SQLiteFileFacts(
            walFrames: 0, walCommits: files.lastVersion, uncommittedFrames: 0, freelistPages: 0,
            historyTransactions: nil)
        for frame in files.wal?.frames ?? [] {
            switch frame.state {
            case .committed: facts.walFrames += 1
            case .uncommitted:
                facts.walFrames += 1
                facts.uncommittedFrames += 1
            case .unverified: continue
            }
        }
        let state = files.state(files.lastVersion)
        facts.freelistPages = Int(state.header?.freelistCount ?? 0)
        if let history = state.tables().first(where: { $0.name.uppercased() == "ATRANSACTION" }) {
            var rows = 0
            state.walkTable(root: history.root) { _, _ in rows += 1 }
            facts.historyTransactions = rows
        }
        return facts
    }

    /// Opens a regular file read-only (following links), without its access time where allowed.
    private static func openFollowing(_ path: String) -> Int32? {
        let flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC
        var fd = open(path, flags | FileAccess.noAccessTime)
        if fd < 0 && errno == EPERM { fd = open(path, flags) }
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return nil
        }
        return fd
    }
}
