import Foundation

/// Decompresses a raw DEFLATE stream (RFC 1951, no zlib or gzip wrapper): how Core Data keeps the
/// compiled model in a store's `Z_MODELCACHE.Z_CONTENT`, and what ``Inflater`` finds inside gzip
/// and zlib wrappers.
///
/// Written from the RFC rather than linked from zlib so that the package needs no extra system
/// library, and so that untrusted input is bounded in one place: the output may not grow past
/// `limit`, every code and distance is checked, and a stream that ends early is an error.
/// Stateless; safe from any thread.
public enum RawInflate {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The decompressed bytes of `data`, at most `limit` of them. Bytes after the stream's last
    /// block are ignored.
    public static func inflate(_ data: Data, limit: Int) throws(Failure) -> Data {
        Data(try inflate([UInt8](data), from: 0, limit: limit).output)
    }

    /// The decompressed bytes of the stream that starts at `start` in `bytes`, at most `limit` of
    /// them, and where it ends: the index after its last byte (a wrapper's trailer starts there).
    public static func inflate(_ bytes: [UInt8], from start: Int, limit: Int) throws(Failure) -> (
        output: [UInt8], end: Int
    ) {
        guard start >= 0, start <= bytes.count else { throw Failure(description: "the stream starts past the data") }
        var state = State(input: bytes, position: start, limit: limit)
        try state.run()
        // Bits left in the buffer belong to the last byte read: it is part of the stream.
        return (state.output, state.position)
    }

