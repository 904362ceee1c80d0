import Foundation

/// Reads Apple's binary property list format (`bplist00`), the container of keyed archives:
/// compiled models (`.mom`) and the model Core Data caches in a SQLite store.
///
/// Written here rather than taken from Foundation because a keyed archive needs the `UID` type,
/// which Foundation on Linux does not hand out, and because the input is untrusted: every offset,
/// count and reference is checked against the file before it is used, nesting is bounded, and an
/// object that contains itself is an error, not a loop. Each object is decoded once (shared
/// references are reused), so the work is bounded by the file's size. Stateless; safe from any
/// thread.
public enum BinaryPropertyList {
    /// How deep containers may nest. Keyed archives use 3 levels; the bound only stops hostile
    /// files from exhausting the stack.
    public static let maximumDepth = 128

    /// Parses `data`; `source` names it in errors.
    ///
    /// - Throws: ``ObjectGraphError/Code/invalidModel`` saying what in the file is wrong.
    public static func parse(_ data: Data, source: String) throws(ObjectGraphError) -> PropertyListValue {
        var reader = try Reader(bytes: [UInt8](data), source: source)
        return try reader.value(reference: reader.topObject, depth: 0)
    }

    /// Whether `data` starts like a binary property list.
    public static func looksLikeBinaryPropertyList(_ data: Data) -> Bool {
        data.count >= 8 && data.prefix(8).elementsEqual(Array("bplist00".utf8))
    }

    private struct Reader {
        let bytes: [UInt8]
        let source: String
        let offsetSize: Int
        let referenceSize: Int
        let objectCount: Int
        let topObject: Int
        let offsetTable: Int
        var decoded: [Int: PropertyListValue] = [:]
        var inProgress = Set<Int>()

        init(bytes: [UInt8], source: String) throws(ObjectGraphError) {
            self.bytes = bytes
            self.source = source
            guard bytes.count >= 8 + 32, bytes.prefix(8).elementsEqual(Array("bplist00".utf8)) else {
                throw ObjectGraphError(
                    .invalidModel, "\(source): not a binary property list (no bplist00 header, or shorter than one)")
            }
            let trailer = bytes.count - 32
            offsetSize = Int(bytes[trailer + 6])
            referenceSize = Int(bytes[trailer + 7])
            let count = Self.bigEndian(bytes, trailer + 8, 8)
            let top = Self.bigEndian(bytes, trailer + 16, 8)
            let table = Self.bigEndian(bytes, trailer + 24, 8)
            guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
                throw ObjectGraphError(
                    .invalidModel,
                    "\(source): binary property list trailer has offset size \(offsetSize) and reference size "
                        + "\(referenceSize); both must be 1 to 8")
            }
            // Every object takes at least one byte between the header and the offset table.
            guard count >= 1, count <= UInt64(trailer), top < count, table >= 8, table <= UInt64(trailer) else {
                throw ObjectGraphError(
                    .invalidModel,
                    "\(source): binary property list trailer is inconsistent (\(count) objects, top \(top), "
                        + "offset table at \(table) in \(bytes.count) bytes)")
            }
            objectCount = Int(count)
            topObject = Int(top)
            offsetTable = Int(table)
            let (tableSize, overflow) = objectCount.multipliedReportingOverflow(by: offsetSize)
            guard !overflow, offsetTable + tableSize <= trailer else {
                throw ObjectGraphError(
                    .invalidModel,
                    "\(source): binary property list offset table (\(objectCount) entries) runs past the file")
            }
        }

        static func bigEndian(_ bytes: [UInt8], _ start: Int, _ size: Int) -> UInt64 {
            var value: UInt64 = 0
            for i in start..<(start + size) { value = value << 8 | UInt64(bytes[i]) }
            return value
        }

        func failure(_ message: String) -> ObjectGraphError {
            ObjectGraphError(.invalidModel, "\(source): binary property list \(message)")
        }

        /// `size` bytes at `start`, checked to lie before the offset table.
        func range(_ start: Int, _ size: Int, of what: String) throws(ObjectGraphError) -> Range<Int> {
            guard size >= 0, start >= 8, start <= offsetTable, size <= offsetTable - start else {
                throw failure("\(what) at byte \(start) runs past the object data")
            }
            return start..<(start + size)
        }

        func offset(of reference: Int) throws(ObjectGraphError) -> Int {
            guard reference >= 0, reference < objectCount else {
                throw failure("refers to object \(reference) of \(objectCount)")
            }
            let value = Self.bigEndian(bytes, offsetTable + reference * offsetSize, offsetSize)
            guard value >= 8, value < UInt64(offsetTable) else {
                throw failure("object \(reference) has offset \(value), outside the object data")
            }
            return Int(value)
        }

        /// An element count: the marker's low nibble, or the integer object that follows it.
        func count(marker: UInt8, at position: Int) throws(ObjectGraphError) -> (count: Int, start: Int) {
            let nibble = Int(marker & 0x0F)
            if nibble != 0x0F { return (nibble, position + 1) }
            let head = try range(position + 1, 1, of: "length")
            let lengthMarker = bytes[head.lowerBound]
            guard lengthMarker & 0xF0 == 0x10, lengthMarker & 0x0F <= 3 else {
                throw failure("has a length at byte \(position + 1) that is not an integer of 1 to 8 bytes")
            }
            let size = 1 << Int(lengthMarker & 0x0F)
            let body = try range(head.upperBound, size, of: "length")
            let value = Self.bigEndian(bytes, body.lowerBound, size)
            guard value <= UInt64(offsetTable) else {
                throw failure("has a length of \(value), more than the file holds")
            }
            return (Int(value), body.upperBound)
        }

