import Foundation

/// Writes Apple's binary property list format (`bplist00`), with the `UID` type keyed archives
/// need: the counterpart of ``BinaryPropertyList``, for the compiled model storefs caches in the
/// SQLite stores it writes (``CompiledModelEncoder``).
///
/// Every value becomes one object of the file (nothing is shared), written depth-first; strings
/// are ASCII where they can be and UTF-16 otherwise, integers in the fewest bytes the format
/// allows (negative ones in 8). Stateless; safe from any thread.
public enum BinaryPropertyListWriter {
    public static func encode(_ root: PropertyListValue) -> Data {
        var writer = Writer()
        _ = writer.add(root)
        return writer.finish()
    }

    private struct Writer {
        /// Each object's encoded bytes, with references written as placeholders to patch once
        /// the reference size is known.
        var objects: [(bytes: [UInt8], references: [Int])] = []

        /// Adds `value` and what it contains; returns its object number.
        mutating func add(_ value: PropertyListValue) -> Int {
            let index = objects.count
            objects.append(([], []))
            var bytes: [UInt8] = []
            var references: [Int] = []
            switch value {
            case .null: bytes = [0x00]
            case .boolean(let b): bytes = [b ? 0x09 : 0x08]
            case .integer(let i): bytes = Self.integer(i)
            case .real(let d): bytes = [0x23] + Self.bigEndian(d.bitPattern, 8)
            case .date(let d): bytes = [0x33] + Self.bigEndian(d.bitPattern, 8)
            case .data(let d): bytes = Self.header(0x4, d.count) + [UInt8](d)
            case .string(let s):
                if s.unicodeScalars.allSatisfy({ $0.value < 0x80 }) {
                    bytes = Self.header(0x5, s.utf8.count) + Array(s.utf8)
                } else {
                    let units = Array(s.utf16)
                    bytes = Self.header(0x6, units.count)
                    for unit in units { bytes += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
                }
            case .uid(let u):
                let raw = UInt64(max(0, u))
                let size = raw <= 0xFF ? 1 : raw <= 0xFFFF ? 2 : 4
                bytes = [0x80 | UInt8(size - 1)] + Self.bigEndian(raw, size)
            case .array(let items):
                bytes = Self.header(0xA, items.count)
                for item in items { references.append(add(item)) }
            case .dictionary(let entries):
                bytes = Self.header(0xD, entries.count)
                for entry in entries { references.append(add(entry.key)) }
                for entry in entries { references.append(add(entry.value)) }
            }
            objects[index] = (bytes, references)
            return index
        }

        func finish() -> Data {
            let referenceSize = objects.count <= 0xFF ? 1 : objects.count <= 0xFFFF ? 2 : 4
            var out: [UInt8] = Array("bplist00".utf8)
            var offsets: [Int] = []
            offsets.reserveCapacity(objects.count)
            for object in objects {
                offsets.append(out.count)
                out += object.bytes
                for reference in object.references { out += Self.bigEndian(UInt64(reference), referenceSize) }
            }
            let tableStart = out.count
            let offsetSize = tableStart <= 0xFF ? 1 : tableStart <= 0xFFFF ? 2 : tableStart <= 0xFFFF_FFFF ? 4 : 8
            for offset in offsets { out += Self.bigEndian(UInt64(offset), offsetSize) }
            out += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
            out +=
                Self.bigEndian(UInt64(objects.count), 8) + Self.bigEndian(0, 8) + Self.bigEndian(UInt64(tableStart), 8)
            return Data(out)
        }

        /// A marker with its count: in the low nibble below 15, else an integer object after 0xF.
        static func header(_ kind: UInt8, _ count: Int) -> [UInt8] {
            count < 15 ? [kind << 4 | UInt8(count)] : [kind << 4 | 0x0F] + integer(Int64(count))
        }

        static func integer(_ i: Int64) -> [UInt8] {
            if i < 0 { return [0x13] + bigEndian(UInt64(bitPattern: i), 8) }
            if i <= 0xFF { return [0x10, UInt8(i)] }
            if i <= 0xFFFF { return [0x11] + bigEndian(UInt64(i), 2) }
            if i <= 0xFFFF_FFFF { return [0x12] + bigEndian(UInt64(i), 4) }
            return [0x13] + bigEndian(UInt64(i), 8)
        }

        static func bigEndian(_ value: UInt64, _ size: Int) -> [UInt8] {
            (0..<size).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * (size - 1 - $0))) }
        }
    }
}