    private static let lengthBase: [Int] = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227,
        258
    ]
    private static let lengthExtra: [Int] = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0
    ]
    private static let distanceBase: [Int] = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
        6145, 8193, 12289, 16385, 24577
    ]
    private static let distanceExtra: [Int] = [
        0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13
    ]
    /// The order in which a dynamic block lists the code lengths of the code-length alphabet.
    private static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    /// A canonical Huffman code: how many codes each length has, and the symbols in code order.
    private struct Huffman {
        var counts = [Int](repeating: 0, count: 16)
        var symbols: [Int] = []

        /// A code with no symbols: decoding with it fails.
        init() {}

        /// Builds the code from each symbol's length (0: unused). Over-subscribed sets are refused;
        /// incomplete ones are allowed (a single distance code is legal) and fail only if a
        /// missing code is met.
        init(lengths: [Int]) throws(Failure) {
            for length in lengths {
                guard (0...15).contains(length) else { throw Failure(description: "a code length of \(length)") }
                counts[length] += 1
            }
            var left = 1
            for length in 1...15 {
                left = left * 2 - counts[length]
                guard left >= 0 else { throw Failure(description: "over-subscribed Huffman code") }
            }
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            symbols = [Int](repeating: 0, count: lengths.count)
            for (symbol, length) in lengths.enumerated() where length != 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
            }
            counts[0] = 0
        }
    }

    private struct State {
        let input: [UInt8]
        let limit: Int
        var output: [UInt8] = []
        var position = 0
        var bitBuffer = 0
        var bitCount = 0

        init(input: [UInt8], position: Int, limit: Int) {
            self.input = input
            self.position = position
            self.limit = limit
        }

        mutating func bits(_ count: Int) throws(Failure) -> Int {
            var value = bitBuffer
            while bitCount < count {
                guard position < input.count else {
                    throw Failure(description: "the stream ends in the middle of a block")
                }
                value |= Int(input[position]) << bitCount
                position += 1
                bitCount += 8
            }
            bitBuffer = value >> count
            bitCount -= count
            return value & ((1 << count) - 1)
        }

        mutating func run() throws(Failure) {
            var last = false
            while !last {
                last = try bits(1) == 1
                switch try bits(2) {
                case 0: try stored()
                case 1: try codes(literals: RawInflate.fixedLiterals, distances: RawInflate.fixedDistances)
                case 2:
                    let (literals, distances) = try dynamicCodes()
                    try codes(literals: literals, distances: distances)
                default: throw Failure(description: "a block of the reserved type 3")
                }
            }
        }

        mutating func stored() throws(Failure) {
            bitBuffer = 0
            bitCount = 0
            guard position + 4 <= input.count else { throw Failure(description: "a stored block's header is cut off") }
            let length = Int(input[position]) | Int(input[position + 1]) << 8
            let complement = Int(input[position + 2]) | Int(input[position + 3]) << 8
            position += 4
            guard length == ~complement & 0xFFFF else {
                throw Failure(description: "a stored block's length check fails")
            }
            guard position + length <= input.count else { throw Failure(description: "a stored block is cut off") }
            try reserve(length)
            output += input[position..<(position + length)]
            position += length
        }

        mutating func reserve(_ count: Int) throws(Failure) {
            guard count <= limit - output.count else {
                throw Failure(description: "the data inflates to more than \(limit) bytes")
            }
        }

        mutating func decode(_ code: Huffman) throws(Failure) -> Int {
            var value = 0
            var first = 0
            var index = 0
            for length in 1...15 {
                value |= try bits(1)
                let count = code.counts[length]
                if value - first < count { return code.symbols[index + value - first] }
                index += count
                first = (first + count) << 1
                value <<= 1
            }
            throw Failure(description: "a Huffman code that the block's table does not have")
        }

        mutating func codes(literals: Huffman, distances: Huffman) throws(Failure) {
            while true {
                let symbol = try decode(literals)
                if symbol < 256 {
                    try reserve(1)
                    output.append(UInt8(symbol))
                    continue
                }
                if symbol == 256 { return }
                let index = symbol - 257
                guard index < RawInflate.lengthBase.count else { throw Failure(description: "length code \(symbol)") }
                let length = RawInflate.lengthBase[index] + (try bits(RawInflate.lengthExtra[index]))
                let distanceSymbol = try decode(distances)
                guard distanceSymbol < RawInflate.distanceBase.count else {
                    throw Failure(description: "distance code \(distanceSymbol)")
                }
                let distance =
                    RawInflate.distanceBase[distanceSymbol] + (try bits(RawInflate.distanceExtra[distanceSymbol]))
                guard distance <= output.count else {
                    throw Failure(description: "a back reference \(distance) bytes back, before the start of the data")
                }
                try reserve(length)
                let start = output.count - distance
                for i in 0..<length { output.append(output[start + i]) }
            }
        }

        mutating func dynamicCodes() throws(Failure) -> (Huffman, Huffman) {
            let literalCount = try bits(5) + 257
            let distanceCount = try bits(5) + 1
            let lengthCodeCount = try bits(4) + 4
            guard literalCount <= 286, distanceCount <= 30 else {
                throw Failure(
                    description: "a dynamic block with \(literalCount) literal and \(distanceCount) distance codes")
            }
            var codeLengths = [Int](repeating: 0, count: 19)
            for i in 0..<lengthCodeCount { codeLengths[RawInflate.codeLengthOrder[i]] = try bits(3) }
            let lengthCode = try Huffman(lengths: codeLengths)
            var lengths: [Int] = []
            let total = literalCount + distanceCount
            while lengths.count < total {
                let symbol = try decode(lengthCode)
                switch symbol {
                case 0...15:
                    lengths.append(symbol)
                case 16:
                    guard let previous = lengths.last else {
                        throw Failure(description: "a repeat with nothing to repeat")
                    }
                    lengths += repeatElement(previous, count: 3 + (try bits(2)))
                case 17:
                    lengths += repeatElement(0, count: 3 + (try bits(3)))
                default:
                    lengths += repeatElement(0, count: 11 + (try bits(7)))
                }
                guard lengths.count <= total else { throw Failure(description: "code lengths run past their table") }
            }
            guard lengths[256] != 0 else { throw Failure(description: "a block without an end-of-block code") }
            return (
                try Huffman(lengths: Array(lengths[0..<literalCount])),
                try Huffman(lengths: Array(lengths[literalCount...]))
            )
        }
    }

    /// The fixed codes of RFC 1951 section 3.2.6 (valid by construction; an empty code would only
    /// make decoding fail).
    private static let fixedLiterals: Huffman = {
        var lengths = [Int](repeating: 8, count: 288)
        for i in 144..<256 { lengths[i] = 9 }
        for i in 256..<280 { lengths[i] = 7 }
        return (try? Huffman(lengths: lengths)) ?? Huffman()
    }()

    private static let fixedDistances: Huffman = (try? Huffman(lengths: [Int](repeating: 5, count: 30))) ?? Huffman()
}
