import Decoding
import Foundation
import Testing

/// Protobufs without their schema read as `protoc --decode_raw` prints them, and bytes that are
/// no protobuf read as nothing.
@Suite struct ProtobufTextTests {
    static func render(_ bytes: [UInt8]) -> String? {
        ProtobufText.render(Data(bytes)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A varint, a string, a nested message, fixed64 and fixed32, bytes that are not UTF-8 and a
    /// string with what must be escaped: the encodings of protobuf's documentation, by hand.
    @Test func everyWireTypeReadsAsProtocPrintsIt() {
        let message: [UInt8] =
            [0x08, 0x96, 0x01]  // 1: 150
            + [0x12, 0x07] + Array("testing".utf8)  // 2: "testing"
            + [0x1A, 0x03, 0x08, 0x96, 0x01]  // 3 { 1: 150 }
            + [0x21, 1, 2, 3, 4, 5, 6, 7, 8]  // 4: fixed64
            + [0x2D, 0xDB, 0x0F, 0x49, 0x40]  // 5: fixed32 (pi as a Float)
            + [0x32, 0x03, 0xFF, 0x00, 0x41]  // 6: bytes
            + [0x3A, 0x08] + Array("a\"b\\\n\tč".utf8)  // 7: text to escape
            + [0x40, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]  // 8: -1 as a varint
            + [0xF8, 0xFF, 0xFF, 0xFF, 0x0F, 0x00]  // 536870911: 0 (the largest field number)
        #expect(
            Self.render(message) == """
                1: 150
                2: "testing"
                3 {
                  1: 150
                }
                4: 0x0807060504030201
                5: 0x40490fdb
                6: "\\377\\000A"
                7: "a\\"b\\\\\\n\\tč"
                8: 18446744073709551615
                536870911: 0

                """)
    }

    /// Empty payloads are empty strings; messages nest as deep as they go (here 5 levels).
    @Test func nestedMessagesIndentByTwo() {
        var inner: [UInt8] = [0x08, 0x01]
        for _ in 0..<4 { inner = [0x0A, UInt8(inner.count)] + inner }
        #expect(
            Self.render(inner + [0x12, 0x00]) == """
                1 {
                  1 {
                    1 {
                      1 {
                        1: 1
                      }
                    }
                  }
                }
                2: ""

                """)
    }

    /// Nesting past the bound shows the innermost payloads as bytes instead of recursing further.
    @Test func nestingStopsAtItsBound() throws {
        var message: [UInt8] = [0x08, 0x01]
        for _ in 0..<100 {
            var length: [UInt8] = []
            var n = message.count
            repeat {
                length.append(UInt8(n & 0x7F) | (n >= 0x80 ? 0x80 : 0))
                n >>= 7
            } while n > 0
            message = [0x0A] + length + message
        }
        let text = try #require(Self.render(message))
        let opened = text.split(separator: "\n").filter { $0.hasSuffix("{") }.count
        #expect(opened == ProtobufText.maximumDepth - 1)
        #expect(text.split(separator: "\n").contains { $0.contains(": \"\\n") }, "the rest as bytes")
    }

    /// Bytes that are not a message: text, cut fields, group and reserved wire types, field 0,
    /// lengths past the end, varints over 64 bits.
    @Test(
        arguments: [
            [], Array("hello, world".utf8), Array("(5".utf8), [0x08], [0x08, 0x80], [0x12, 0x05, 0x61], [0x0B, 0x0C],
            [0x0E, 0x00],
            [0x0F, 0x00], [0x00, 0x01], [0x21, 1, 2, 3], [0x2D, 1, 2],
            [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02],
            [0x80, 0x80, 0x80, 0x80, 0x10, 0x00], [0x12, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]
        ] as [[UInt8]])
    func whatIsNoMessageHasNoText(bytes: [UInt8]) {
        #expect(Self.render(bytes) == nil)
    }
}
