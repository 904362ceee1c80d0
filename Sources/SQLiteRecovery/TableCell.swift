/// A cell of a table b-tree leaf page: the payload's length, the row's key (rowid), the part of
/// the payload the page holds and, for payloads too large for a page, the chain of overflow
/// pages holding the rest.
public struct TableCell: Sendable {
    public var rowid: Int64
    /// The whole payload: the record's header and body (only the page's part of it when the
    /// overflow chain was lost and the cell was read ``read(_:at:limit:usable:pageCount:keepingLocalPart:readPage:)``
    /// keeping its local part).
    public var payload: [UInt8]
    /// The payload's length as the cell gives it (more than `payload.count` when the overflow
    /// chain was lost).
    public var wholeLength: Int
    /// The overflow pages read, in order.
    public var overflowPages: [UInt32]
    /// The bytes the cell takes in its page.
    public var length: Int

    /// The largest payload read (SQLite allows a gigabyte; a hostile length must not allocate it).
    public static let maximumPayload = 256 << 20

    /// How much of a payload of `payloadLength` bytes a table leaf page of usable size `usable`
    /// holds itself (SQLite's rule: all of it up to U-35 bytes, else a part chosen so that the
    /// rest fills whole overflow pages when it can).
    public static func localLength(of payloadLength: Int, usable: Int) -> Int {
        let maximum = usable - 35
        guard payloadLength > maximum else { return payloadLength }
        let minimum = (usable - 12) * 32 / 255 - 23
        let k = minimum + (payloadLength - minimum) % (usable - 4)
        return k <= maximum ? k : minimum
    }

    /// The cell at `offset` of `page`, its varints and local payload read no further than
    /// `limit`; the overflow chain read through `readPage`. Nil when the cell is not readable whole:
    /// lengths that do not fit, an overflow chain that loops, leaves the file (`pageCount`),
    /// ends early or goes on past the payload's end. `keepingLocalPart`: a cell whose overflow
    /// chain does not read (its pages were used again) is given with the part its page holds.
    public static func read(
        _ page: [UInt8], at offset: Int, limit: Int, usable: Int, pageCount: UInt32, keepingLocalPart: Bool = false,
        readPage: (UInt32) -> [UInt8]?
    ) -> TableCell? {
        guard let (length, lengthSize) = Varint.read(page, at: offset, limit: limit), length >= 0,
            length <= Int64(maximumPayload),
            let (rowid, rowidSize) = Varint.read(page, at: offset + lengthSize, limit: limit)
        else { return nil }
        let payloadLength = Int(length)
        let start = offset + lengthSize + rowidSize
        let local = localLength(of: payloadLength, usable: usable)
        let end = min(limit, page.count)
        guard start + local <= end else { return nil }
        var payload = Array(page[start..<(start + local)])
        var overflowPages: [UInt32] = []
        var cellLength = lengthSize + rowidSize + local
        if local < payloadLength {
            guard start + local + 4 <= end, let first = page.bigEndian(at: start + local, count: 4) else { return nil }
            cellLength += 4
            guard
                let (rest, pages) = overflow(
                    from: first, count: payloadLength - local, usable: usable, pageCount: pageCount, readPage: readPage)
            else {
                guard keepingLocalPart else { return nil }
                return TableCell(
                    rowid: rowid, payload: payload, wholeLength: payloadLength, overflowPages: [], length: cellLength)
            }
            payload += rest
            overflowPages = pages
        }
        return TableCell(
            rowid: rowid, payload: payload, wholeLength: payloadLength, overflowPages: overflowPages, length: cellLength
        )
    }

    /// `count` bytes of the overflow chain starting at page `first`, and its pages; nil when the
    /// chain loops, leaves the file (`pageCount`), ends early or goes on past the bytes wanted
    /// (the last page of a chain points nowhere).
    public static func overflow(
        from first: UInt32, count: Int, usable: Int, pageCount: UInt32, readPage: (UInt32) -> [UInt8]?
    ) -> ([UInt8], [UInt32])? {
        guard count > 0, count <= maximumPayload, usable > 4 else { return nil }
        var content: [UInt8] = []
        content.reserveCapacity(count)
        var pages: [UInt32] = []
        var next = first
        var seen = Set<UInt32>()
        while content.count < count {
            guard next >= 1, next <= pageCount, seen.insert(next).inserted, let page = readPage(next),
                page.count >= usable, let following = page.bigEndian(at: 0, count: 4)
            else { return nil }
            let take = min(usable - 4, count - content.count)
            content += page[4..<(4 + take)]
            pages.append(next)
            next = following
        }
        return next == 0 ? (content, pages) : nil
    }
}
