import Foundation

/// Renders protocol buffers without their schema as text, in the form `protoc --decode_raw`
/// prints: one field a line, `NUMBER: value`, nested messages as `NUMBER {` … `}` indented by two
/// spaces. Apps keep protobufs in binary attributes (Notes: every note's body, gzipped), and
/// without the app's `.proto` files the field numbers and values are what can be shown.
///
/// A field's value: a varint in decimal (as unsigned, since the schema would be needed to tell
/// signed and zigzag types), fixed64 and fixed32 in hex (`0x…`), and a length-delimited payload
/// as a string when its bytes are UTF-8 text (no control characters but tab, line feed and
/// carriage return), as a nested message when they parse as one, and as escaped bytes
/// otherwise. Text is tried first because short text often parses as a message as well (a title
/// of two letters is a valid one-field message); a message whose every byte is printable text
/// therefore shows as a string, its content still readable. Groups (wire types 3 and 4,
/// deprecated) make bytes no message. Strings escape `"`, `\` and line breaks; bytes escape
/// everything but printable ASCII, in octal (`\303`), as protobuf's text format does.
///
/// The whole input is a message only when it is not text itself and parses to at least one
/// field. Bounds for hostile input: input over ``maximumInput`` and output past
/// ``maximumOutput`` give no rendering, and payloads nested deeper than ``maximumDepth`` show as
/// bytes; each byte is read a bounded number of times per level that holds it.
///
/// Stateless; safe from any thread.
public enum ProtobufText {
    public static let maximumInput = 16 << 20
    public static let maximumOutput = 64 << 20
    public static let maximumDepth = 64

    /// The text of `data` read as a protobuf message, with one trailing newline; nil when it is
    /// not one (see the type's documentation).
    public static func render(_ data: Data) -> Data? {
        guard !data.isEmpty, data.count <= maximumInput else { return nil }
        let bytes = [UInt8](data)
        guard text(bytes, 0..<bytes.count) == nil, isMessage(bytes, 0..<bytes.count) else { return nil }
        var writer = Writer(bytes: bytes)
        guard writer.message(0..<bytes.count, depth: 0) else { return nil }
        return Data(writer.output)
    }

    // MARK: - Reading

