/// Finds the records of known tables in one page: the cells its pointers name, the cells left in
/// its free blocks (whose first four bytes SQLite overwrote with the block's link and size: the
/// record's header is rebuilt from the table's layout), and whole cells among the bytes of its
/// unallocated space or of a page that is no b-tree page (a freelist trunk, an overflow page's
/// tail).
///
/// Every candidate is checked against a ``TableSignature`` before it counts: its payload length
/// must be exactly its header and body, its columns the table's, its Z_ENT one of the table's
/// entities. Bytes that only look like a record are passed over.
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
        /// Its header and body, as the file holds them (a free block's header rebuilt).
        public var payload: [UInt8]
        public var values: [RecordValue]
        public var offset: Int
        public var place: Place
        /// The header was rebuilt from the table's layout (its first bytes were overwritten).
        public var rebuilt: Bool
    }

    public let tables: [TableSignature]
    public let usableSize: Int
    /// The column counts of the tables, for a quick refusal of most offsets.
    private let columnCounts: Set<Int>
    private let maximumColumns: Int
    /// Every table's first column is its rowid's alias: a record's first serial type is 0.
    private let firstColumnIsRowid: Bool

    public init(tables: [TableSignature], usableSize: Int) {
        self.tables = tables
        self.usableSize = usableSize
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
            guard tree.kind == .tableLeaf else { return [] }
            if cells {
                for pointer in tree.cellPointers {
                    guard
                        let cell = TableCell.read(
                            page, at: pointer, limit: usableSize, usable: usableSize, pageCount: pageCount,
                            readPage: readPage),
                        let (table, values) = match(cell.payload, strict: false)
                    else { continue }
                    found.append(
                        Found(
                            table: table, rowid: cell.rowid, payload: cell.payload, values: values, offset: pointer,
                            place: .cell, rebuilt: false))
                }
            }
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

    /// The table a payload is a row of, and its values; nil when it is none's.
    func match(_ payload: [UInt8], strict: Bool) -> (Int, [RecordValue])? {
        guard let (types, headerLength) = RecordFormat.header(payload, at: 0, limit: payload.count),
            let body = RecordFormat.bodyLength(of: types), headerLength + body == payload.count
        else { return nil }
        return match(types: types, body: payload, at: headerLength, limit: payload.count, strict: strict)
    }

    private func match(types: [Int64], body bytes: [UInt8], at index: Int, limit: Int, strict: Bool) -> (
        Int, [RecordValue]
    )? {
        var decoded: [RecordValue]?
        for (i, table) in tables.enumerated() where table.accepts(types: types, strict: strict) {
            if decoded == nil { decoded = RecordFormat.values(types, in: bytes, at: index, limit: limit) }
            guard let values = decoded else { return nil }
            if table.accepts(values: values, strict: strict) { return (i, values) }
        }
        return nil
    }

    // MARK: - Whole cells among bytes

    /// Looks for cells from each offset of `start..<end` of `page`, checked strictly: whole cells
    /// (payload length, rowid, header, body), and cells that start with a free block's stale
    /// link and size (a cell freed first and then merged into a larger block, or into the
    /// unallocated space when it was the first cell of the content area), whose header is rebuilt.
    /// A cell found is skipped over.
    private func scan(
        _ page: [UInt8], _ start: Int, _ end: Int, place: Place, _ pageCount: UInt32,
        _ readPage: (UInt32) -> [UInt8]?, into found: inout [Found]
    ) {
        var offset = max(start, 0)
        let end = min(end, usableSize)
        while offset + 4 <= end {
            if let next = page.bigEndian(at: offset, count: 2), let size = page.bigEndian(at: offset + 2, count: 2),
                size >= 8, offset + Int(size) <= end, next == 0 || Int(next) > offset,
                let (record, length) = rebuiltCell(
                    page, at: offset, end: offset + Int(size), pageCount: pageCount, readPage: readPage)
            {
                var record = record
                record.place = place
                found.append(record)
                offset += max(length, 1)
                continue
            }
            if let (record, length) = intactCell(page, at: offset, end: end, pageCount: pageCount, readPage: readPage)
                ?? headerlessCell(page, typesAt: offset, end: end)
            {
                var record = record
                record.place = place
                found.append(record)
                offset += max(length, 1)
            } else {
                offset += 1
            }
        }
    }

    /// A cell whose lengths and rowid were overwritten (by a cell pointer array that grew, a
    /// later cell, a block's link) but whose serial types survive from `index`: for each table
    /// whose first column is the rowid's alias, the types read from there (the alias's NULL
    /// first), the body after them, both within `end` and checked strictly. Only payloads held
    /// whole in the page; the rowid is lost.
    private func headerlessCell(_ page: [UInt8], typesAt index: Int, end: Int) -> (Found, Int)? {
        // A cheap refusal first: the alias's NULL, then Z_ENT's and Z_OPT's integer types.
        guard firstColumnIsRowid, index + 3 < end, page[index] == 0, RecordFormat.isInteger(Int64(page[index + 1])),
            page[index + 2] == 0 || RecordFormat.isInteger(Int64(page[index + 2]))
        else { return nil }
        var best: (Found, Int)?
        for (number, table) in tables.enumerated() where table.entityColumn == 1 {
            let n = table.columns.count
            var types: [Int64] = []
            types.reserveCapacity(n)
            var at = index
            while types.count < n {
                guard let (type, length) = Varint.read(page, at: at, limit: end),
                    RecordFormat.contentSize(of: type) != nil
                else { break }
                types.append(type)
                at += length
            }
            guard types.count == n, table.accepts(types: types, strict: true),
                let body = RecordFormat.bodyLength(of: types),
                at + body <= end
            else { continue }
            let typeBytes = at - index
            var headerSize = typeBytes + 1
            if Varint.length(of: Int64(headerSize)) > 1 {
                headerSize = typeBytes + Varint.length(of: Int64(typeBytes + 2))
            }
            guard TableCell.localLength(of: headerSize + body, usable: usableSize) == headerSize + body,
                let values = RecordFormat.values(types, in: page, at: at, limit: end),
                table.accepts(values: values, strict: true)
            else { continue }
            var payload = Varint.encode(Int64(headerSize))
            for type in types { payload += Varint.encode(type) }
            payload += page[at..<(at + body)]
            let record = Found(
                table: number, rowid: nil, payload: payload, values: values, offset: index, place: .cell, rebuilt: true)
            if best == nil || at + body - index > best!.1 { best = (record, at + body - index) }
        }
        return best
    }

    /// A whole cell at `offset` that ends by `end` (its local part; the rest in overflow pages).
    private func intactCell(
        _ page: [UInt8], at offset: Int, end: Int, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> (Found, Int)? {
        guard let (length, lengthSize) = Varint.read(page, at: offset, limit: end), length >= 3,
            let (rowid, rowidSize) = Varint.read(page, at: offset + lengthSize, limit: end)
        else { return nil }
        let headerStart = offset + lengthSize + rowidSize
        // Quick refusals before any allocation: a header size that fits, a first column that is
        // the rowid's alias (NULL), a column count some table has.
        guard let (headerSize, headerSizeLength) = Varint.read(page, at: headerStart, limit: end),
            headerSize >= 2, headerSize <= Int64(maximumColumns) * 9 + 9, headerSize < length,
            headerStart + headerSizeLength < end
        else { return nil }
        if firstColumnIsRowid && page[headerStart + headerSizeLength] != 0 { return nil }
        let payloadLength = Int(length)
        let local = TableCell.localLength(of: payloadLength, usable: usableSize)
        let headerEnd = headerStart + Int(headerSize)
        guard headerEnd <= end, headerStart + local <= end || local < payloadLength else { return nil }
        guard let (types, _) = RecordFormat.header(page, at: headerStart, limit: headerEnd),
            columnCounts.contains(types.count), let body = RecordFormat.bodyLength(of: types),
            Int(headerSize) + body == payloadLength
        else { return nil }
        guard
            let cell = TableCell.read(
                page, at: offset, limit: end, usable: usableSize, pageCount: pageCount, readPage: readPage),
            let (table, values) = match(
                types: types, body: cell.payload, at: Int(headerSize), limit: cell.payload.count, strict: true)
        else { return nil }
        return (
            Found(
                table: table, rowid: rowid, payload: cell.payload, values: values, offset: offset, place: .cell,
                rebuilt: false), cell.length
        )
    }

    // MARK: - Free blocks

    /// The cell a free block starts with, its first four bytes (payload length, rowid, part of
    /// the header) overwritten: for each table and each place the serial types may start, the
    /// header is read from the bytes that remain (the rowid's alias, always NULL, supplied when
    /// its byte was overwritten) and accepted when the lengths it implies fit what was
    /// overwritten and the record fits the block. Then whole cells are looked for in the rest of
    /// the block (adjacent freed cells merge into one block and keep their headers).
    private func carveFreeBlock(
        _ page: [UInt8], at offset: Int, size: Int, pageCount: UInt32, _ readPage: (UInt32) -> [UInt8]?,
        into found: inout [Found]
    ) {
        let end = min(offset + size, usableSize)
        var resume = offset + 4
        if let (record, length) = rebuiltCell(page, at: offset, end: end, pageCount: pageCount, readPage: readPage) {
            found.append(record)
            resume = offset + length
        }
        scan(page, resume, end, place: .freeBlock, pageCount, readPage, into: &found)
    }

    /// The cell at the start of a free block with its header rebuilt; with the bytes it took.
    private func rebuiltCell(
        _ page: [UInt8], at offset: Int, end: Int, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> (Found, Int)? {
        var best: (Found, Int)?
        for (index, table) in tables.enumerated() {
            let n = table.columns.count
            guard n >= 2 else { continue }
            // Serial types start `k` bytes into the cell: after the payload length (1+ bytes),
            // the rowid (1+) and the header size (1+).
            for k in 3...12 {
                var types: [Int64] = []
                types.reserveCapacity(n)
                var at = offset + k
                if k < 4 {
                    // The first serial type's byte was overwritten: it is the rowid alias's NULL.
                    guard table.rowidColumn == 0 else { continue }
                    types.append(0)
                    at = offset + 4
                }
                var ok = true
                while types.count < n {
                    guard let (type, length) = Varint.read(page, at: at, limit: end),
                        RecordFormat.contentSize(of: type) != nil
                    else {
                        ok = false
                        break
                    }
                    types.append(type)
                    at += length
                }
                guard ok, table.accepts(types: types, strict: true), let body = RecordFormat.bodyLength(of: types)
                else { continue }
                // The header's own length, and what the lengths before it must have taken.
                let typeBytes = (k < 4 ? 1 : 0) + (at - offset - max(k, 4))
                var headerSize = typeBytes + 1
                if Varint.length(of: Int64(headerSize)) > 1 {
                    headerSize = typeBytes + Varint.length(of: Int64(typeBytes + 2))
                }
                let headerSizeLength = headerSize - typeBytes
                let payloadLength = headerSize + body
                let lengthSize = Varint.length(of: Int64(payloadLength))
                let rowidSize = k - headerSizeLength - lengthSize
                guard rowidSize >= 1, rowidSize <= 9 else { continue }
                // The bytes of the lengths that survived must read as what they were.
                let headerSizeAt = offset + k - headerSizeLength
                if headerSizeAt >= offset + 4 {
                    guard let (value, length) = Varint.read(page, at: headerSizeAt, limit: end),
                        value == Int64(headerSize), length == headerSizeLength
                    else { continue }
                }
                let rowidEnd = offset + lengthSize + rowidSize
                if rowidEnd - 1 >= offset + 4 {
                    guard page[rowidEnd - 1] & 0x80 == 0 || rowidSize == 9 else { continue }
                    let first = max(offset + 4, offset + lengthSize)
                    var intact = true
                    var i = first
                    while i < rowidEnd - 1 {
                        if page[i] & 0x80 == 0 { intact = false }
                        i += 1
                    }
                    guard intact else { continue }
                }
                var header = Varint.encode(Int64(headerSize))
                for type in types { header += Varint.encode(type) }
                // The body: in the block, or its start here and the rest in an overflow chain
                // (freed with the cell; it must end exactly where the payload does).
                let local = TableCell.localLength(of: payloadLength, usable: usableSize)
                var payload = header
                var cellEnd = at + body
                if local == payloadLength {
                    guard at + body <= end else { continue }
                    payload += page[at..<(at + body)]
                } else {
                    let localBody = local - headerSize
                    guard localBody >= 0, at + localBody + 4 <= end,
                        let overflow = overflowContent(
                            page, at: at + localBody, count: payloadLength - local, pageCount: pageCount,
                            readPage: readPage)
                    else { continue }
                    payload += page[at..<(at + localBody)]
                    payload += overflow
                    cellEnd = at + localBody + 4
                }
                guard let values = RecordFormat.values(types, in: payload, at: headerSize, limit: payload.count),
                    table.accepts(values: values, strict: true)
                else { continue }
                var rowid: Int64?
                if lengthSize >= 4, let (value, length) = Varint.read(page, at: offset + lengthSize, limit: end),
                    length == rowidSize
                {
                    rowid = value
                }
                let record = Found(
                    table: index, rowid: rowid, payload: payload, values: values, offset: offset, place: .freeBlock,
                    rebuilt: true)
                let length = cellEnd - offset
                // The longest reading wins: a shorter one is usually a prefix that happens to parse.
                if best == nil || length > best!.1 { best = (record, length) }
                break
            }
        }
        return best
    }

    /// `count` bytes of an overflow chain whose first page number is at `index` of `page`.
    private func overflowContent(
        _ page: [UInt8], at index: Int, count: Int, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> [UInt8]? {
        guard let first = page.bigEndian(at: index, count: 4) else { return nil }
        return TableCell.overflow(
            from: first, count: count, usable: usableSize, pageCount: pageCount, readPage: readPage)?
            .0
    }
}
