import Testing

@testable import SQLiteRecovery

@Suite struct VarintTests {
    @Test(arguments: [Int64(0), 1, 127, 128, 240, 16383, 16384, 1 << 31, Int64.max, -1, Int64.min])
    func aVarintReadsBackAsWritten(_ value: Int64) {
        let bytes = Varint.encode(value)
        #expect(bytes.count == Varint.length(of: value))
        let read = Varint.read(bytes, at: 0, limit: bytes.count)
        #expect(read?.value == value && read?.length == bytes.count)
    }

    @Test func aVarintCutShortIsNotRead() {
        let bytes = Varint.encode(1 << 40)
        #expect(Varint.read(bytes, at: 0, limit: bytes.count - 1) == nil)
        #expect(Varint.read(bytes, at: bytes.count, limit: bytes.count) == nil)
        #expect(Varint.read(bytes, at: -1, limit: bytes.count) == nil)
    }
}
