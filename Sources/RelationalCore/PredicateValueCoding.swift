import Foundation
import ObjectGraph

/// Predicate values (``PredicateEvaluator/Value``) as bytes (SQLite BLOBs), so that SQL functions can pass
/// them to each other inside one query: a column's value, a collection gathered by an aggregate,
/// a constant of the predicate.
///
/// Each encoding is self-delimiting (a tag byte, then fixed-size fields or a length), so a
/// collection is its count followed by its elements' encodings, concatenated as the aggregate
/// meets them. Objects are encoded by the row's Z_ENT and key: the evaluator compares objects
/// only for equality, and (Z_ENT, key) pairs are equal exactly when the object IDs are.
///
/// The bytes never leave the process that made them (they live within one query).
///
/// Threading: stateless; call from any thread.
package enum PredicateValueCoding {
    package enum Tag: UInt8 {
        case null = 0, string, integer, decimal, double, boolean, date, data, uuid, object, list
    }

    /// The encoding of nil, for SQL that needs one written out.
    package static let nullBytes: [UInt8] = [Tag.null.rawValue]

    // MARK: - Encoding

    package static func encode(_ value: PredicateEvaluator.Value) -> [UInt8] {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return bytes
    }

    package static func append(_ value: PredicateEvaluator.Value, to bytes: inout [UInt8]) {
        switch value {
        case .null:
            bytes.append(Tag.null.rawValue)
        case .string(let s):
            bytes.append(Tag.string.rawValue)
            appendLength(s.utf8.count, to: &bytes)
            bytes.append(contentsOf: s.utf8)
        case .integer(let i):
            bytes.append(Tag.integer.rawValue)
            appendWord(UInt64(bitPattern: i), to: &bytes)
        case .decimal(let d):
            // The decimal's own text, which Decimal(string:) reads back to the same value.
            let text = d.description
            bytes.append(Tag.decimal.rawValue)
            appendLength(text.utf8.count, to: &bytes)
            bytes.append(contentsOf: text.utf8)
        case .double(let d):
            bytes.append(Tag.double.rawValue)
            appendWord(d.bitPattern, to: &bytes)
        case .boolean(let b):
            bytes.append(contentsOf: [Tag.boolean.rawValue, b ? 1 : 0])
        case .date(let seconds):
            bytes.append(Tag.date.rawValue)
            appendWord(seconds.bitPattern, to: &bytes)
        case .data(let data):
            bytes.append(Tag.data.rawValue)
            appendLength(data.count, to: &bytes)
            bytes.append(contentsOf: data)
        case .uuid(let uuid):
            bytes.append(Tag.uuid.rawValue)
            withUnsafeBytes(of: uuid.uuid) { bytes.append(contentsOf: $0) }
        case .object(let id):
            bytes.append(Tag.object.rawValue)
            appendWord(UInt64(bitPattern: Int64(id.entity.rawValue)), to: &bytes)
            appendWord(UInt64(bitPattern: id.key.rawValue), to: &bytes)
        case .list(let items):
            bytes.append(Tag.list.rawValue)
            appendLength(items.count, to: &bytes)
            for item in items { append(item, to: &bytes) }
        }
    }

    /// An object as the SQL functions see it: Z_ENT and key.
    package static func object(zent: Int64, key: Int64) -> PredicateEvaluator.Value {
        // Z_ENT numbers are small; one beyond Int's range cannot name an entity of this store.
        .object(ObjectID(entity: EntityID(Int(truncatingIfNeeded: zent)), key: PrimaryKey(key)))
    }

    /// A list header for `count` elements whose encodings follow.
    package static func listHeader(count: Int) -> [UInt8] {
        var bytes = [Tag.list.rawValue]
        appendLength(count, to: &bytes)
        return bytes
    }

    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        let value = UInt32(clamping: length)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    private static func appendWord(_ word: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }

    // MARK: - Decoding

    /// The value `bytes` encode; nil when they are not an encoding (never the case for bytes this
    /// type made; a guard, since SQL could pass any BLOB).
    package static func decode(_ bytes: Data) -> PredicateEvaluator.Value? {
        bytes.withUnsafeBytes { raw -> PredicateEvaluator.Value? in
            var reader = Reader(bytes: raw)
            guard let value = reader.value(depth: 0), reader.offset == raw.count else { return nil }
            return value
        }
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        /// Lists nest only as deep as a predicate's aggregates (the parser bounds those).
        static let maximumDepth = PredicateParser.maximumNesting + 2

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func length() -> Int? {
            guard bytes.count - offset >= 4 else { return nil }
            var value: UInt32 = 0
            for i in 0..<4 { value |= UInt32(bytes[offset + i]) << UInt32(8 * i) }
            offset += 4
            return Int(value)
        }

        mutating func word() -> UInt64? {
            guard bytes.count - offset >= 8 else { return nil }
            var value: UInt64 = 0
            for i in 0..<8 { value |= UInt64(bytes[offset + i]) << UInt64(8 * i) }
            offset += 8
            return value
        }

        mutating func chunk(_ count: Int) -> UnsafeRawBufferPointer? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        }

        mutating func value(depth: Int) -> PredicateEvaluator.Value? {
            guard depth <= Self.maximumDepth, let raw = byte(), let tag = Tag(rawValue: raw) else { return nil }
            switch tag {
            case .null:
                return .null
            case .string:
                guard let count = length(), let part = chunk(count) else { return nil }
                return .string(String(decoding: part, as: UTF8.self))
            case .integer:
                return word().map { .integer(Int64(bitPattern: $0)) }
            case .decimal:
                guard let count = length(), let part = chunk(count),
                    let decimal = Decimal(string: String(decoding: part, as: UTF8.self), locale: nil)
                else { return nil }
                return .decimal(decimal)
            case .double:
                return word().map { .double(Double(bitPattern: $0)) }
            case .boolean:
                return byte().map { .boolean($0 != 0) }
            case .date:
                return word().map { .date(Double(bitPattern: $0)) }
            case .data:
                guard let count = length(), let part = chunk(count) else { return nil }
                return .data(Data(part))
            case .uuid:
                guard let part = chunk(16) else { return nil }
                let b = Array(part)
                return .uuid(
                    UUID(
                        uuid: (
                            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                            b[14], b[15]
                        )))
            case .object:
                guard let entity = word(), let key = word() else { return nil }
                return PredicateValueCoding.object(zent: Int64(bitPattern: entity), key: Int64(bitPattern: key))
            case .list:
                // Each element takes at least a byte: a count beyond what is left is not an encoding.
                guard let count = length(), count <= bytes.count - offset else { return nil }
                var items: [PredicateEvaluator.Value] = []
                items.reserveCapacity(count)
                for _ in 0..<count {
                    guard let item = value(depth: depth + 1) else { return nil }
                    items.append(item)
                }
                return .list(items)
            }
        }
    }
}
