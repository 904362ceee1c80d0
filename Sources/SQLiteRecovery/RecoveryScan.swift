/// Reads every page version a database file and its log hold, finds the records of the given
/// tables that are not the database's live rows (deleted rows, and versions of rows since
/// updated), and says where each was found.
///
/// What is read: every page of the last version (the one a reader of the store sees): the cells
/// of its freelist pages, the free blocks and unallocated space of its pages in use, the bytes
/// of pages that are no b-tree page (pointer-map pages excepted); then every page version it does not show: the database
/// file's own pages that the log replaced (or that its commits cut off), and every frame of the
/// log but the latest committed one of each page (earlier commits, frames after the last commit,
/// frames SQLite would not read). A record found in several places is one record with every
/// place. Records equal to the live row of their key, and keyless records equal to some live row
/// of their table (a copy left behind when SQLite moved a cell), are not recovered. A record
/// whose end was overwritten (``Row/isPartial``) is compared on the columns that survive
/// (``SurvivingRecord``): one that agrees with the live row of its key, with some live row of its
/// table when its key is lost, or with another record recovered here (then one more place of
/// that record), cannot be told apart from it and is not recovered on its own.
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
        /// Header and body (as far as they survive: see ``wholeLength``).
        public var payload: [UInt8]
        /// The payload's length when whole; more than `payload.count` when the record's end was
        /// overwritten (``SurvivingRecord`` reads what is left).
        public var wholeLength: Int
        public var sources: [Source]
        public var live: LiveState

        /// Whether the record's end was overwritten.
        public var isPartial: Bool { payload.count < wholeLength }
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
        let carver = Carver(tables: tables, usableSize: files.usableSize, schemaFormat: files.header.schemaFormat)
        let header = files.header
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
            // Pointer-map pages hold five-byte entries, never a record (their bytes read as rows of NULLs).
            guard !header.isPointerMapPage(number), let page = current.page(number) else { continue }
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
                guard !header.isPointerMapPage(number), let page = files.databasePage(number) else { continue }
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
            guard !header.isPointerMapPage(frame.page), let page = files.framePage(frame) else { continue }
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
                    table: found.table, rowid: found.rowid, payload: found.payload, wholeLength: found.wholeLength,
                    sources: [source], live: found.rowid == nil ? .unknownKey : .deleted))
        }

        /// The rows that are not live: compared with the live rows of `state`, table by table.
        mutating func compare(with state: DatabaseState, tables: [TableSignature], cancelled: () -> Bool) -> [Row] {
            var keep = [Bool](repeating: true, count: rows.count)
            // Keyless records equal to a keyed one are that record, found once more.
            var keyed: [Int: [[UInt8]: Int]] = [:]
            for (i, row) in rows.enumerated() where row.rowid != nil && !row.isPartial {
                keyed[row.table, default: [:]][row.payload] = keyed[row.table]?[row.payload] ?? i
            }
            for (i, row) in rows.enumerated() where row.rowid == nil && !row.isPartial {
                if let target = keyed[row.table]?[row.payload] {
                    merge(i, into: target)
                    keep[i] = false
                }
            }
            mergePartials(&keep)
            var byKey: [Int: [Int64: [Int]]] = [:]
            var keyless: [Int: [[UInt8]: [Int]]] = [:]
            var partials = PartialIndex()
            for (i, row) in rows.enumerated() where keep[i] {
                if let rowid = row.rowid {
                    byKey[row.table, default: [:]][rowid, default: []].append(i)
                } else if row.isPartial, let record = SurvivingRecord(row.payload) {
                    partials.add(i, row.table, record)
                } else {
                    keyless[row.table, default: [:]][row.payload, default: []].append(i)
                }
            }
            for (table, signature) in tables.enumerated()
            where byKey[table] != nil || keyless[table] != nil || partials.counts[table] != nil {
                guard let root = signature.rootPage, !cancelled() else { continue }
                let keys = byKey[table] ?? [:]
                let copies = keyless[table] ?? [:]
                let counts = partials.counts[table] ?? []
                state.walkTable(root: root) { rowid, payload in
                    for i in keys[rowid] ?? [] {
                        if rows[i].isPartial {
                            // Compared on what survived: equal there, it cannot be told from the row.
                            if let record = SurvivingRecord(rows[i].payload), let live = SurvivingRecord(payload),
                                record.agrees(with: live)
                            {
                                keep[i] = false
                            } else {
                                rows[i].live = .differs
                            }
                        } else if rows[i].payload == payload {
                            keep[i] = false
                        } else {
                            rows[i].live = .differs
                        }
                    }
                    if !copies.isEmpty { for i in copies[payload] ?? [] { keep[i] = false } }
                    if !counts.isEmpty, let live = SurvivingRecord(payload) {
                        for i in partials.agreeing(with: live, table: table, counts: counts) { keep[i] = false }
                    }
                }
            }
            return rows.indices.filter { keep[$0] }.map { rows[$0] }
        }

        /// Adds the places of record `i` to record `target`'s.
        private mutating func merge(_ i: Int, into target: Int) {
            for source in rows[i].sources where !rows[target].sources.contains(source) {
                rows[target].sources.append(source)
            }
        }

        /// Merges each partial record into a recovered record that agrees with it on every
        /// column it kept and survived at least as far (a whole one first): it is that record,
        /// found once more with its end overwritten, or a version that cannot be told from it.
        /// A keyed partial record merges only into a record with its key, or into a whole keyless
        /// one that then has its key.
        private mutating func mergePartials(_ keep: inout [Bool]) {
            var partials = PartialIndex()
            var records: [Int: SurvivingRecord] = [:]
            for (i, row) in rows.enumerated() where keep[i] && row.isPartial {
                guard let record = SurvivingRecord(row.payload) else { continue }
                partials.add(i, row.table, record)
                records[i] = record
            }
            guard !partials.members.isEmpty else { return }
            // The most complete records first: a record merged away is never a target after.
            let order = rows.indices.filter { keep[$0] && partials.counts[rows[$0].table] != nil }.sorted {
                (rows[$0].isPartial ? rows[$0].payload.count : Int.max, -$0)
                    > (rows[$1].isPartial ? rows[$1].payload.count : Int.max, -$1)
            }
            for target in order where keep[target] {
                guard let record = records[target] ?? SurvivingRecord(rows[target].payload) else { continue }
                let counts = partials.counts[rows[target].table] ?? []
                for i in partials.agreeing(with: record, table: rows[target].table, counts: counts)
                where i != target && keep[i] {
                    let completer =
                        !rows[target].isPartial || rows[target].payload.count > rows[i].payload.count
                        || (rows[target].payload.count == rows[i].payload.count && target < i)
                    guard completer else { continue }
                    if let key = rows[i].rowid, rows[target].rowid != key {
                        // A keyed part gives its key to a whole keyless record it agrees with, when
                        // what it kept includes a text or blob (a few numbers agree too easily).
                        guard rows[target].rowid == nil, !rows[target].isPartial, records[i]?.keepsTextOrBlob == true
                        else { continue }
                        rows[target].rowid = key
                        rows[target].live = .deleted
                    }
                    merge(i, into: target)
                    keep[i] = false
                }
            }
        }
    }

    /// Partial records by table and by a digest of the columns they kept whole
    /// (``SurvivingRecord/prefixDigests(_:)``), to find those a record agrees with in one pass
    /// over it.
    private struct PartialIndex {
        struct Key: Hashable {
            var table: Int
            var count: Int
            var digest: Int
        }

        var members: [Key: [(index: Int, record: SurvivingRecord)]] = [:]
        /// Per table, the counts of whole columns the partial records have.
        var counts: [Int: Set<Int>] = [:]

        mutating func add(_ index: Int, _ table: Int, _ record: SurvivingRecord) {
            let key = Key(table: table, count: record.intactColumns, digest: record.prefixDigest)
            members[key, default: []].append((index, record))
            counts[table, default: []].insert(record.intactColumns)
        }

        /// The partial records of `table` that `other` agrees with on every column they kept.
        func agreeing(with other: SurvivingRecord, table: Int, counts: Set<Int>) -> [Int] {
            var result: [Int] = []
            for (count, digest) in other.prefixDigests(counts) {
                for member in members[Key(table: table, count: count, digest: digest)] ?? []
                where member.record.agrees(with: other) {
                    result.append(member.index)
                }
            }
            return result
        }
    }
}