        mutating func value(reference: Int, depth: Int) throws(ObjectGraphError) -> PropertyListValue {
            if let known = decoded[reference] { return known }
            guard depth <= BinaryPropertyList.maximumDepth else {
                throw failure("nests deeper than \(BinaryPropertyList.maximumDepth) levels")
            }
            guard inProgress.insert(reference).inserted else {
                throw failure("object \(reference) contains itself")
            }
            defer { inProgress.remove(reference) }
            let result = try object(at: try offset(of: reference), depth: depth)
            decoded[reference] = result
            return result
        }

        mutating func object(at position: Int, depth: Int) throws(ObjectGraphError) -> PropertyListValue {
            let marker = bytes[try range(position, 1, of: "object").lowerBound]
            let low = Int(marker & 0x0F)
            switch marker >> 4 {
            case 0x0:
                switch marker {
                case 0x00, 0x0F: return .null
                case 0x08: return .boolean(false)
                case 0x09: return .boolean(true)
                default: throw failure("has unknown marker 0x\(String(marker, radix: 16)) at byte \(position)")
                }
            case 0x1:
                guard low <= 4 else { throw failure("has an integer of 2^\(low) bytes at byte \(position)") }
                let size = 1 << low
                let body = try range(position + 1, size, of: "integer")
                if size == 16 {
                    // 128-bit: only values that fit in 64 bits are accepted.
                    let high = Self.bigEndian(bytes, body.lowerBound, 8)
                    let lowPart = Self.bigEndian(bytes, body.lowerBound + 8, 8)
                    let negative = Int64(bitPattern: lowPart) < 0
                    guard high == (negative ? UInt64.max : 0) else {
                        throw failure("has an integer at byte \(position) that does not fit in 64 bits")
                    }
                    return .integer(Int64(bitPattern: lowPart))
                }
                let raw = Self.bigEndian(bytes, body.lowerBound, size)
                // 1, 2 and 4 bytes are unsigned, 8 bytes signed.
                return .integer(size == 8 ? Int64(bitPattern: raw) : Int64(raw))
            case 0x2:
                guard low == 2 || low == 3 else { throw failure("has a real of 2^\(low) bytes at byte \(position)") }
                let body = try range(position + 1, 1 << low, of: "real")
                let raw = Self.bigEndian(bytes, body.lowerBound, 1 << low)
                return .real(
                    low == 2 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: raw))) : Double(bitPattern: raw))
            case 0x3:
                guard marker == 0x33 else {
                    throw failure("has unknown marker 0x\(String(marker, radix: 16)) at byte \(position)")
                }
                let body = try range(position + 1, 8, of: "date")
                return .date(Double(bitPattern: Self.bigEndian(bytes, body.lowerBound, 8)))
            case 0x4:
                let (length, start) = try count(marker: marker, at: position)
                return .data(Data(bytes[try range(start, length, of: "data")]))
            case 0x5:
                // ASCII, as Apple writes it; bytes above 127 are read as Latin-1 rather than refused.
                let (length, start) = try count(marker: marker, at: position)
                var text = String.UnicodeScalarView()
                for byte in bytes[try range(start, length, of: "string")] { text.append(Unicode.Scalar(byte)) }
                return .string(String(text))
            case 0x6:
                let (length, start) = try count(marker: marker, at: position)
                let (size, overflow) = length.multipliedReportingOverflow(by: 2)
                guard !overflow else { throw failure("has a string of \(length) characters at byte \(position)") }
                let body = try range(start, size, of: "string")
                var units: [UInt16] = []
                units.reserveCapacity(length)
                for i in stride(from: body.lowerBound, to: body.upperBound, by: 2) {
                    units.append(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]))
                }
                return .string(String(decoding: units, as: UTF16.self))
            case 0x8:
                let body = try range(position + 1, low + 1, of: "UID")
                guard low < 8 else { throw failure("has a UID of \(low + 1) bytes at byte \(position)") }
                let raw = Self.bigEndian(bytes, body.lowerBound, low + 1)
                guard raw <= UInt64(Int32.max) else { throw failure("has UID \(raw) at byte \(position)") }
                return .uid(Int(raw))
            case 0xA, 0xC:
                let (length, start) = try count(marker: marker, at: position)
                let references = try self.references(length, at: start)
                var items: [PropertyListValue] = []
                items.reserveCapacity(references.count)
                for reference in references { items.append(try value(reference: reference, depth: depth + 1)) }
                return .array(items)
            case 0xD:
                let (length, start) = try count(marker: marker, at: position)
                let (both, overflow) = length.multipliedReportingOverflow(by: 2)
                guard !overflow else { throw failure("has a dictionary of \(length) entries at byte \(position)") }
                let references = try self.references(both, at: start)
                var entries: [(key: PropertyListValue, value: PropertyListValue)] = []
                entries.reserveCapacity(length)
                for i in 0..<length {
                    let key = try value(reference: references[i], depth: depth + 1)
                    entries.append((key, try value(reference: references[length + i], depth: depth + 1)))
                }
                return .dictionary(entries)
            default:
                throw failure("has unknown marker 0x\(String(marker, radix: 16)) at byte \(position)")
            }
        }

        func references(_ count: Int, at start: Int) throws(ObjectGraphError) -> [Int] {
            let (size, overflow) = count.multipliedReportingOverflow(by: referenceSize)
            guard !overflow else { throw failure("has a container of \(count) entries") }
            let body = try range(start, size, of: "container")
            return stride(from: body.lowerBound, to: body.upperBound, by: referenceSize).map {
                Int(Self.bigEndian(bytes, $0, referenceSize) & 0x7FFF_FFFF_FFFF_FFFF)
            }
        }
    }
}
