import Decoding
import Foundation
import ObjectGraph
import TestSupport
import Testing

/// gzip, zlib and raw DEFLATE as other programs write them inflate to exactly what went in; what
/// is damaged, cut off or not compressed at all does not.
@Suite struct InflaterTests {
    /// Bytes written by Python's zlib and gzip modules (zlib itself, an independent writer), as
    /// `[format: base64]`, for `content` at `level`.
    static func compressed(_ content: Data, level: Int) throws -> [String: Data] {
        let script = """
            import base64, gzip, sys, zlib
            data = sys.stdin.buffer.read()
            raw = zlib.compressobj(\(level), zlib.DEFLATED, -15)
            print("gzip", base64.b64encode(gzip.compress(data, \(level))).decode())
            print("zlib", base64.b64encode(zlib.compress(data, \(level))).decode())
            print("deflate", base64.b64encode(raw.compress(data) + raw.flush()).decode())
            """
        let result = try runTool("timeout", ["60", "python3", "-c", script], input: content)
        try #require(result.status == 0, "python3: \(result.error)")
        var found: [String: Data] = [:]
        for line in result.output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let bytes = Data(base64Encoded: String(parts[1])) { found[String(parts[0])] = bytes }
        }
        return found
    }

    /// Text, repeats and bytes of every value: literals, matches near and far, all three block types.
    static let content: Data = {
        var bytes = Array("This note has special formatting\n\nThis is a checklist with 3 items\n".utf8)
        for i in 0..<40_000 { bytes.append(UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13)) }
        bytes += Array(repeating: UInt8(ascii: "a"), count: 5000)
        return Data(bytes)
    }()

    @Test(arguments: [0, 1, 6, 9])
    func everyFormatInflatesToWhatWentIn(level: Int) throws {
        let streams = try Self.compressed(Self.content, level: level)
        try #require(streams.count == 3)
        for (name, stream) in streams {
            let inflated = try #require(Inflater.inflate(stream), "\(name) at level \(level)")
            #expect(inflated.format.rawValue == name)
            #expect(inflated.bytes == Self.content, "\(name) at level \(level)")
        }
    }

    /// `gzip` itself: a file name and several members (`cat a.gz b.gz`), joined as `gzip -d` joins them.
    @Test func gzipMembersWithANameAreJoined() throws {
        let scratch = try ScratchSpace.folder("inflate")
        let first = scratch.appendingPathComponent("first.txt")
        let second = scratch.appendingPathComponent("second.txt")
        try Data("first member\n".utf8).write(to: first)
        try Data(repeating: 7, count: 70_000).write(to: second)
        for file in [first, second] {
            let gzip = try runTool("timeout", ["60", "gzip", "-9", file.path])
            try #require(gzip.status == 0, "gzip: \(gzip.error)")
        }
        let joined =
            try Data(contentsOf: URL(fileURLWithPath: first.path + ".gz"))
            + Data(contentsOf: URL(fileURLWithPath: second.path + ".gz"))
        #expect(joined[3] & 0x08 != 0, "gzip wrote the file name")
        #expect(Inflater.inflate(joined)?.bytes == Data("first member\n".utf8) + Data(repeating: 7, count: 70_000))
        #expect(
            Inflater.inflate(joined + Data(count: 512))?.bytes.count == 13 + 70_000,
            "zero padding after the last member")
        #expect(Inflater.inflate(joined + Data("x".utf8)) == nil, "anything else after it")
    }

    /// A checksum, a length or a cut that does not fit means the bytes are not that format.
    @Test func damagedOrCutStreamsDoNotInflate() throws {
        let streams = try Self.compressed(Self.content, level: 6)
        let gzip = try #require(streams["gzip"]), zlib = try #require(streams["zlib"]),
            raw = try #require(streams["deflate"])
        for (name, stream) in [("gzip", gzip), ("zlib", zlib), ("deflate", raw)] {
            for cut in [1, 2, 5, 9, stream.count / 2, stream.count - 1] {
                #expect(Inflater.inflate(stream.prefix(cut)) == nil, "\(name) cut to \(cut) bytes")
            }
        }
        var badCRC = gzip
        badCRC[badCRC.count - 6] ^= 1
        #expect(Inflater.inflate(badCRC) == nil, "CRC-32")
        var badLength = gzip
        badLength[badLength.count - 1] ^= 1
        #expect(Inflater.inflate(badLength) == nil, "ISIZE")
        var badAdler = zlib
        badAdler[badAdler.count - 1] ^= 1
        #expect(Inflater.inflate(badAdler) == nil, "Adler-32")
        #expect(Inflater.inflate(raw + Data([0])) == nil, "a raw stream must end at the last byte")
        #expect(Inflater.inflate(zlib + Data([0])) == nil, "nothing after a zlib stream")
    }

    /// Core Data's own raw DEFLATE: the compiled model of every corpus store that caches one
    /// inflates, to a binary property list (the keyed archive of the model). Not the DataUsage
    /// store's, whose cache ends in a zeroed page (docs/MODELS.md): a stream cut short is refused.
    @Test func coreDataModelCachesInflateAsRawDeflate() throws {
        var found = 0
        for name in Corpus.names(
            in: "sqlite",
            matching: { ($0.hasSuffix(".sqlite") || $0.hasSuffix(".store")) && !$0.contains("mvt_DataUsage") })
        {
            let hex = try runTool(
                "timeout",
                [
                    "60", "sqlite3", "-readonly", "file:" + Corpus.url("sqlite/\(name)").path + "?immutable=1",
                    "SELECT hex(Z_CONTENT) FROM Z_MODELCACHE"
                ])
            guard hex.status == 0,
                let blob = Self.data(hex: hex.output.trimmingCharacters(in: .whitespacesAndNewlines)),
                !blob.isEmpty
            else { continue }
            found += 1
            let inflated = try #require(Inflater.inflate(blob), "\(name)")
            #expect(inflated.format == .deflate, "\(name)")
            #expect(BinaryPropertyList.looksLikeBinaryPropertyList(inflated.bytes), "\(name)")
        }
        #expect(found >= 10, "corpus stores with a model cache: \(found)")
    }

    /// Bytes that are not compressed: text, property lists, pictures' headers, random bytes.
    @Test func plainBytesAreNotInflated() throws {
        let plain: [Data] = [
            Data(), Data("hello, world\n".utf8), Data("bplist00".utf8) + Data(count: 40),
            Data([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 0x4A, 0x46, 0x49, 0x46]),
            Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
            Data([0x1F, 0x8B]), Data([0x1F, 0x8B, 0x08])
        ]
        for bytes in plain { #expect(Inflater.inflate(bytes) == nil, "\(bytes as NSData)") }
        #expect(Inflater.inflatedOrSelf(Data("hello".utf8)) == Data("hello".utf8))
        #expect(Inflater.inflate(Data(count: Inflater.maximumInput + 1)) == nil, "over the input bound")
    }

    static func data(hex: String) -> Data? {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return Data(bytes)
    }
}
