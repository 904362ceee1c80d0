/// Finds the records of known tables in one page: the cells its pointers name, the cells left in
/// its free blocks (whose first four bytes SQLite overwrote with the block's link and size: the
/// record's header is rebuilt from the table's layout), and cells among the bytes of its
/// unallocated space (of a page of any b-tree kind: a leaf that became an interior page when its
/// table grew keeps its old cells there) or of a page that is no b-tree page (a freelist trunk,
/// an overflow page's tail).
///
/// A record whose end was overwritten (by a later cell, by the reuse of part of its free block,
/// by a page's new content, or whose overflow pages were used again) is found with the part that
/// survives: its header whole, its body up to the bytes that are no longer its own
/// (``Found/wholeLength`` says how long it was; ``SurvivingRecord`` reads it).
///
/// Every candidate is checked against a ``TableSignature`` before it counts: its payload length
/// must be exactly its header and body, its columns the table's, its Z_ENT one of the table's
/// entities, and a record carved from free space must be one SQLite could have written
/// (``TableSignature/isPlausibleCarving(_:schemaFormat:)``: it holds a value, its integers in the
/// serial types SQLite gives them, its dates dates).
/// Bytes that only look like a record are passed over.
///
/// Threading: a value; safe from any thread.
public struct Carver: Sendable {
    /// Where in its page a record was found.
    public enum Place: String, Sendable, Hashable {
        /// A cell of the page's cell pointer array.
        case cell
        /// A free block (a deleted cell's space, its first four bytes overwritten).
        case freeBlock = "free block"
        /// The gap between the cell pointers and the cell content.
        case unallocated = "unallocated space"
        /// The bytes of a page that is not a b-tree page.
        case pageContent = "page content"
    }

    /// A record found.
    public struct Found: Sendable {
        /// The index of its table in the carver's tables.
        public var table: Int
        /// Its rowid (the key of Core Data's tables), when the bytes that hold it survived.
        public var rowid: Int64?
        /// Its header and body, as the file holds them (a free block's header rebuilt); only the
        /// part that survived when its end was overwritten.
        public var payload: [UInt8]
        /// The payload's length when whole: more than `payload.count` for a record whose end was
        /// overwritten.
        public var wholeLength: Int
        public var offset: Int
        public var place: Place
        /// The header was rebuilt from the table's layout (its first bytes were overwritten).
        public var rebuilt: Bool

        /// Whether the record's end was overwritten.
        public var isPartial: Bool { payload.count < wholeLength }
    }

    /// A cell read among bytes: the record, the bytes the cell takes from its offset (up to the
    /// limit it was read within, for a record cut there), and where its body starts in the page.
    struct Candidate {
        var found: Found
        var length: Int
        var body: Int
    }

    public let tables: [TableSignature]
    public let usableSize: Int
    /// The database's schema format (``DatabaseHeader/schemaFormat``).
    public let schemaFormat: UInt32
    /// The column counts of the tables, for a quick refusal of most offsets.
    let columnCounts: Set<Int>
    let maximumColumns: Int
    /// Every table's first column is its rowid's alias: a record's first serial type is 0.
    let firstColumnIsRowid: Bool

    public init(tables: [TableSignature], usableSize: Int, schemaFormat: UInt32 = 4) {
        self.tables = tables
        self.usableSize = usableSize
        self.schemaFormat = schemaFormat
        columnCounts = Set(tables.map(\.columns.count))
        maximumColumns = tables.map(\.columns.count).max() ?? 0
        firstColumnIsRowid = !tables.isEmpty && tables.allSatisfy { $0.rowidColumn == 0 }
    }

    /// The records of `page`. `cells`: read the records its cell pointers name (not for a page in
    /// use in the version the store shows, whose cells are its live rows). `pageCount` and
    /// `readPage` read overflow chains in the page's version.
    public func records(
        in page: [UInt8], number: UInt32, cells: Bool, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> [Found] {
        guard !tables.isEmpty, page.count >= usableSize else { return [] }
        // Page 1 is the schema's root: never a row of a table here.
        if number == 1 { return [] }
        var found: [Found] = []
        if let tree = BTreePage(page, isFirstPage: false, usableSize: usableSize) {
            if cells && tree.kind == .tableLeaf {
                for pointer in tree.cellPointers {
                    guard
                        let cell = TableCell.read(
                            page, at: pointer, limit: usableSize, usable: usableSize, pageCount: pageCount,
                            keepingLocalPart: true, readPage: readPage),
                        let table = match(cell.payload, wholeLength: cell.wholeLength, strict: false)
                    else { continue }
                    found.append(
                        Found(
                            table: table, rowid: cell.rowid, payload: cell.payload, wholeLength: cell.wholeLength,
                            offset: pointer, place: .cell, rebuilt: false))
                }
            }
            // Interior and index pages too: their free space holds what the page held before
            // (a table's root leaf becomes an interior page when the table outgrows it, and SQLite
            // rewrites only the page's header).
            for block in tree.freeBlocks(in: page) {
                carveFreeBlock(page, at: block.offset, size: block.size, pageCount: pageCount, readPage, into: &found)
            }
            let gap = tree.unallocated
            scan(page, gap.lowerBound, gap.upperBound, place: .unallocated, pageCount, readPage, into: &found)
        } else {
            scan(page, 0, usableSize, place: .pageContent, pageCount, readPage, into: &found)
        }
        return found
    }

    // MARK: - Matching

    /// The table a payload is a row of; nil when it is none's. `wholeLength`: the payload's
    /// length when whole (more than `payload.count` when its end was lost).
    func match(_ payload: [UInt8], wholeLength: Int, strict: Bool) -> Int? {
        guard let record = SurvivingRecord(payload), let body = RecordFormat.bodyLength(of: record.types),
            record.headerLength + body == wholeLength, payload.count <= wholeLength
        else { return nil }
        guard record.isWhole else {
            return tables.indices.first {
                tables[$0].accepts(partial: record, strict: strict) && (!strict || plausible(record, $0))
            }
        }
        guard
            let values = RecordFormat.values(
                record.types, in: payload, at: record.headerLength, limit: payload.count)
        else { return nil }
        return tables.indices.first {
            tables[$0].accepts(types: record.types, strict: strict)
                && tables[$0].accepts(values: values, strict: strict) && (!strict || plausible(record, $0))
        }
    }

    /// A carved payload as far as it is the record's own. Text never holds NUL bytes; SQLite
    /// zeroes freed space (when it defragments a page, under secure_delete), so a text value whose
    /// bytes turn to zeros that run to the payload's end was overwritten from the first of them:
    /// the payload is cut there. Nil when a NUL is followed by other bytes (no text an app wrote).
    func withoutZeroedEnd(_ payload: [UInt8]) -> [UInt8]? {
        guard let record = SurvivingRecord(payload) else { return payload }
        for index in 0..<record.intactColumns where record.types[index] >= 13 && record.types[index] % 2 == 1 {
            guard let range = record.range(of: index), let nul = payload[range].firstIndex(of: 0) else { continue }
            return payload[nul...].allSatisfy { $0 == 0 } ? Array(payload[..<nul]) : nil
        }
        return payload
    }

    /// ``TableSignature/isPlausibleCarving(_:schemaFormat:)`` for table `table`.
    func plausible(_ record: SurvivingRecord, _ table: Int) -> Bool {
        tables[table].isPlausibleCarving(record, schemaFormat: schemaFormat)
    }
}
