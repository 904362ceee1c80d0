/// Cells at the start of free blocks, whose first four bytes SQLite overwrote with the block's
/// link and size.
extension Carver {
    /// The cell a free block starts with, its header rebuilt (``rebuiltCell(_:at:end:pageCount:readPage:)``),
    /// then cells among the rest of the block (adjacent freed cells merge into one block and keep
    /// their heads).
    func carveFreeBlock(
        _ page: [UInt8], at offset: Int, size: Int, pageCount: UInt32, _ readPage: (UInt32) -> [UInt8]?,
        into found: inout [Found]
    ) {
        let end = min(offset + size, usableSize)
        var resume = offset + 4
        if let candidate = rebuiltCell(page, at: offset, end: end, pageCount: pageCount, readPage: readPage) {
            found.append(candidate.found)
            resume = offset + candidate.length
        }
        scan(page, resume, end, place: .freeBlock, pageCount, readPage, into: &found)
    }

    /// The cell at `offset` with its first four bytes (payload length, rowid, part of the header)
    /// overwritten: for each table and each place the serial types may start, the header is read
    /// from the bytes that remain (the rowid's alias, always NULL, supplied when its byte was
    /// overwritten) and accepted when the lengths it implies fit what was overwritten. The record
    /// is whole when its body ends by `end` (and its overflow chain, freed with it, reads), else
    /// the part before `end` survives: SQLite gives a later cell the end of a free block it takes
    /// part of, and a cell at the edge of the unallocated space may be overwritten by the next
    /// one the page's content grows by. With the bytes the cell takes (up to `end` for one cut
    /// there). A whole reading is preferred to a partial one, a longer to a shorter.
    func rebuiltCell(
        _ page: [UInt8], at offset: Int, end: Int, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> Candidate? {
        var whole: Candidate?
        var partial: Candidate?
        for (index, table) in tables.enumerated() {
            guard table.columns.count >= 2 else { continue }
            var partialOfTable: Candidate?
            // Serial types start `k` bytes into the cell: after the payload length (1+ bytes),
            // the rowid (1+) and the header size (1+).
            for k in 3...12 {
                // When k < 4 the first serial type's byte was overwritten: it is the rowid alias's NULL.
                if k < 4 && table.rowidColumn != 0 { continue }
                guard
                    let (types, at) = serialTypes(
                        of: table, in: page, from: offset + max(k, 4), end: end, first: k < 4 ? [0] : []),
                    let body = RecordFormat.bodyLength(of: types),
                    let candidate = readBody(
                        table: index, types: types, typesStart: k, typesEnd: at, body: body, page, at: offset,
                        end: end, pageCount: pageCount, readPage: readPage)
                else { continue }
                if candidate.found.isPartial {
                    if partialOfTable == nil { partialOfTable = candidate }
                    continue
                }
                if whole == nil || candidate.length > whole!.length { whole = candidate }
                partialOfTable = nil
                break
            }
            if let partialOfTable, partial == nil || partialOfTable.found.payload.count > partial!.found.payload.count {
                partial = partialOfTable
            }
        }
        return whole ?? partial
    }

    /// The record whose serial types `types` were read from `offset + typesStart` to `typesEnd`:
    /// checked against the lengths that survive before them, its body read (whole, or the part
    /// before `end`).
    private func readBody(
        table index: Int, types: [Int64], typesStart k: Int, typesEnd at: Int, body: Int, _ page: [UInt8],
        at offset: Int, end: Int, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> Candidate? {
        let table = tables[index]
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
        guard rowidSize >= 1, rowidSize <= 9 else { return nil }
        // The bytes of the lengths that survived must read as what they were.
        let headerSizeAt = offset + k - headerSizeLength
        if headerSizeAt >= offset + 4 {
            guard let (value, length) = Varint.read(page, at: headerSizeAt, limit: end),
                value == Int64(headerSize), length == headerSizeLength
            else { return nil }
        }
        let rowidEnd = offset + lengthSize + rowidSize
        if rowidEnd - 1 >= offset + 4 {
            guard page[rowidEnd - 1] & 0x80 == 0 || rowidSize == 9 else { return nil }
            var i = max(offset + 4, offset + lengthSize)
            while i < rowidEnd - 1 {
                if page[i] & 0x80 == 0 { return nil }
                i += 1
            }
        }
        var payload = Varint.encode(Int64(headerSize))
        for type in types { payload += Varint.encode(type) }
        // The body: in the page, or its start here and the rest in an overflow chain (freed with
        // the cell; it must end exactly where the payload does). What runs past `end` is lost.
        let local = TableCell.localLength(of: payloadLength, usable: usableSize)
        let localBody = local - headerSize
        guard localBody >= 0, at <= end else { return nil }
        var cellEnd: Int
        if local == payloadLength && at + body <= end {
            payload += page[at..<(at + body)]
            cellEnd = at + body
        } else if local < payloadLength && at + localBody + 4 <= end,
            let overflow = overflowContent(
                page, at: at + localBody, count: payloadLength - local, pageCount: pageCount, readPage: readPage)
        {
            payload += page[at..<(at + localBody)]
            payload += overflow
            cellEnd = at + localBody + 4
        } else {
            let kept = min(end, at + localBody)
            payload += page[at..<kept]
            cellEnd = local < payloadLength ? min(end, at + localBody + 4) : kept
        }
        guard let kept = withoutZeroedEnd(payload), let record = SurvivingRecord(kept) else { return nil }
        payload = kept
        if record.isWhole {
            guard let values = RecordFormat.values(types, in: payload, at: headerSize, limit: payload.count),
                table.accepts(values: values, strict: true), plausible(record, index)
            else { return nil }
        } else if !table.accepts(partial: record, strict: true) || !plausible(record, index) {
            return nil
        }
        var rowid: Int64?
        if lengthSize >= 4, let (value, length) = Varint.read(page, at: offset + lengthSize, limit: end),
            length == rowidSize
        {
            rowid = value
        }
        return Candidate(
            found: Found(
                table: index, rowid: rowid, payload: payload, wholeLength: payloadLength, offset: offset,
                place: .freeBlock, rebuilt: true),
            length: cellEnd - offset, body: at)
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
