/// The Adler-32 checksum of a zlib stream's trailer (RFC 1950 section 8.2).
///
/// Stateless; safe from any thread.
enum Adler32 {
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        // 5552 bytes is the most that can be summed before the 32-bit sums must be reduced.
        var a: UInt32 = 1
        var b: UInt32 = 0
        var index = 0
        while index < bytes.count {
            let end = min(index + 5552, bytes.count)
            while index < end {
                a &+= UInt32(bytes[index])
                b &+= a
                index += 1
            }
            a %= 65521
            b %= 65521
        }
        return b << 16 | a
    }
}
