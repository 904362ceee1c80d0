/// Cells among bytes: unallocated space, what follows a free block's first cell, a page that is no
/// b-tree page.
extension Carver {
    /// Looks for cells from each offset of `start..<end` of `page`, checked strictly: whole cells
    /// (payload length, rowid, header, body), cells that start with a free block's stale link and
    /// size (a cell freed first and then merged into a larger block, or into the unallocated space
    /// when it was the first cell of the content area), whose header is rebuilt, and cells whose
    /// lengths and rowid were overwritten but whose serial types survive.
    ///
    /// A cell that runs past `end` lost its end to what lies there (a later cell, a page's new
    /// content) and is kept with the part before `end`. So is a cell inside whose body another
    /// cell's head is found: that later cell was written over its end (had it been the other way
    /// round, the later cell's head would be gone). A cell found is skipped over. A cell whose
    /// head is whole but that does not read to its end (what lies over its end is no value of
    /// its own) is read again up to the first cell head after its header: cells each written over
    /// the end of the one before are each cut where the next begins.
    ///
    /// Each offset is read as the start of a cell once, and as a cell head at most once more
    /// (``CellHeads``): a page costs the same whatever its bytes.
    func scan(
        _ page: [UInt8], _ start: Int, _ end: Int, place: Place, _ pageCount: UInt32,
        _ readPage: (UInt32) -> [UInt8]?, into found: inout [Found]
    ) {
        var offset = max(start, 0)
        let end = min(end, usableSize, page.count)
        var heads = CellHeads(start: offset)
        while offset + 4 <= end {
            guard
                let candidate = cell(page, at: offset, end: end, pageCount: pageCount, readPage: readPage)
                    ?? cutCell(page, at: offset, end: end, heads: &heads, pageCount: pageCount, readPage: readPage)
            else {
                offset += 1
                continue
            }
            var kept: Candidate? = candidate
            var next = offset + max(candidate.length, 1)
            if let later = laterCell(
                page, after: candidate.body, before: next, end: end, pageCount: pageCount, readPage: readPage)
            {
                kept = cell(page, at: offset, end: later, pageCount: pageCount, readPage: readPage)
                next = later
            }
            if var record = kept?.found {
                record.place = place
                found.append(record)
            }
            offset = next
        }
    }

    /// The offsets of a scanned range where a cell head (``Carver/head(_:at:end:)``) whose serial
    /// types some table takes strictly starts, found once each: the range is read forward as far as a question needs, never twice.
    struct CellHeads {
        private var frontier: Int
        private var found: [Int] = []

        init(start: Int) { frontier = start }

        /// The first head in `start..<before` (heads read within `end`).
        mutating func first(in carver: Carver, _ page: [UInt8], from start: Int, before: Int, end: Int) -> Int? {
            let before = min(before, end - 4)
            while frontier < before {
                if carver.startsCellHead(page, at: frontier, end: end) { found.append(frontier) }
                frontier += 1
            }
            // The first found at or after `start` (binary search: `found` is sorted).
            var low = 0
            var high = found.count
            while low < high {
                let middle = (low + high) / 2
                if found[middle] < start { low = middle + 1 } else { high = middle }
            }
            return low < found.count && found[low] < before ? found[low] : nil
        }
    }

    /// The cell at `offset` whose head is whole but that does not read to its end, read up to the
    /// first cell head after its header (and within the bytes it would take): a later cell
    /// written over its end. Nil when there is none or the part before it is no record.
    private func cutCell(
        _ page: [UInt8], at offset: Int, end: Int, heads: inout CellHeads, pageCount: UInt32,
        readPage: (UInt32) -> [UInt8]?
    ) -> Candidate? {
        guard let head = head(page, at: offset, end: end),
            let later = heads.first(
                in: self, page, from: head.headerEnd,
                before: head.headerStart + TableCell.localLength(of: head.payloadLength, usable: usableSize), end: end),
            let cut = intactCell(page, at: offset, end: later, pageCount: pageCount, readPage: readPage),
            cut.found.isPartial
        else { return nil }
        return cut
    }

    /// The first offset in `start..<before` where a cell with an intact or stale free-block head
    /// starts (read within `end`).
    private func laterCell(
        _ page: [UInt8], after start: Int, before: Int, end: Int, pageCount: UInt32,
        readPage: (UInt32) -> [UInt8]?
    ) -> Int? {
        var offset = max(start, 0)
        while offset < min(before, end) - 4 {
            if staleHeaderCell(page, at: offset, end: end, pageCount: pageCount, readPage: readPage) != nil
                || intactCell(page, at: offset, end: end, pageCount: pageCount, readPage: readPage) != nil
            {
                return offset
            }
            offset += 1
        }
        return nil
    }

