/// A record read from bytes that may stop before its end: a deleted cell whose tail a later cell,
/// a free block's reuse or a page's new header overwrote. The header (every column's serial type)
/// must be whole; a column survives when all its bytes come before the cut, or when its serial
/// type alone holds its value (NULL, 0, 1). Since a record's body holds the values in column
/// order, the columns that survive are a prefix of the columns (``intactColumns``) and, after it,
/// those whose type holds their value.
///
/// What a partial record can be compared on is exactly what survived: ``agrees(with:)`` says
/// whether another record (whole or partial) has the same value in every column this one kept,
/// and ``prefixDigest(_:)`` lets a pass over many records find those candidates without
/// comparing each pair.
///
/// Threading: a value; safe from any thread.
public struct SurvivingRecord: Sendable {
    public let types: [Int64]
    public let headerLength: Int
    /// Header and body as far as they survive.
    public let payload: [UInt8]
    /// Where each column's bytes start in ``payload``.
    private let starts: [Int]
    /// How many leading columns survive whole.
    public let intactColumns: Int

    /// Reads `payload` (a record's header and as much of its body as survived); nil when the
    /// header is not whole or does not read.
    public init?(_ payload: [UInt8]) {
        guard let (types, headerLength) = RecordFormat.header(payload, at: 0, limit: payload.count) else { return nil }
        self.init(types: types, headerLength: headerLength, payload: payload)
    }

    private init(types: [Int64], headerLength: Int, payload: [UInt8]) {
        self.types = types
        self.headerLength = headerLength
        self.payload = payload
        var starts: [Int] = []
        starts.reserveCapacity(types.count)
        // Types come from a header that read: each names a size of at most 2^31 bytes.
        var at = headerLength
        var intact = types.count
        for (i, type) in types.enumerated() {
            starts.append(at)
            let size = RecordFormat.contentSize(of: type) ?? 0
            if intact == types.count && size > payload.count - at { intact = i }
            at += size
        }
        self.starts = starts
        intactColumns = intact
    }

    /// Whether every column survived.
    public var isWhole: Bool { intactColumns == types.count }

    /// Whether column `index`'s value survived.
    public func survives(_ index: Int) -> Bool {
        guard index >= 0, index < types.count else { return false }
        return index < intactColumns || RecordFormat.contentSize(of: types[index]) == 0
    }

    /// Column `index`'s value; nil when it did not survive (or there is no such column).
    public func value(_ index: Int) -> RecordValue? {
        guard survives(index) else { return nil }
        switch types[index] {
        case 0: return .null
        case 8: return .integer(0)
        case 9: return .integer(1)
        default:
            let size = RecordFormat.contentSize(of: types[index]) ?? 0
            return RecordFormat.values([types[index]], in: payload, at: starts[index], limit: starts[index] + size)?
                .first
        }
    }

    /// Where column `index`'s bytes are in ``payload``, when they survived.
    public func range(of index: Int) -> Range<Int>? {
        guard index >= 0, index < intactColumns, let size = RecordFormat.contentSize(of: types[index]) else {
            return nil
        }
        return starts[index]..<(starts[index] + size)
    }

    /// Whether a text or blob of at least one byte survived.
    public var keepsTextOrBlob: Bool {
        types.prefix(intactColumns).contains { $0 >= 14 }
    }

    /// Every column's value, nil for those that did not survive.
    public var values: [RecordValue?] { types.indices.map(value) }

    /// Whether `other` holds this record's value in every column that survived here (and has at
    /// least as many columns): this record cannot be told apart from it.
    public func agrees(with other: SurvivingRecord) -> Bool {
        guard other.types.count >= types.count else { return false }
        for index in types.indices where survives(index) {
            guard other.survives(index), other.types[index] == types[index] else { return false }
            let size = RecordFormat.contentSize(of: types[index]) ?? 0
            if size > 0,
                payload[starts[index]..<(starts[index] + size)]
                    != other.payload[other.starts[index]..<(other.starts[index] + size)]
            {
                return false
            }
        }
        return true
    }

    /// A digest of the serial types and bytes of the first `count` columns, for each `count` of
    /// `counts` this record holds whole: two records with the same first columns give the same
    /// digest for that count (in one process). One pass over the record.
    public func prefixDigests(_ counts: Set<Int>) -> [(count: Int, digest: Int)] {
        var result: [(count: Int, digest: Int)] = []
        guard !counts.isEmpty else { return result }
        var hasher = Hasher()
        if counts.contains(0) {
            var copy = hasher
            copy.combine(0)
            result.append((0, copy.finalize()))
        }
        for index in 0..<intactColumns {
            let size = RecordFormat.contentSize(of: types[index]) ?? 0
            hasher.combine(types[index])
            payload.withUnsafeBytes { bytes in
                hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes[starts[index]..<(starts[index] + size)]))
            }
            if counts.contains(index + 1) {
                var copy = hasher
                copy.combine(index + 1)
                result.append((index + 1, copy.finalize()))
            }
        }
        return result
    }

    /// The digest of the first ``intactColumns`` columns, as ``prefixDigests(_:)`` gives it.
    public var prefixDigest: Int { prefixDigests([intactColumns]).first?.digest ?? 0 }
}
