/// Reads every page version a database file and its log hold, finds the records of the given
/// tables that are not the database's live rows (deleted rows, and versions of rows since
/// updated), and says where each was found.
///
/// What is read: every page of the last version (the one a reader of the store sees): the cells
/// of its freelist pages, the free blocks and unallocated space of its pages in use, the bytes
/// of pages that are no b-tree page; then every page version it does not show: the database
/// file's own pages that the log replaced (or that its commits cut off), and every frame of the
/// log but the latest committed one of each page (earlier commits, frames after the last commit,
/// frames SQLite would not read). A record found in several places is one record with every
/// place. Records equal to the live row of their key, and keyless records equal to some live row
/// of their table (a copy left behind when SQLite moved a cell), are not recovered.
///
/// Bounded: at most ``Limits/maximumRecords`` records and ``Limits/maximumPayloadBytes`` of
/// their bytes are kept (the rest counted as left out), every page is read once per version it
/// has, and `cancelled` is asked between pages.
public enum RecoveryScan {
    public struct Limits: Sendable, Hashable {
        /// Records kept at most. A million records of a few hundred bytes each keep memory in the
        /// hundreds of megabytes; beyond that the result says it left records out.
        public var maximumRecords = 1_000_000
        /// Payload bytes kept at most (the records' own bytes; decoding is done on demand).
        public var maximumPayloadBytes = 256 << 20

        public init() {}
    }

    /// Where a record was found.
    public struct Source: Sendable, Hashable, CustomStringConvertible {
        public enum Origin: Sendable, Hashable {
            /// A page of the database file as read.
            case database
            /// A frame of the log.
            case frame(number: Int, state: WriteAheadLog.Frame.State)
        }

        public var origin: Origin
        public var page: UInt32
        /// The record's offset in its page.
        public var offset: Int
        public var place: Carver.Place
        /// The page was on its version's freelist.
        public var onFreelist: Bool
        /// For a database page the log replaced: the commit that first did.
        public var replacedBy: Int?
        /// The page is past the end of every version (cut off by a commit, or past the header's
        /// page count).
        public var pastEnd: Bool
        /// The record's header was rebuilt from its table's layout.
        public var rebuilt: Bool

        /// The log's commit the source belongs to, if any.
        public var commit: Int? {
            if case .frame(_, .committed(let commit)) = origin { return commit }
            return nil
        }

        /// The log's frame, if any.
        public var frame: Int? {
            if case .frame(let number, _) = origin { return number }
            return nil
        }

        /// `WAL frame 14 (commit 3), page 7: cell at offset 3012`.
        public var description: String {
            var text: String
            switch origin {
            case .database:
                text = "database page \(page)"
                var notes: [String] = []
                if onFreelist { notes.append("on the freelist") }
                if let replacedBy { notes.append("replaced by WAL commit \(replacedBy)") }
                if pastEnd { notes.append("past the database's end") }
                if !notes.isEmpty { text += " (" + notes.joined(separator: ", ") + ")" }
            case .frame(let number, let state):
                switch state {
                case .committed(let commit): text = "WAL frame \(number) (commit \(commit))"
                case .uncommitted: text = "WAL frame \(number) (uncommitted)"
                case .unverified: text = "WAL frame \(number) (outside the log SQLite reads)"
                }
                text += ", page \(page)" + (onFreelist ? " (on the freelist)" : "")
            }
            text += ": \(place.rawValue) at offset \(offset)"
            if rebuilt { text += ", header rebuilt" }
            return text
        }
    }

    /// How a recovered record stands against the live rows.
    public enum LiveState: String, Sendable, Hashable {
        /// No live row has its key.
        case deleted
        /// A live row has its key, with other values (the record is an earlier or later version).
        case differs
        /// Its key did not survive.
        case unknownKey = "unknown key"
    }

    /// A recovered record.
    public struct Row: Sendable {
        public var table: Int
        public var rowid: Int64?
        /// Header and body.
        public var payload: [UInt8]
        public var sources: [Source]
        public var live: LiveState
    }

    public struct Result: Sendable {
        public var rows: [Row]
        /// Records found but not kept (``Limits``).
        public var leftOut: Int
        /// Page versions read.
        public var pagesRead: Int
        public var cancelled: Bool
    }