    /// The cell at `offset`, read within `end`: one with a free block's stale head, a whole head,
    /// or its serial types only. A stale-head reading guesses the lengths it rebuilds: when a cell
    /// with a whole head starts among those bytes, that cell is the one there, and nothing is
    /// read at `offset`.
    private func cell(
        _ page: [UInt8], at offset: Int, end: Int, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> Candidate? {
        if let stale = staleHeaderCell(page, at: offset, end: end, pageCount: pageCount, readPage: readPage) {
            var start = offset + 1
            while start < min(stale.body, end) {
                if startsCellHead(page, at: start, end: end) { return nil }
                start += 1
            }
            return stale
        }
        return intactCell(page, at: offset, end: end, pageCount: pageCount, readPage: readPage)
            ?? headerlessCell(page, typesAt: offset, end: end)
    }

    /// A cell whose first four bytes are a free block's link (0, or forward) and size (the block
    /// it was freed into may have been larger than what is left of it before `end`).
    private func staleHeaderCell(
        _ page: [UInt8], at offset: Int, end: Int, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> Candidate? {
        guard let next = page.bigEndian(at: offset, count: 2), let size = page.bigEndian(at: offset + 2, count: 2),
            size >= 8, offset + Int(size) <= usableSize, next == 0 || (Int(next) > offset && Int(next) < usableSize)
        else { return nil }
        return rebuiltCell(
            page, at: offset, end: min(end, offset + Int(size)), pageCount: pageCount, readPage: readPage)
    }

    /// A cell whose lengths and rowid were overwritten (by a cell pointer array that grew, a
    /// later cell, a block's link) but whose serial types survive from `index`: for each table
    /// whose first column is the rowid's alias, the types read from there (the alias's NULL
    /// first), the body after them, both within `end` and checked strictly. Only payloads held
    /// whole in the page; the rowid is lost.
    private func headerlessCell(_ page: [UInt8], typesAt index: Int, end: Int) -> Candidate? {
        // A cheap refusal first: the alias's NULL, then Z_ENT's and Z_OPT's integer types.
        guard firstColumnIsRowid, index + 3 < end, page[index] == 0, RecordFormat.isInteger(Int64(page[index + 1])),
            page[index + 2] == 0 || RecordFormat.isInteger(Int64(page[index + 2]))
        else { return nil }
        var best: Candidate?
        for (number, table) in tables.enumerated() where table.entityColumn == 1 {
            guard let (types, at) = serialTypes(of: table, in: page, from: index, end: end),
                let body = RecordFormat.bodyLength(of: types), at + body <= end
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
            // Only whole records here: one whose text turned to zeros is not read this way.
            guard withoutZeroedEnd(payload)?.count == payload.count, let record = SurvivingRecord(payload),
                plausible(record, number)
            else { continue }
            let found = Found(
                table: number, rowid: nil, payload: payload, wholeLength: payload.count, offset: index, place: .cell,
                rebuilt: true)
            if best == nil || at + body - index > best!.length {
                best = Candidate(found: found, length: at + body - index, body: at)
            }
        }
        return best
    }

    /// The serial types of a record of `table` read from `index` of `page` (within `end`), each
    /// of its column's kind; with where they end. Nil at the first that is not.
    func serialTypes(of table: TableSignature, in page: [UInt8], from index: Int, end: Int, first: [Int64] = [])
        -> ([Int64], Int)?
    {
        let n = table.columns.count
        var types = first
        types.reserveCapacity(n)
        for (column, type) in first.enumerated() where !table.acceptsStrictly(type, column: column) { return nil }
        var at = index
        while types.count < n {
            guard let (type, length) = Varint.read(page, at: at, limit: end),
                RecordFormat.contentSize(of: type) != nil, table.acceptsStrictly(type, column: types.count)
            else { return nil }
            types.append(type)
            at += length
        }
        guard table.accepts(types: types, strict: true) else { return nil }
        return (types, at)
    }

    /// A cell at `offset` whose head (payload length, rowid, header) is whole and read before
    /// `end`: whole when its local part ends by `end` and its overflow chain reads, else the
    /// part before `end` (or its local part, when the overflow chain was lost).
    private func intactCell(
        _ page: [UInt8], at offset: Int, end: Int, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> Candidate? {
        guard let (rowid, payloadLength, headerStart, headerEnd, _) = head(page, at: offset, end: end) else {
            return nil
        }
        let local = TableCell.localLength(of: payloadLength, usable: usableSize)
        var payload: [UInt8]
        var cellLength: Int
        if headerStart + local + (local < payloadLength ? 4 : 0) <= end {
            guard
                let cell = TableCell.read(
                    page, at: offset, limit: end, usable: usableSize, pageCount: pageCount, keepingLocalPart: true,
                    readPage: readPage)
            else { return nil }
            payload = cell.payload
            cellLength = cell.length
        } else {
            // The end was overwritten: the part before `end` (of the page's part of the payload).
            payload = Array(page[headerStart..<min(end, headerStart + local)])
            cellLength = end - offset
        }
        guard let kept = withoutZeroedEnd(payload), let table = match(kept, wholeLength: payloadLength, strict: true)
        else { return nil }
        payload = kept
        return Candidate(
            found: Found(
                table: table, rowid: rowid, payload: payload, wholeLength: payloadLength, offset: offset,
                place: .cell, rebuilt: false),
            length: cellLength, body: headerEnd)
    }

    /// Whether a cell head whose serial types some table takes strictly starts at `offset`.
    func startsCellHead(_ page: [UInt8], at offset: Int, end: Int) -> Bool {
        guard let head = head(page, at: offset, end: end) else { return false }
        return tables.contains { $0.accepts(types: head.types, strict: true) }
    }

    /// The head of a cell at `offset` read before `end`: payload length, rowid and a record
    /// header of a column count some table has, whose body makes the payload's length. What
    /// follows the header is not read.
    func head(_ page: [UInt8], at offset: Int, end: Int) -> (
        rowid: Int64, payloadLength: Int, headerStart: Int, headerEnd: Int, types: [Int64]
    )? {
        guard let (length, lengthSize) = Varint.read(page, at: offset, limit: end), length >= 3,
            length <= Int64(TableCell.maximumPayload),
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
        let headerEnd = headerStart + Int(headerSize)
        guard headerEnd <= end,
            let (types, _) = RecordFormat.header(page, at: headerStart, limit: headerEnd),
            columnCounts.contains(types.count), let body = RecordFormat.bodyLength(of: types),
            Int(headerSize) + body == Int(length)
        else { return nil }
        return (rowid, Int(length), headerStart, headerEnd, types)
    }
}
