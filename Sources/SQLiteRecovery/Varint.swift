/// SQLite's variable-length integers: one to nine bytes, big-endian, seven bits a byte with the
/// high bit saying another byte follows, and all eight bits of a ninth.
public enum Varint {
    /// The integer at `index` of `bytes`, read no further than `limit` (and the end of `bytes`),
    /// and how many bytes it took; nil when it does not end before the limit.
    @inline(__always)
    public static func read(_ bytes: [UInt8], at index: Int, limit: Int) -> (value: Int64, length: Int)? {
        let end = min(limit, bytes.count)
        guard index >= 0, index < end else { return nil }
        var value: UInt64 = 0
        var i = index
        while i < end {
            let byte = bytes[i]
            if i - index == 8 {
                value = (value << 8) | UInt64(byte)
                return (Int64(bitPattern: value), 9)
            }
            value = (value << 7) | UInt64(byte & 0x7F)
            i += 1
            if byte & 0x80 == 0 { return (Int64(bitPattern: value), i - index) }
        }
        return nil
    }

    /// How many bytes `value` takes.
    public static func length(of value: Int64) -> Int {
        let v = UInt64(bitPattern: value)
        if v >> 56 != 0 { return 9 }
        var length = 1
        var rest = v >> 7
        while rest != 0 {
            length += 1
            rest >>= 7
        }
        return length
    }

    /// `value` in SQLite's encoding.
    public static func encode(_ value: Int64) -> [UInt8] {
        let v = UInt64(bitPattern: value)
        if v >> 56 != 0 {
            var bytes = [UInt8](repeating: 0, count: 9)
            bytes[8] = UInt8(truncatingIfNeeded: v)
            var rest = v >> 8
            for i in stride(from: 7, through: 0, by: -1) {
                bytes[i] = UInt8(truncatingIfNeeded: rest & 0x7F) | 0x80
                rest >>= 7
            }
            return bytes
        }
        var bytes: [UInt8] = [UInt8(truncatingIfNeeded: v & 0x7F)]
        var rest = v >> 7
        while rest != 0 {
            bytes.insert(UInt8(truncatingIfNeeded: rest & 0x7F) | 0x80, at: 0)
            rest >>= 7
        }
        return bytes
    }
}

extension [UInt8] {
    /// The big-endian unsigned integer of `count` (1–4) bytes at `index`; nil past the end.
    @inline(__always)
    func bigEndian(at index: Int, count: Int) -> UInt32? {
        guard index >= 0, count >= 1, count <= 4, index <= self.count - count else { return nil }
        var value: UInt32 = 0
        for i in index..<(index + count) { value = (value << 8) | UInt32(self[i]) }
        return value
    }
}
