/// A database file as it was read and its `-wal`: the pages of every version the files hold.
///
/// Version 0 is the database file alone; version N is the database as it was right after the
/// log's commit N (each page the latest frame of a commit up to N, else the file's; its size
/// the commit's). ``DatabaseState`` reads one version's pages without making it.
///
/// Threading: immutable; safe from any thread.
public final class DatabaseFiles: Sendable {
    public let database: any ByteSource
    public let log: (any ByteSource)?
    public let header: DatabaseHeader
    public let wal: WriteAheadLog?
    /// The database file's pages (the header's count when it is valid, else the file's).
    public let databasePageCount: UInt32
    /// The pages the file holds, whatever its header says (a file may go on past its end).
    public let filePageCount: UInt32
    /// Per page, the committed frames holding it, in order (frame numbers).
    private let committedFrames: [UInt32: [Int]]

    /// Reads the header of `database` and the log in `log`; nil when `database` is not an SQLite
    /// database (too short, another magic, an impossible page size).
    public init?(database: any ByteSource, log: (any ByteSource)?) {
        guard let first = database.bytes(at: 0, count: 100), let header = DatabaseHeader(first) else { return nil }
        self.database = database
        self.header = header
        let filePages = database.size / Int64(header.pageSize)
        let fromFile = UInt32(clamping: filePages)
        databasePageCount = header.pageCount != 0 ? min(header.pageCount, max(fromFile, 1)) : fromFile
        filePageCount = fromFile
        self.log = log
        let wal = log.flatMap { WriteAheadLog($0, databasePageSize: header.pageSize) }
        // A log of another page size is not this database's log: SQLite ignores it.
        self.wal = wal.flatMap { $0.pageSize == header.pageSize ? $0 : nil }
        var frames: [UInt32: [Int]] = [:]
        for frame in self.wal?.frames ?? [] {
            if case .committed = frame.state { frames[frame.page, default: []].append(frame.number) }
        }
        committedFrames = frames
    }

    public var pageSize: Int { header.pageSize }
    public var usableSize: Int { header.usableSize }
    /// The number of the last version (the log's last commit; 0 without a log).
    public var lastVersion: Int { wal?.commits.count ?? 0 }

    /// Page `number` of the database file as read (also past the header's page count); nil past
    /// the file's end.
    public func databasePage(_ number: UInt32) -> [UInt8]? {
        guard number >= 1, number <= filePageCount else { return nil }
        return database.bytes(at: Int64(number - 1) * Int64(pageSize), count: pageSize)
    }

    /// The page a frame holds.
    public func framePage(_ frame: WriteAheadLog.Frame) -> [UInt8]? {
        log?.bytes(at: frame.offset, count: pageSize)
    }

    /// The frame numbered `number`.
    public func frame(_ number: Int) -> WriteAheadLog.Frame? {
        guard let frames = wal?.frames, number >= 1, number <= frames.count else { return nil }
        return frames[number - 1]
    }

    /// Version `number` (0 the file alone, up to ``lastVersion``).
    public func state(_ number: Int) -> DatabaseState {
        let version = max(0, min(number, lastVersion))
        guard version > 0, let commit = wal?.commits[version - 1] else {
            return DatabaseState(files: self, version: 0, lastFrame: 0, pageCount: databasePageCount)
        }
        return DatabaseState(files: self, version: version, lastFrame: commit.lastFrame, pageCount: commit.pageCount)
    }

    /// The latest committed frame holding page `number` up to frame `lastFrame`.
    public func latestFrame(of number: UInt32, upTo lastFrame: Int) -> Int? {
        guard let frames = committedFrames[number] else { return nil }
        var found: Int?
        for frame in frames where frame <= lastFrame { found = frame }
        return found
    }

    /// The commit that first replaced page `number` of the database file, if any.
    public func commitSuperseding(_ number: UInt32) -> Int? {
        guard let first = committedFrames[number]?.first, let frame = frame(first),
            case .committed(let commit) = frame.state
        else { return nil }
        return commit
    }
}