    /// Scans `files` for rows of `tables`.
    public static func run(
        _ files: DatabaseFiles, tables: [TableSignature], limits: Limits = Limits(),
        cancelled: () -> Bool = { false }
    ) -> Result {
        let carver = Carver(tables: tables, usableSize: files.usableSize)
        var collector = Collector(limits: limits)
        var pagesRead = 0
        let current = files.state(files.lastVersion)
        let (trunks, leaves) = current.freelist()
        var stopped = false

        // 1. The version the store shows: free space of pages in use, all of freelist pages.
        for number in 1...max(current.pageCount, 1) where current.pageCount >= 1 {
            if pagesRead % 64 == 0 && cancelled() {
                stopped = true
                break
            }
            guard let page = current.page(number) else { continue }
            pagesRead += 1
            let frame = files.latestFrame(of: number, upTo: current.lastFrame).flatMap { files.frame($0) }
            let free = trunks.contains(number) || leaves.contains(number)
            let origin: Source.Origin = frame.map { .frame(number: $0.number, state: $0.state) } ?? .database
            for found in carver.records(
                in: page, number: number, cells: free, pageCount: current.pageCount, readPage: { current.page($0) })
            {
                collector.add(
                    found,
                    Source(
                        origin: origin, page: number, offset: found.offset, place: found.place, onFreelist: free,
                        replacedBy: nil, pastEnd: false, rebuilt: found.rebuilt))
            }
        }

        // 2. The database file's pages the log replaced or cut off, and its pages past the end.
        let original = files.state(0)
        let originalFree: (trunks: Set<UInt32>, leaves: Set<UInt32>) =
            files.lastVersion > 0 ? original.freelist() : (trunks, leaves)
        let filePages = files.filePageCount
        if !stopped && filePages >= 1 {
            for number in 1...filePages {
                let replacedBy = files.commitSuperseding(number)
                let pastEnd = number > current.pageCount
                guard replacedBy != nil || pastEnd else { continue }
                if pagesRead % 64 == 0 && cancelled() {
                    stopped = true
                    break
                }
                guard let page = files.databasePage(number) else { continue }
                pagesRead += 1
                let free = originalFree.trunks.contains(number) || originalFree.leaves.contains(number)
                for found in carver.records(
                    in: page, number: number, cells: true, pageCount: original.pageCount,
                    readPage: { original.page($0) })
                {
                    collector.add(
                        found,
                        Source(
                            origin: .database, page: number, offset: found.offset, place: found.place,
                            onFreelist: free, replacedBy: replacedBy, pastEnd: pastEnd, rebuilt: found.rebuilt))
                }
            }
        }

        // 3. Every frame but the latest committed one of its page.
        var freelists: [Int: (trunks: Set<UInt32>, leaves: Set<UInt32>)] = [:]
        for frame in files.wal?.frames ?? [] where !stopped {
            if case .committed = frame.state, files.latestFrame(of: frame.page, upTo: current.lastFrame) == frame.number
            {
                continue
            }
            if pagesRead % 64 == 0 && cancelled() {
                stopped = true
                break
            }
            guard let page = files.framePage(frame) else { continue }
            pagesRead += 1
            var state = current
            var free = false
            if case .committed(let commit) = frame.state {
                state = files.state(commit)
                if freelists[commit] == nil { freelists[commit] = state.freelist() }
                free =
                    freelists[commit].map { $0.trunks.contains(frame.page) || $0.leaves.contains(frame.page) } ?? false
            }
            for found in carver.records(
                in: page, number: frame.page, cells: true, pageCount: state.pageCount, readPage: { state.page($0) })
            {
                collector.add(
                    found,
                    Source(
                        origin: .frame(number: frame.number, state: frame.state), page: frame.page,
                        offset: found.offset, place: found.place, onFreelist: free, replacedBy: nil, pastEnd: false,
                        rebuilt: found.rebuilt))
            }
        }

        var rows = collector.compare(with: current, tables: tables, cancelled: cancelled)
        rows.sort {
            ($0.table, $0.rowid ?? Int64.max, $0.payload.count) < ($1.table, $1.rowid ?? Int64.max, $1.payload.count)
        }
        return Result(rows: rows, leftOut: collector.leftOut, pagesRead: pagesRead, cancelled: stopped)
    }

    /// The records found so far, each once.
    private struct Collector {
        struct Key: Hashable {
            var table: Int
            var rowid: Int64?
            var payload: [UInt8]
        }

        let limits: Limits
        var rows: [Row] = []
        var index: [Key: Int] = [:]
        var bytes = 0
        var leftOut = 0

        init(limits: Limits) { self.limits = limits }

        mutating func add(_ found: Carver.Found, _ source: Source) {
            let key = Key(table: found.table, rowid: found.rowid, payload: found.payload)
            if let at = index[key] {
                if !rows[at].sources.contains(source) { rows[at].sources.append(source) }
                return
            }
            guard rows.count < limits.maximumRecords, bytes + found.payload.count <= limits.maximumPayloadBytes else {
                leftOut += 1
                return
            }
            bytes += found.payload.count
            index[key] = rows.count
            rows.append(
                Row(
                    table: found.table, rowid: found.rowid, payload: found.payload, sources: [source],
                    live: found.rowid == nil ? .unknownKey : .deleted))
        }

        /// The rows that are not live: compared with the live rows of `state`, table by table.
        mutating func compare(with state: DatabaseState, tables: [TableSignature], cancelled: () -> Bool) -> [Row] {
            var keep = [Bool](repeating: true, count: rows.count)
            // Keyless records equal to a keyed one are that record, found once more.
            var keyed: [Int: [[UInt8]: Int]] = [:]
            for (i, row) in rows.enumerated() where row.rowid != nil {
                keyed[row.table, default: [:]][row.payload] = keyed[row.table]?[row.payload] ?? i
            }
            for (i, row) in rows.enumerated() where row.rowid == nil {
                if let target = keyed[row.table]?[row.payload] {
                    for source in row.sources where !rows[target].sources.contains(source) {
                        rows[target].sources.append(source)
                    }
                    keep[i] = false
                }
            }
            var byKey: [Int: [Int64: [Int]]] = [:]
            var keyless: [Int: [[UInt8]: [Int]]] = [:]
            for (i, row) in rows.enumerated() where keep[i] {
                if let rowid = row.rowid {
                    byKey[row.table, default: [:]][rowid, default: []].append(i)
                } else {
                    keyless[row.table, default: [:]][row.payload, default: []].append(i)
                }
            }
            for (table, signature) in tables.enumerated() where byKey[table] != nil || keyless[table] != nil {
                guard let root = signature.rootPage, !cancelled() else { continue }
                let keys = byKey[table] ?? [:]
                let copies = keyless[table] ?? [:]
                state.walkTable(root: root) { rowid, payload in
                    for i in keys[rowid] ?? [] {
                        if rows[i].payload == payload { keep[i] = false } else { rows[i].live = .differs }
                    }
                    if !copies.isEmpty { for i in copies[payload] ?? [] { keep[i] = false } }
                }
            }
            return rows.indices.filter { keep[$0] }.map { rows[$0] }
        }
    }
}
