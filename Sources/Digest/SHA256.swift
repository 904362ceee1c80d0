import Foundation

/// A small SHA-256 (FIPS 180-4): the digest of Core Data's entity version hashes and of the
/// version checksum in store metadata, and the hashes of the files a read-only open reads
/// (ObjectGraph's `InputFile`), which forensic users compare with `sha256sum`.
///
/// Foundation on Linux has no digest API and the package takes no crypto dependency for this;
/// the version hashes are not security relevant, and the file hashes record what was read.
/// Stateless; safe from any thread (a ``Hasher`` is a value, one per file).
package enum SHA256 {
    fileprivate static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
    ]

    /// The 32-byte digest of `message`.
    package static func hash(_ message: Data) -> Data {
        var hasher = Hasher()
        message.withUnsafeBytes { hasher.update($0) }
        return hasher.finalize()
    }

    /// An incremental SHA-256: bytes in pieces of any size, then the digest. A file is hashed as
    /// it is read, in chunks, never whole in memory.
    package struct Hasher: Sendable {
        private var h: [UInt32] = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
        ]
        /// Bytes of an unfinished block, waiting for the rest of it.
        private var pending: [UInt8] = []
        private var length: UInt64 = 0

        package init() { pending.reserveCapacity(64) }

        package mutating func update(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            length &+= UInt64(bytes.count)
            var offset = 0
            if !pending.isEmpty {
                let take = min(64 - pending.count, bytes.count)
                pending.append(contentsOf: UnsafeRawBufferPointer(start: base, count: take))
                offset = take
                guard pending.count == 64 else { return }
                let block = pending
                block.withUnsafeBytes { compress($0.baseAddress!, blocks: 1) }
                pending.removeAll(keepingCapacity: true)
            }
            let whole = (bytes.count - offset) / 64
            if whole > 0 {
                compress(base + offset, blocks: whole)
                offset += whole * 64
            }
            if offset < bytes.count {
                pending.append(contentsOf: UnsafeRawBufferPointer(start: base + offset, count: bytes.count - offset))
            }
        }

        package mutating func update(_ data: Data) { data.withUnsafeBytes { update($0) } }

        /// The 32-byte digest of everything given.
        package mutating func finalize() -> Data {
            let bitLength = length &* 8
            var tail = pending
            tail.append(0x80)
            while tail.count % 64 != 56 { tail.append(0) }
            for shift in stride(from: 56, through: 0, by: -8) {
                tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
            }
            tail.withUnsafeBytes { compress($0.baseAddress!, blocks: $0.count / 64) }
            pending.removeAll()
            var digest = Data(capacity: 32)
            for word in h {
                for shift in stride(from: 24, through: 0, by: -8) {
                    digest.append(UInt8(truncatingIfNeeded: word >> UInt32(shift)))
                }
            }
            return digest
        }

        /// The digest as 64 lower-case hexadecimal digits, as `sha256sum` prints it.
        package mutating func finalizeHex() -> String {
            finalize().map { String(format: "%02x", $0) }.joined()
        }

        private mutating func compress(_ input: UnsafeRawPointer, blocks: Int) {
            h.withUnsafeMutableBufferPointer { state in
                withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                    SHA256.k.withUnsafeBufferPointer { k in
                        SHA256.compress(state.baseAddress!, input, blocks: blocks, w.baseAddress!, k.baseAddress!)
                    }
                }
            }
        }
    }

    /// The compression function over `blocks` 64-byte blocks at `input`.
    private static func compress(
        _ h: UnsafeMutablePointer<UInt32>, _ input: UnsafeRawPointer, blocks: Int, _ w: UnsafeMutablePointer<UInt32>,
        _ k: UnsafePointer<UInt32>
    ) {
        var (h0, h1, h2, h3, h4, h5, h6, h7) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
        for block in 0..<blocks {
            let p = input + block * 64
            for i in 0..<16 {
                w[i] = UInt32(bigEndian: p.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
            }
            for i in 16..<64 {
                let x = w[i - 15]
                let y = w[i - 2]
                let s0 = x.rotatedRight(7) ^ x.rotatedRight(18) ^ (x >> 3)
                let s1 = y.rotatedRight(17) ^ y.rotatedRight(19) ^ (y >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, hh) = (h0, h1, h2, h3, h4, h5, h6, h7)
            for i in 0..<64 {
                let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                let ch = (e & f) ^ (~e & g)
                let t1 = hh &+ s1 &+ ch &+ k[i] &+ w[i]
                let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                let maj = (a & b) ^ (a & c) ^ (b & c)
                let t2 = s0 &+ maj
                (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
            }
            h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d
            h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= hh
        }
        h[0] = h0; h[1] = h1; h[2] = h2; h[3] = h3
        h[4] = h4; h[5] = h5; h[6] = h6; h[7] = h7
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotatedRight(_ n: UInt32) -> UInt32 { (self >> n) | (self << (32 - n)) }
}