    /// One field's value, where it lies in the input.
    enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        case bytes(Range<Int>)
    }

    /// Reads a base-128 varint at `position` within `end`: at most ten bytes, the tenth holding
    /// only the top bit of a UInt64.
    static func varint(_ bytes: [UInt8], _ position: inout Int, _ end: Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while position < end {
            let byte = bytes[position]
            position += 1
            if shift == 63 && byte > 1 { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    /// The field at `position` (advanced past it): its number and value; nil when the bytes there
    /// are no field.
    static func field(_ bytes: [UInt8], _ position: inout Int, _ end: Int) -> (UInt64, Value)? {
        guard let tag = varint(bytes, &position, end) else { return nil }
        let number = tag >> 3
        guard number >= 1, number <= 0x1FFF_FFFF else { return nil }
        switch tag & 7 {
        case 0:
            return varint(bytes, &position, end).map { (number, .varint($0)) }
        case 1:
            guard end - position >= 8 else { return nil }
            var value: UInt64 = 0
            for i in (0..<8).reversed() { value = value << 8 | UInt64(bytes[position + i]) }
            position += 8
            return (number, .fixed64(value))
        case 2:
            guard let length = varint(bytes, &position, end), length <= UInt64(end - position) else { return nil }
            let start = position
            position += Int(length)
            return (number, .bytes(start..<position))
        case 5:
            guard end - position >= 4 else { return nil }
            var value: UInt32 = 0
            for i in (0..<4).reversed() { value = value << 8 | UInt32(bytes[position + i]) }
            position += 4
            return (number, .fixed32(value))
        default:
            return nil
        }
    }

    /// Whether `range` is a sequence of fields, ending exactly at its end (nested payloads are not
    /// looked into).
    static func isMessage(_ bytes: [UInt8], _ range: Range<Int>) -> Bool {
        var position = range.lowerBound
        while position < range.upperBound {
            guard field(bytes, &position, range.upperBound) != nil else { return false }
        }
        return true
    }

    /// The bytes of `range` as text when they are UTF-8 without control characters other than
    /// tab, line feed and carriage return; nil otherwise.
    static func text(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        for byte in bytes[range] where (byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D) || byte == 0x7F {
            return nil
        }
        guard let string = String(validating: bytes[range], as: UTF8.self) else { return nil }
        // C1 controls (U+0080–U+009F) are control characters as well.
        return string.unicodeScalars.contains { (0x80...0x9F).contains($0.value) } ? nil : string
    }

    // MARK: - Writing

    private struct Writer {
        let bytes: [UInt8]
        var output: [UInt8] = []

        init(bytes: [UInt8]) { self.bytes = bytes }

        /// Writes the fields of `range` (known to be a message) at `depth`; false once the output
        /// passed its bound.
        mutating func message(_ range: Range<Int>, depth: Int) -> Bool {
            var position = range.lowerBound
            while position < range.upperBound {
                guard let (number, value) = ProtobufText.field(bytes, &position, range.upperBound) else { return false }
                output += repeatElement(UInt8(ascii: " "), count: depth * 2)
                output += Array(String(number).utf8)
                switch value {
                case .varint(let v): output += Array(": \(v)\n".utf8)
                case .fixed64(let v): output += Array(": 0x\(Self.hex(v, digits: 16))\n".utf8)
                case .fixed32(let v): output += Array(": 0x\(Self.hex(UInt64(v), digits: 8))\n".utf8)
                case .bytes(let payload):
                    if let text = ProtobufText.text(bytes, payload) {
                        output += Array(": \"".utf8)
                        escape(text)
                        output += Array("\"\n".utf8)
                    } else if depth + 1 < ProtobufText.maximumDepth, !payload.isEmpty,
                        ProtobufText.isMessage(bytes, payload)
                    {
                        output += Array(" {\n".utf8)
                        guard message(payload, depth: depth + 1) else { return false }
                        output += repeatElement(UInt8(ascii: " "), count: depth * 2)
                        output += Array("}\n".utf8)
                    } else {
                        output += Array(": \"".utf8)
                        escape(payload)
                        output += Array("\"\n".utf8)
                    }
                }
                guard output.count <= ProtobufText.maximumOutput else { return false }
            }
            return true
        }

        mutating func escape(_ text: String) {
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): output += Array(#"\""#.utf8)
                case UInt8(ascii: "\\"): output += Array(#"\\"#.utf8)
                case 0x0A: output += Array(#"\n"#.utf8)
                case 0x0D: output += Array(#"\r"#.utf8)
                case 0x09: output += Array(#"\t"#.utf8)
                default: output.append(byte)
                }
            }
        }

        mutating func escape(_ payload: Range<Int>) {
            for byte in bytes[payload] {
                switch byte {
                case UInt8(ascii: "\""): output += Array(#"\""#.utf8)
                case UInt8(ascii: "\\"): output += Array(#"\\"#.utf8)
                case 0x0A: output += Array(#"\n"#.utf8)
                case 0x0D: output += Array(#"\r"#.utf8)
                case 0x09: output += Array(#"\t"#.utf8)
                case 0x20...0x7E: output.append(byte)
                default:
                    output.append(UInt8(ascii: "\\"))
                    output.append(UInt8(ascii: "0") + (byte >> 6))
                    output.append(UInt8(ascii: "0") + (byte >> 3) & 7)
                    output.append(UInt8(ascii: "0") + byte & 7)
                }
            }
        }

        static func hex(_ value: UInt64, digits: Int) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: max(0, digits - text.count)) + text
        }
    }
}
