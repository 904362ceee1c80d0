import Foundation
import GRDB
import Logging
import ObjectGraph
import SQLiteRecovery
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a read-only open of an SQLite store reads: a private copy of the store and its -wal (and a
/// -journal a crashed writer left), made in a folder of its own under TMPDIR and checkpointed
/// there, so that reading creates, writes and locks nothing beside the store.
///
/// SQLite cannot give that on the original: a read-only connection to a WAL store makes the -shm
/// and -wal files when the folder lets it (root always may), takes locks, and `immutable=1` would
/// ignore the -wal and its committed frames. A copy can be read in any mode, by as many
/// connections as the mount wants, and shows exactly what the files held when they were read.
///
/// The copy is consistent: the originals are stat'ed before and after copying (device, inode,
/// size, modification and change times to the nanosecond), the copy is made again when anything
/// changed meanwhile, and copying starts only once the files have been quiet for longer than the
/// kernel's clock tick, so a write during the copy always changes a time. A store that keeps
/// changing for ``patience`` seconds is refused as busy.
///
/// What the checkpoint changes is kept first (``readFiles``): the -wal as copied and the pages of
/// the store the checkpoint overwrites or cuts off, so that the files as they were read can be read
/// again, page by page, for the records they remember (SQLiteRecovery) and the versions the log
/// holds. That costs the log's size, not the store's.
///
/// Threading: immutable after ``make(of:hashing:logger:)``; the folder goes when the last user
/// lets go (a read in flight keeps it), or at ``remove()``.
final class PrivateCopy: Sendable {
    /// The private folder (0700) holding the copies.
    let folder: URL
    /// The copy of the store file.
    let store: URL
    /// What was read, in order: the store, then its -wal and -journal when there.
    let inputs: [InputFile]
    /// The original's path and the stamps of its files as they were copied, by suffix.
    private let original: String
    private let stamps: [String: InputFile.Stamp]
    private let removed = Atomic<Bool>(false)
    /// What the checkpoint changed, kept (see ``readFiles``).
    private let kept = Mutex<KeptPages?>(nil)

    /// The store's pages the checkpoint was to overwrite or cut off, as they were copied.
    private struct KeptPages {
        /// The -wal as copied.
        var log: URL
        /// The kept pages, one after the other.
        var pages: URL
        /// Where each kept page is in ``pages``, by its offset in the store.
        var runs: [Int64: Int64]
        var pageSize: Int
        /// The store's size as copied.
        var storeSize: Int64
    }

    /// The files read beside the store: SQLite's WAL, and the rollback journal a writer that died
    /// mid-transaction leaves (the copy rolls it back, as the next opener of the original would).
    /// The -shm file is SQLite's index of the WAL, rebuilt from the WAL in the copy: never read.
    static let sidecars = ["-wal", "-journal"]
    /// How long a store may keep changing before the copy gives up.
    static let patience: TimeInterval = 10
    /// How long the files must have been quiet before they are copied: longer than the kernel's
    /// clock tick (1–10 ms), which file times are taken from.
    static let quiet: TimeInterval = 0.025
    /// The folders' name start; the process ID follows, so folders of processes that died
    /// (`kill -9`) are found and removed.
    static let prefix = "storefs-copy-"

    private init(folder: URL, store: URL, inputs: [InputFile], original: String, stamps: [String: InputFile.Stamp]) {
        self.folder = folder
        self.store = store
        self.inputs = inputs
        self.original = original
        self.stamps = stamps
    }

    deinit { remove() }

    /// Removes the folder (once).
    func remove() {
        guard !removed.exchange(true, ordering: .relaxed) else { return }
        try? FileManager.default.removeItem(at: folder)
    }

    /// Whether the original's files are as they were copied.
    var isCurrent: Bool { Self.stamps(of: original) == stamps }

    /// Copies the store at `url` and its -wal and -journal, hashing them when `hashing`, and
    /// checkpoints the copy. Reads the originals only (see the type's comment for how).
    static func make(of url: URL, hashing: Bool, logger: Logger) throws(ObjectGraphError) -> PrivateCopy {
        _ = staleRemoved
        let deadline = Date().addingTimeInterval(patience)
        let name = url.lastPathComponent
        var attempts = 0
        while true {
            let before = stamps(of: url.path)
            let quietFor = before.values.map(\.quietSeconds).min() ?? .infinity
            // A time in the future (a clock set wrong where the file was made) says nothing about
            // quiet: the stamps before and after the copy decide alone.
            if quietFor >= 0 && quietFor < quiet {
                guard Date() < deadline else { throw busy(url, attempts: attempts) }
                usleep(UInt32((quiet - quietFor) * 1_000_000) + 1000)
                continue
            }
            attempts += 1
            let folder = try makeFolder()
            var inputs: [InputFile] = []
            var read: [String: InputFile.Stamp] = [:]
            do throws(ObjectGraphError) {
                for suffix in [""] + sidecars where before[suffix] != nil || suffix.isEmpty {
                    let (file, stamp) = try InputFile.read(
                        URL(fileURLWithPath: url.path + suffix),
                        copyingTo: folder.appendingPathComponent(name + suffix),
                        hashing: hashing)
                    inputs.append(file)
                    read[suffix] = stamp
                }
            } catch {
                try? FileManager.default.removeItem(at: folder)
                // A -wal or -journal removed while it was copied (a checkpoint, a commit) is a change.
                guard error.code == .notFound, FileManager.default.fileExists(atPath: url.path) else { throw error }
                guard Date() < deadline else { throw busy(url, attempts: attempts) }
                continue
            }
            let after = stamps(of: url.path)
            guard after == before, read == before else {
                try? FileManager.default.removeItem(at: folder)
                guard Date() < deadline else { throw busy(url, attempts: attempts) }
                logger.debug("\(url.path) changed while it was copied; copying it again")
                continue
            }
            let copy = PrivateCopy(
                folder: folder, store: folder.appendingPathComponent(name), inputs: inputs, original: url.path,
                stamps: before)
            copy.checkpoint(logger: logger)
            return copy
        }
    }

    /// Folds the copy's WAL into it (and rolls back a hot journal): one self-contained file,
    /// read without looking through the WAL. A failure leaves the copy as copied, which SQLite
    /// reads all the same; a damaged file then fails where it is read, with its own message.
    /// What the checkpoint changes is kept first (``keepPagesTheCheckpointChanges(logger:)``).
    private func checkpoint(logger: Logger) {
        keepPagesTheCheckpointChanges(logger: logger)
        var configuration = Configuration()
        configuration.label = "storefs.sqlite.copy"
        do {
            let queue = try DatabaseQueue(path: store.path, configuration: configuration)
            try queue.writeWithoutTransaction { db in
                // Reading the schema rolls back a hot journal; the checkpoint empties the WAL.
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
                _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
            try queue.close()
        } catch {
            logger.debug("\(original): its private copy could not be checkpointed (\(error)); read as copied")
        }
    }

    /// Copies the -wal aside and keeps the store's pages its frames name and those past the size
    /// of its last commit (the checkpoint writes over the first and cuts off the second). A copy
    /// without a -wal keeps nothing: the checkpoint changes nothing there.
    private func keepPagesTheCheckpointChanges(logger: Logger) {
        let logPath = store.path + "-wal"
        guard let log = FileBytes(path: logPath), log.size > Int64(WriteAheadLog.headerSize),
            let database = FileBytes(path: store.path), let first = database.bytes(at: 0, count: 100),
            let header = DatabaseHeader(first)
        else { return }
        let pageSize = header.pageSize
        let keptLog = folder.appendingPathComponent(store.lastPathComponent + ".wal-as-read")
        let keptPages = folder.appendingPathComponent(store.lastPathComponent + ".pages-as-read")
        do {
            try FileManager.default.copyItem(atPath: logPath, toPath: keptLog.path)
            let frames = WriteAheadLog(log, databasePageSize: pageSize)
            let filePages = UInt32(clamping: database.size / Int64(pageSize))
            var numbers = Set<UInt32>()
            for frame in frames?.frames ?? [] where frame.page >= 1 && frame.page <= filePages {
                numbers.insert(frame.page)
            }
            if let last = frames?.commits.last, last.pageCount < filePages {
                for number in (last.pageCount + 1)...filePages { numbers.insert(number) }
            }
            _ = FileManager.default.createFile(
                atPath: keptPages.path, contents: nil, attributes: [.posixPermissions: 0o600])
            let handle = try FileHandle(forWritingTo: keptPages)
            defer { try? handle.close() }
            var runs: [Int64: Int64] = [:]
            var at: Int64 = 0
            for number in numbers.sorted() {
                let offset = Int64(number - 1) * Int64(pageSize)
                guard let page = database.bytes(at: offset, count: pageSize) else { continue }
                try handle.write(contentsOf: page)
                runs[offset] = at
                at += Int64(pageSize)
            }
            kept.withLock {
                $0 = KeptPages(log: keptLog, pages: keptPages, runs: runs, pageSize: pageSize, storeSize: database.size)
            }
        } catch {
            logger.debug(
                "\(original): the pages its WAL changes could not be kept (\(error)); only the checkpointed copy is read"
            )
        }
    }

    /// The store and its -wal as they were read: the checkpointed copy with the pages the
    /// checkpoint changed laid back, and the -wal as copied (nil when there was none).
    var readFiles: (database: any ByteSource, log: (any ByteSource)?)? {
        guard let copied = FileBytes(path: store.path) else { return nil }
        guard let kept = kept.withLock({ $0 }) else { return (copied, nil) }
        guard let pages = FileBytes(path: kept.pages.path), let log = FileBytes(path: kept.log.path) else {
            return (copied, nil)
        }
        let database = PatchedBytes(
            base: copied, size: kept.storeSize, patches: pages, runs: kept.runs, runLength: kept.pageSize)
        return (database, log)
    }

    /// The stamps of the store's files that exist, by suffix ("" for the store itself).
    private static func stamps(of path: String) -> [String: InputFile.Stamp] {
        var result: [String: InputFile.Stamp] = [:]
        for suffix in [""] + sidecars {
            if let stamp = InputFile.Stamp(path: path + suffix) { result[suffix] = stamp }
        }
        return result
    }

    private static func busy(_ url: URL, attempts: Int) -> ObjectGraphError {
        ObjectGraphError(
            .busy,
            "\(url.path) kept changing for \(Int(patience)) s while storefs copied it to read it (\(attempts) copies); "
                + "a read-only open reads a private copy of the store and its -wal: try again when the app writing it is idle"
        )
    }

    private static var temporaryFolder: String {
        let tmp = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return tmp.hasSuffix("/") ? String(tmp.dropLast()) : tmp
    }

    private static func makeFolder() throws(ObjectGraphError) -> URL {
        var template = Array("\(temporaryFolder)/\(prefix)\(getpid())-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!) }
        guard made != nil else {
            throw ObjectGraphError(
                .io,
                "cannot make a private folder in \(temporaryFolder) (\(String(cString: strerror(errno)))); set TMPDIR to a folder storefs can write"
            )
        }
        return URL(
            fileURLWithPath: String(
                decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Done by the first copy a process makes: a look at every entry of TMPDIR is not for each open.
    private static let staleRemoved: Bool = {
        removeStale()
        return true
    }()

    /// Removes the folders processes that died left behind (their ID in the name runs nothing).
    private static func removeStale() {
        let tmp = temporaryFolder
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: tmp) else { return }
        for name in names where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count).prefix(while: { $0 != "-" })), pid > 0, pid != getpid()
            else { continue }
            guard kill(pid, 0) != 0, errno == ESRCH else { continue }
            var info = stat()
            // Only our own: a folder another user made is theirs to remove.
            guard lstat("\(tmp)/\(name)", &info) == 0, info.st_uid == getuid(), (info.st_mode & S_IFMT) == S_IFDIR
            else { continue }
            try? FileManager.default.removeItem(atPath: "\(tmp)/\(name)")
        }
    }
}
