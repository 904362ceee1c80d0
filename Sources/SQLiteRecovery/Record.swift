/// One value of an SQLite record, as its serial type stores it.
public enum RecordValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    /// Text in the database's encoding (UTF-8 for Core Data's stores), as stored.
    case text([UInt8])
    case blob([UInt8])
}

/// SQLite's record format: a header (its own length, then one serial type per column) and a body
/// of the values in order. Nothing read is trusted: a serial type that names no value, a header
/// longer than the record, a body that runs past the bytes, all make the record unreadable.
public enum RecordFormat {
    /// The most columns a record read here may have (SQLite's own limit is 32,767; Core Data's
    /// widest tables have a few hundred).
    public static let maximumColumns = 2000

    /// The bytes a value of serial type `type` takes in the body; nil for the reserved types 10
    /// and 11 and for negative ones.
    @inline(__always)
    public static func contentSize(of type: Int64) -> Int? {
        switch type {
        case 0, 8, 9: return 0
        case 1: return 1
        case 2: return 2
        case 3: return 3
        case 4: return 4
        case 5: return 6
        case 6, 7: return 8
        case 10, 11: return nil
        default:
            guard type >= 12, type <= Int64(Int32.max) * 2 + 13 else { return nil }
            return Int((type - 12) / 2)
        }
    }

    /// Whether serial type `type` holds an integer (or a constant 0 or 1).
    @inline(__always)
    public static func isInteger(_ type: Int64) -> Bool { (type >= 1 && type <= 6) || type == 8 || type == 9 }

    /// The serial types of the header at `index` of `bytes` (its length varint first), read no
    /// further than `limit`, with the header's length; nil when it is not a readable header of at
    /// most `maximumColumns` columns.
    public static func header(_ bytes: [UInt8], at index: Int, limit: Int) -> (types: [Int64], length: Int)? {
        guard let (size, sizeLength) = Varint.read(bytes, at: index, limit: limit), size >= Int64(sizeLength),
            size <= Int64(maximumColumns) * 9 + 9, index + Int(size) <= min(limit, bytes.count)
        else { return nil }
        let end = index + Int(size)
        var types: [Int64] = []
        var i = index + sizeLength
        while i < end {
            guard let (type, length) = Varint.read(bytes, at: i, limit: end), contentSize(of: type) != nil else {
                return nil
            }
            types.append(type)
            i += length
        }
        guard i == end, types.count <= maximumColumns else { return nil }
        return (types, Int(size))
    }

    /// The length of the body of a record whose columns have `types`; nil when it overflows.
    public static func bodyLength(of types: [Int64]) -> Int? {
        var total = 0
        for type in types {
            guard let size = contentSize(of: type) else { return nil }
            total += size
            guard total <= Int(Int32.max) else { return nil }
        }
        return total
    }

    /// The values of columns of `types` from `index` of `bytes`, read no further than `limit`;
    /// nil when the body does not fit.
    public static func values(_ types: [Int64], in bytes: [UInt8], at index: Int, limit: Int) -> [RecordValue]? {
        let end = min(limit, bytes.count)
        var values: [RecordValue] = []
        values.reserveCapacity(types.count)
        var i = index
        for type in types {
            guard let size = contentSize(of: type), i >= 0, i <= end - size else { return nil }
            values.append(value(of: type, bytes, at: i, size: size))
            i += size
        }
        return values
    }

    @inline(__always)
    private static func value(of type: Int64, _ bytes: [UInt8], at i: Int, size: Int) -> RecordValue {
        switch type {
        case 0: return .null
        case 8: return .integer(0)
        case 9: return .integer(1)
        case 1...6:
            var v: UInt64 = 0
            for k in i..<(i + size) { v = (v << 8) | UInt64(bytes[k]) }
            // Sign-extend from `size` bytes.
            let shift = UInt64(64 - size * 8)
            return .integer(Int64(bitPattern: v << shift) >> Int64(shift))
        case 7:
            var v: UInt64 = 0
            for k in i..<(i + 8) { v = (v << 8) | UInt64(bytes[k]) }
            return .real(Double(bitPattern: v))
        default:
            let content = Array(bytes[i..<(i + size)])
            return type % 2 == 0 ? .blob(content) : .text(content)
        }
    }

    /// The serial type SQLite writes for `value`.
    public static func serialType(of value: RecordValue) -> Int64 {
        switch value {
        case .null: return 0
        case .integer(let v):
            if v == 0 { return 8 }
            if v == 1 { return 9 }
            if v >= -128 && v <= 127 { return 1 }
            if v >= -32768 && v <= 32767 { return 2 }
            if v >= -8_388_608 && v <= 8_388_607 { return 3 }
            if v >= -2_147_483_648 && v <= 2_147_483_647 { return 4 }
            if v >= -140_737_488_355_328 && v <= 140_737_488_355_327 { return 5 }
            return 6
        case .real: return 7
        case .text(let bytes): return Int64(bytes.count) * 2 + 13
        case .blob(let bytes): return Int64(bytes.count) * 2 + 12
        }
    }

    /// A record of `values` in SQLite's format (header and body): what tests write into pages.
    public static func encode(_ values: [RecordValue]) -> [UInt8] {
        let types = values.map(serialType(of:))
        var typeBytes: [UInt8] = []
        for type in types { typeBytes += Varint.encode(type) }
        var headerLength = typeBytes.count + 1
        if Varint.length(of: Int64(headerLength)) > 1 {
            headerLength = typeBytes.count + Varint.length(of: Int64(headerLength + 1))
        }
        var record = Varint.encode(Int64(headerLength)) + typeBytes
        for (value, type) in zip(values, types) {
            switch value {
            case .null: break
            case .integer(let v):
                let size = contentSize(of: type) ?? 0
                for k in stride(from: size - 1, through: 0, by: -1) {
                    record.append(UInt8(truncatingIfNeeded: v >> (8 * k)))
                }
            case .real(let d):
                let bits = d.bitPattern
                for k in stride(from: 7, through: 0, by: -1) {
                    record.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(k))))
                }
            case .text(let bytes), .blob(let bytes):
                record += bytes
            }
        }
        return record
    }
}
