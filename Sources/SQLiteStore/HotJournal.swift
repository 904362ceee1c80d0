import Foundation
import GRDB
import Logging

/// The rollback journal a writer that died mid-transaction leaves beside a store (kill -9 of an
/// app or of a storefs server during a commit, a power cut). SQLite calls it hot: the next
/// connection that may write rolls it back, restoring the store's last commit, but a read-only
/// connection cannot and refuses the file with SQLITE_READONLY_ROLLBACK (776). A store opened for
/// writing reads through read-only connections (see ``SQLiteStore``), so it rolls such a journal
/// back first, with a connection that may write, as Core Data's own next open would.
enum HotJournal {
    static func path(of store: URL) -> String { store.path + "-journal" }

    /// Rolls back a journal left beside `store`, if there is one: a connection that may write
    /// reads the schema, which is what makes SQLite roll a hot journal back (a journal another
    /// live connection still holds is not hot, and is left to it). A journal SQLite kept but did
    /// not need (PERSIST, TRUNCATE modes: an empty or zeroed header) is left as it is.
    static func rollBack(beside store: URL, configuration: Configuration, logger: Logger) throws {
        let journal = path(of: store)
        guard let before = size(journal), before > 0 else { return }
        let queue = try DatabaseQueue(path: store.path, configuration: configuration)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
        }
        if size(journal) != before {
            logger.notice(
                "\(store.path): rolled back the journal a writer that stopped mid-transaction left; the store is as its last commit left it"
            )
        }
    }

    private static func size(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }
}