/// One version of the database: its pages as they were right after a commit.
public struct DatabaseState: Sendable {
    public let files: DatabaseFiles
    public let version: Int
    /// Frames up to this one are in the version.
    public let lastFrame: Int
    public let pageCount: UInt32

    /// Page `number` in this version; nil past its end.
    public func page(_ number: UInt32) -> [UInt8]? {
        guard number >= 1, number <= pageCount else { return nil }
        if let frame = files.latestFrame(of: number, upTo: lastFrame), let f = files.frame(frame) {
            return files.framePage(f)
        }
        // A page past the file's end (the log grew the database) that no frame holds reads as
        // zeros, as SQLite reads it.
        if number > files.databasePageCount { return [UInt8](repeating: 0, count: files.pageSize) }
        return files.databasePage(number)
    }

    /// The database header of this version (page 1's first 100 bytes).
    public var header: DatabaseHeader? { page(1).flatMap { DatabaseHeader($0) } }

    /// The pages on this version's freelist: trunk pages and the leaves they list. The walk ends
    /// at a page out of range, a trunk seen before (a cycle), a leaf count larger than a trunk
    /// holds, or once as many pages as the version has were found.
    public func freelist() -> (trunks: Set<UInt32>, leaves: Set<UInt32>) {
        var trunks = Set<UInt32>()
        var leaves = Set<UInt32>()
        guard let header else { return (trunks, leaves) }
        let perTrunk = files.usableSize / 4 - 2
        var next = header.freelistTrunk
        while next >= 1, next <= pageCount, trunks.count + leaves.count < Int(pageCount), trunks.insert(next).inserted {
            guard let page = page(next), let following = page.bigEndian(at: 0, count: 4),
                let count = page.bigEndian(at: 4, count: 4)
            else { break }
            for i in 0..<min(Int(count), perTrunk) {
                if let leaf = page.bigEndian(at: 8 + 4 * i, count: 4), leaf >= 1, leaf <= pageCount {
                    leaves.insert(leaf)
                }
            }
            next = following
        }
        return (trunks, leaves)
    }

    /// Every row of the table b-tree rooted at `root`: its key and payload, overflow included,
    /// handed to `body`. The walk never visits a page twice (a page reached again is a cycle) and
    /// goes no deeper than SQLite's own limit; cells that do not read are skipped.
    public func walkTable(root: UInt32, _ body: (Int64, [UInt8]) -> Void) {
        var seen = Set<UInt32>()
        var stack: [(page: UInt32, depth: Int)] = [(root, 0)]
        let usable = files.usableSize
        while let (number, depth) = stack.popLast() {
            guard depth <= 64, number >= 1, number <= pageCount, seen.insert(number).inserted,
                let bytes = page(number),
                let tree = BTreePage(bytes, isFirstPage: number == 1, usableSize: usable)
            else { continue }
            switch tree.kind {
            case .tableInterior:
                for child in tree.children(in: bytes).reversed() { stack.append((child, depth + 1)) }
            case .tableLeaf:
                for pointer in tree.cellPointers {
                    if let cell = TableCell.read(
                        bytes, at: pointer, limit: usable, usable: usable, pageCount: pageCount, readPage: { page($0) })
                    {
                        body(cell.rowid, cell.payload)
                    }
                }
            default:
                continue
            }
        }
    }

    /// The tables of this version's schema (`sqlite_master`, rooted at page 1): name, root page
    /// and the CREATE statement.
    public func tables() -> [(name: String, root: UInt32, sql: String)] {
        var result: [(name: String, root: UInt32, sql: String)] = []
        walkTable(root: 1) { _, payload in
            guard let (types, headerLength) = RecordFormat.header(payload, at: 0, limit: payload.count),
                types.count >= 5,
                let values = RecordFormat.values(types, in: payload, at: headerLength, limit: payload.count),
                case .text(let type) = values[0], type == Array("table".utf8), case .text(let name) = values[1],
                case .integer(let root) = values[3], root >= 1, root <= Int64(UInt32.max)
            else { return }
            var sql = ""
            if case .text(let text) = values[4] { sql = String(decoding: text, as: UTF8.self) }
            result.append((String(decoding: name, as: UTF8.self), UInt32(root), sql))
        }
        return result
    }
}
