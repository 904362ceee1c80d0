/// One page read as a b-tree page: its header, its cell pointers, the chain of free blocks and
/// the unallocated gap between the pointers and the cell content.
///
/// Every number comes from the page and is checked where it is read: a cell count whose pointers
/// would not fit, a pointer outside the content area, a free block chain that goes backwards,
/// overlaps, loops or leaves the page, all end what is read there (a page that lies gives fewer
/// cells, never a trap or a loop).
public struct BTreePage: Sendable {
    public enum Kind: UInt8, Sendable {
        case indexInterior = 2, tableInterior = 5, indexLeaf = 10, tableLeaf = 13
    }

    public let kind: Kind
    /// Where the b-tree header starts: 100 on page 1 (after the database header), else 0.
    public let headerOffset: Int
    public let firstFreeBlock: Int
    public let cellContentStart: Int
    public let fragmentedBytes: Int
    /// Interior pages: the right-most child.
    public let rightChild: UInt32?
    /// The cell pointers that point inside the content area, in order.
    public let cellPointers: [Int]
    /// Where the cell pointer array ends.
    public let pointerArrayEnd: Int
    public let usableSize: Int

    /// Reads `page` (a whole page) as a b-tree page; nil when its first byte names no kind of
    /// page or its header does not fit.
    public init?(_ page: [UInt8], isFirstPage: Bool, usableSize: Int) {
        let base = isFirstPage ? 100 : 0
        let usable = min(usableSize, page.count)
        guard usable >= 480, base + 8 <= usable, let kind = Kind(rawValue: page[base]) else { return nil }
        let headerLength = kind == .tableLeaf || kind == .indexLeaf ? 8 : 12
        guard base + headerLength <= usable, let freeBlock = page.bigEndian(at: base + 1, count: 2),
            let cells = page.bigEndian(at: base + 3, count: 2), let start = page.bigEndian(at: base + 5, count: 2)
        else { return nil }
        self.kind = kind
        headerOffset = base
        firstFreeBlock = Int(freeBlock)
        cellContentStart = start == 0 ? 65536 : Int(start)
        fragmentedBytes = Int(page[base + 7])
        rightChild = headerLength == 12 ? page.bigEndian(at: base + 8, count: 4) : nil
        self.usableSize = usable
        let arrayStart = base + headerLength
        // Pointers that would run past the content area (or the page) are not pointers.
        let fitting = max(0, min(Int(cells), (min(cellContentStart, usable) - arrayStart) / 2))
        pointerArrayEnd = arrayStart + 2 * fitting
        var pointers: [Int] = []
        pointers.reserveCapacity(fitting)
        for i in 0..<fitting {
            guard let pointer = page.bigEndian(at: arrayStart + 2 * i, count: 2) else { break }
            let p = Int(pointer)
            if p >= pointerArrayEnd && p < usable { pointers.append(p) }
        }
        cellPointers = pointers
    }

    /// The free blocks, in the chain's order: each (offset, size) inside the page, after the
    /// pointer array, ascending and not overlapping; the chain stops at the first that is not.
    public func freeBlocks(in page: [UInt8]) -> [(offset: Int, size: Int)] {
        var result: [(offset: Int, size: Int)] = []
        var offset = firstFreeBlock
        var lowest = pointerArrayEnd
        // Each block takes at least 4 bytes: no honest chain is longer.
        while offset != 0, result.count < usableSize / 4 {
            guard offset >= lowest, offset + 4 <= usableSize, let next = page.bigEndian(at: offset, count: 2),
                let size = page.bigEndian(at: offset + 2, count: 2), size >= 4, offset + Int(size) <= usableSize
            else { break }
            result.append((offset, Int(size)))
            lowest = offset + Int(size)
            offset = Int(next)
        }
        return result
    }

    /// The gap between the cell pointer array and the cell content area.
    public var unallocated: Range<Int> {
        let end = min(cellContentStart, usableSize)
        return pointerArrayEnd < end ? pointerArrayEnd..<end : pointerArrayEnd..<pointerArrayEnd
    }

    /// For interior table pages: the children, left to right (the cells' left pointers, then the
    /// right-most child).
    public func children(in page: [UInt8]) -> [UInt32] {
        guard kind == .tableInterior || kind == .indexInterior else { return [] }
        var result: [UInt32] = []
        for pointer in cellPointers {
            if let child = page.bigEndian(at: pointer, count: 4) { result.append(child) }
        }
        if let rightChild { result.append(rightChild) }
        return result
    }
}
