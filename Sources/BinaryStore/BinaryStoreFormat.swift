import Decoding
import Foundation
import AtomicStore
import ObjectGraph

/// storefs's binary store format, version 1; docs/BINARY_FORMAT.md is the specification.
///
/// Layout: a 40-byte header, the metadata (a binary property list), then the objects section.
/// Integers in the header are little-endian; in the objects section they are LEB128 varints
/// (signed ones zigzag-encoded). Both sections carry a CRC-32C.
enum BinaryStoreFormat {
    static let magic: [UInt8] = Array("STOREFS\0".utf8)
    static let version: UInt16 = 1
    static let headerSize = 40

    enum Tag: UInt8 {
        case null = 0, integer = 1, decimal = 2, double = 3, float = 4, string = 5, falseValue = 6,
            trueValue = 7, date = 8, data = 9, uuid = 10
    }

    struct Header {
        var flags: UInt16
        var metadataLength: Int
        var objectsLength: Int
        var metadataCRC: UInt32
        var objectsCRC: UInt32
    }

    // MARK: - Writing

    /// The whole file for `graph`. References to objects that do not exist are left out (they
    /// would make the file unreadable); `keepDanglingReferences` exists for tests of the reader.
    static func encode(_ graph: StoreGraph, model: ManagedObjectModel, keepDanglingReferences: Bool = false)
        throws(ObjectGraphError) -> Data
    {
        let (head, objects) = try encodeParts(graph, model: model, keepDanglingReferences: keepDanglingReferences)
        var out = Data(capacity: head.count + objects.count)
        out.append(contentsOf: head)
        out.append(contentsOf: objects)
        return out
    }

    /// The file in two parts: the header with the metadata, and the objects section. A save
    /// writes both as they are (``BinaryStoreFile``), without joining them into one more copy.
    static func encodeParts(_ graph: StoreGraph, model: ManagedObjectModel, keepDanglingReferences: Bool = false)
        throws(ObjectGraphError) -> (head: [UInt8], objects: [UInt8])
    {
        let metadataBytes = try encodeMetadata(graph.metadata)
        let objects = encodeObjects(graph, model: model, keepDangling: keepDanglingReferences)
        var out = [UInt8]()
        out.reserveCapacity(headerSize + metadataBytes.count)
        out += magic
        appendLE(&out, UInt64(version), 2)
        appendLE(&out, 0, 2)
        appendLE(&out, UInt64(metadataBytes.count), 4)
        appendLE(&out, UInt64(objects.count), 8)
        appendLE(&out, UInt64(CRC32C.checksum(metadataBytes)), 4)
        appendLE(&out, UInt64(CRC32C.checksum(objects)), 4)
        appendLE(&out, 0, 4)
        appendLE(&out, UInt64(CRC32C.checksum(out)), 4)
        out += metadataBytes
        return (out, objects)
    }

    static func encodeMetadata(_ metadata: StoreMetadata) throws(ObjectGraphError) -> [UInt8] {
        do {
            let data = try PropertyListSerialization.data(
                fromPropertyList: metadata.values.mapValues(\.propertyList), format: .binary, options: 0)
            return [UInt8](data)
        } catch {
            throw ObjectGraphError(.unsupported, "the store metadata cannot be written as a property list: \(error)")
        }
    }

    private static func appendLE(_ out: inout [UInt8], _ value: UInt64, _ count: Int) {
        for i in 0..<count { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }

    @inline(__always) private static func appendVarint(_ out: inout [UInt8], _ value: UInt64) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    @inline(__always) private static func appendSigned(_ out: inout [UInt8], _ value: Int64) {
        appendVarint(&out, UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    private static func appendBytes(_ out: inout [UInt8], _ string: String) {
        var s = string
        s.withUTF8 { buffer in
            appendVarint(&out, UInt64(buffer.count))
            out.append(contentsOf: buffer)
        }
    }

    private static func encodeObjects(_ graph: StoreGraph, model: ManagedObjectModel, keepDangling: Bool) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(graph.snapshots.count * 64 + 1024)
        let exists = graph.existence(model: model)
        // Name table: entity names, then property names.
        var names: [String] = []
        var index: [String: Int] = [:]
        func name(_ s: String) -> Int {
            if let i = index[s] { return i }
            index[s] = names.count
            names.append(s)
            return names.count - 1
        }
        for entity in model.entities { _ = name(entity.name) }
        for entity in model.entities {
            for a in entity.persistentAttributes { _ = name(a.name) }
            for r in entity.persistentRelationships { _ = name(r.name) }
        }
        appendVarint(&out, UInt64(names.count))
        for n in names { appendBytes(&out, n) }

        appendVarint(&out, UInt64(model.rootEntities.count))
        for root in model.rootEntities {
            var m = graph.maxKey[root.id] ?? 0
            for key in (graph.keysByRoot[root.id] ?? [:]).keys { m = max(m, key.rawValue) }
            appendVarint(&out, UInt64(name(root.name)))
            appendVarint(&out, UInt64(m))
        }

        var byEntity: [EntityID: [ObjectID]] = [:]
        for id in graph.snapshots.keys { byEntity[id.entity, default: []].append(id) }
        @inline(__always) func ref(_ id: ObjectID) {
            appendVarint(&out, UInt64(id.entity.rawValue - 1))  // entity names are the first table entries
            appendVarint(&out, UInt64(id.key.rawValue))
        }
        let present = model.entities.filter { byEntity[$0.id] != nil }
        appendVarint(&out, UInt64(present.count))
        for entity in present {
            let attributes = entity.persistentAttributes
            let toOnes = entity.persistentRelationships.filter { !$0.isToMany }
            let toManys = entity.persistentRelationships.filter(\.isToMany)
            appendVarint(&out, UInt64(name(entity.name)))
            appendVarint(&out, UInt64(attributes.count))
            for a in attributes { appendVarint(&out, UInt64(name(a.name))) }
            appendVarint(&out, UInt64(toOnes.count))
            for r in toOnes { appendVarint(&out, UInt64(name(r.name))) }
            appendVarint(&out, UInt64(toManys.count))
            for r in toManys { appendVarint(&out, UInt64(name(r.name))) }
            let ids = byEntity[entity.id]!.sorted()
            appendVarint(&out, UInt64(ids.count))
            for id in ids {
                let s = graph.snapshots[id]!
                appendVarint(&out, UInt64(id.key.rawValue))
                appendSigned(&out, s.version)
                for a in attributes { appendValue(&out, s.attributes[a.name]) }
                for r in toOnes {
                    if let target = s.toOne[r.name], keepDangling || exists(target) {
                        out.append(1)
                        ref(target)
                    } else {
                        out.append(0)
                    }
                }
                for r in toManys {
                    let list = (graph.toMany[.init(source: id, relationship: r.name)] ?? []).filter {
                        keepDangling || exists($0)
                    }
                    appendVarint(&out, UInt64(list.count))
                    for target in list { ref(target) }
                }
            }
        }
        return out
    }

    private static func appendValue(_ out: inout [UInt8], _ value: AttributeValue?) {
        guard let value else { return out.append(Tag.null.rawValue) }
        switch value {
        case .integer(let v):
            out.append(Tag.integer.rawValue)
            appendSigned(&out, v)
        case .decimal(let v):
            out.append(Tag.decimal.rawValue)
            appendBytes(&out, DecimalConversion.text(v))
        case .double(let v):
            out.append(Tag.double.rawValue)
            appendLE(&out, v.bitPattern, 8)
        case .float(let v):
            out.append(Tag.float.rawValue)
            appendLE(&out, UInt64(v.bitPattern), 4)
        case .string(let v):
            out.append(Tag.string.rawValue)
            appendBytes(&out, v)
        case .boolean(let v):
            out.append(v ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
        case .date(let v):
            out.append(Tag.date.rawValue)
            appendLE(&out, v.timeIntervalSinceReferenceDate.bitPattern, 8)
        case .data(let v):
            out.append(Tag.data.rawValue)
            appendVarint(&out, UInt64(v.count))
            out.append(contentsOf: v)
        case .uuid(let v):
            out.append(Tag.uuid.rawValue)
            withUnsafeBytes(of: v.uuid) { out.append(contentsOf: $0) }
        }
    }

    // MARK: - Reading

    /// Checks the header (magic, version, flags, header checksum, sizes).
    static func header(_ bytes: UnsafeRawBufferPointer, fileSize: Int?, path: String) throws(ObjectGraphError) -> Header
    {
        func corrupt(_ m: String) -> ObjectGraphError { ObjectGraphError(.corruptStore, "\(path): \(m)") }
        guard bytes.count >= 8, bytes.prefix(8).elementsEqual(magic) else {
            throw corrupt("not a storefs binary store (the file does not start with \"STOREFS\\0\")")
        }
        guard bytes.count >= headerSize else { throw corrupt("truncated: the \(headerSize)-byte header is incomplete") }
        func le(_ offset: Int, _ count: Int) -> UInt64 {
            var v: UInt64 = 0
            for i in 0..<count { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
            return v
        }
        let version = UInt16(le(8, 2))
        guard version == Self.version else {
            throw corrupt(
                "unsupported binary store format version \(version) (this storefs reads version \(Self.version))")
        }
        guard UInt32(le(36, 4)) == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<36])) else {
            throw corrupt("the header checksum does not match (the file is damaged)")
        }
        let flags = UInt16(le(10, 2))
        guard flags == 0 else { throw corrupt("unknown format flags 0x\(String(flags, radix: 16))") }
        let header = Header(
            flags: flags, metadataLength: Int(le(12, 4)), objectsLength: Int(clamping: le(16, 8)),
            metadataCRC: UInt32(le(24, 4)), objectsCRC: UInt32(le(28, 4)))
        if let fileSize {
            let (sum, overflow) = header.metadataLength.addingReportingOverflow(header.objectsLength)
            guard !overflow, headerSize + sum == fileSize else {
                throw corrupt(
                    "the file is \(fileSize) bytes but its header describes \(headerSize) + \(header.metadataLength) + \(header.objectsLength) (truncated or damaged)"
                )
            }
        }
        return header
    }

    static func decodeMetadata(_ bytes: UnsafeRawBufferPointer, expectedCRC: UInt32, path: String)
        throws(ObjectGraphError)
        -> StoreMetadata
    {
        guard CRC32C.checksum(bytes) == expectedCRC else {
            throw ObjectGraphError(.corruptStore, "\(path): the metadata checksum does not match (the file is damaged)")
        }
        // The bounded reader: a store's bytes never reach PropertyListSerialization.
        return StoreMetadata(try StoredPropertyList.dictionary(Data(bytes), source: "\(path): the metadata"))
    }

    /// Decodes a whole file into a graph for `model`.
    static func decode(
        _ data: Data, model: ManagedObjectModel?, path: String, parallelism: Parallelism = .automatic
    ) throws(ObjectGraphError) -> (ManagedObjectModel, StoreGraph) {
        try data.withBytes { (bytes) throws(ObjectGraphError) in
            let header = try header(bytes, fileSize: bytes.count, path: path)
            let metadataBytes = UnsafeRawBufferPointer(rebasing: bytes[headerSize..<headerSize + header.metadataLength])
            var metadata = try decodeMetadata(metadataBytes, expectedCRC: header.metadataCRC, path: path)
            let start = headerSize + header.metadataLength
            let objects = UnsafeRawBufferPointer(rebasing: bytes[start..<start + header.objectsLength])
            guard CRC32C.checksum(objects) == header.objectsCRC else {
                throw ObjectGraphError(
                    .corruptStore, "\(path): the objects checksum does not match (the file is damaged)")
            }
            let resolved: ManagedObjectModel
            if let model {
                resolved = model
            } else if let text = metadata.embeddedModel {
                resolved = try XcodeModelLoader.load(contents: Data(text.utf8), source: "\(path) (embedded model)")
            } else {
                throw ObjectGraphError(.invalidModel, "\(path) carries no model; open it with a model (--model)")
            }
            metadata.storeType = BinaryStoreType.typeName
            if metadata.storeUUID == nil { metadata.storeUUID = StoreMetadata.newStoreUUID() }
            var reader = Reader(bytes: objects, path: path)
            let graph = try decodeObjects(&reader, model: resolved, metadata: metadata, parallelism: parallelism)
            return (resolved, graph)
        }
    }

    private static func decodeObjects(
        _ r: inout Reader, model: ManagedObjectModel, metadata: StoreMetadata, parallelism: Parallelism
    ) throws(ObjectGraphError) -> StoreGraph {
        let nameCount = try r.count()
        var names: [String] = []
        names.reserveCapacity(nameCount)
        for _ in 0..<nameCount { names.append(try r.string()) }
        func lookup(_ i: Int) throws(ObjectGraphError) -> String {
            guard i < names.count else { throw r.corrupt("name index \(i) is out of range") }
            return names[i]
        }
        let entityForName = names.map { model.entityID(named: $0) }
        func entity(_ i: Int) throws(ObjectGraphError) -> EntityID {
            guard i < entityForName.count, let e = entityForName[i] else {
                throw r.corrupt("entity \(i < names.count ? names[i] : "#\(i)") is not in the model")
            }
            return e
        }

        var graph = StoreGraph(metadata: metadata)
        let rootCount = try r.count()
        for _ in 0..<rootCount {
            let root = try entity(try r.count())
            guard model[root].parentID == nil else {
                throw r.corrupt("\(model[root].name) is listed as a root entity but is not one")
            }
            // A key, not a count: it may exceed the section's size (a store of a few objects whose
            // keys reach 100000 was written fine and then refused as "count exceeds the data").
            let maxKey = try r.varint()
            guard maxKey <= UInt64(Int64.max) else { throw r.corrupt("highest key \(maxKey) is invalid") }
            graph.maxKey[root] = Int64(maxKey)
        }
        // Every reference is checked once all objects are loaded (a reference may name an object
        // of a later block). Kept as plain numbers, the relationship by its place in
        // `relationshipNames`: a name per reference was a retain and a release each.
        var refs: [Reference] = []
        var relationshipNames: [String] = []
        var relationshipNumbers: [String: UInt32] = [:]
        func relationshipNumber(_ name: String) -> UInt32 {
            if let n = relationshipNumbers[name] { return n }
            relationshipNames.append(name)
            relationshipNumbers[name] = UInt32(relationshipNames.count - 1)
            return UInt32(relationshipNames.count - 1)
        }
        var loaded = LoadedKeys(
            model: model, highestKeys: graph.maxKey, budgetBytes: r.bytes.count + (1 << 20))
        let blockCount = try r.count()
        for _ in 0..<blockCount {
            let entityID = try entity(try r.count())
            let description = model[entityID]
            // Names and types only: a description per field would be copied (retained and
            // released) for every value decoded.
            var attributes: [String] = []
            var types: [AttributeType] = []
            for _ in 0..<(try r.count()) {
                let n = try lookup(try r.count())
                guard let a = description.attribute(named: n), !a.isTransient else {
                    throw r.corrupt("entity \(description.name) has no stored attribute \(n)")
                }
                attributes.append(a.name)
                types.append(a.type)
            }
            var toOnes: [String] = []
            var toOneNumbers: [UInt32] = []
            for _ in 0..<(try r.count()) {
                let n = try lookup(try r.count())
                guard let rel = description.relationship(named: n), !rel.isToMany else {
                    throw r.corrupt("entity \(description.name) has no to-one relationship \(n)")
                }
                toOnes.append(rel.name)
                toOneNumbers.append(relationshipNumber(rel.name))
            }
            var toManys: [String] = []
            var toManyNumbers: [UInt32] = []
            for _ in 0..<(try r.count()) {
                let n = try lookup(try r.count())
                guard let rel = description.relationship(named: n), rel.isToMany else {
                    throw r.corrupt("entity \(description.name) has no to-many relationship \(n)")
                }
                toManys.append(rel.name)
                toManyNumbers.append(relationshipNumber(rel.name))
            }
            // Shared by every snapshot of the block; values go straight to their slots.
            let (attributeNames, attributeSlots) = PropertyNames.slotted(attributes)
            let (toOneNames, toOneSlots) = PropertyNames.slotted(toOnes)
            let layout = BlockLayout(
                entityID: entityID, entityName: description.name, attributes: attributes, types: types,
                attributeNames: attributeNames, attributeSlots: attributeSlots, toOneNames: toOneNames,
                toOneSlots: toOneSlots, toOneNumbers: toOneNumbers, toManys: toManys, toManyNumbers: toManyNumbers,
                entityForName: entityForName, names: names)
            let objectCount = try r.count()
            // An object takes at least its key, its version and a byte per property, and a to-many
            // list at least its count: a count beyond what the bytes left can hold is a corrupt
            // file, found below, so the tables are sized only for what could be there.
            let left = r.bytes.count - r.position
            let possible = min(objectCount, left / layout.minimumObjectBytes)
            let lists = possible.multipliedReportingOverflow(by: toManys.count)
            graph.reserve(objects: possible, toManyLists: lists.overflow ? left : min(lists.partialValue, left))
            var run = graph.startLoading(root: description.rootID, expecting: possible)
            // Decoded in chunks, on several threads when the block is large; put into the graph
            // here, chunk by chunk in the file's order, so the first damage in the file is the
            // one reported, with the same message as reading in one piece.
            let (starts, counts) = chunkStarts(
                r, count: objectCount, per: parallelism.chunkObjects, layout: layout)
            let schedule = ChunkSchedule(
                decoder: ChunkDecoder(bytes: r.bytes, path: r.path, layout: layout, starts: starts, counts: counts),
                window: 2 * (parallelism.helpers + 1))
            schedule.startHelpers(parallelism.helpers)
            defer { schedule.finish() }
            for index in starts.indices {
                let chunk = schedule.take(index)
                for n in chunk.snapshots.indices {
                    let id = chunk.snapshots[n].objectID
                    for i in toManys.indices {
                        graph.toMany[.init(source: id, relationship: toManys[i])] = chunk.toMany[n * toManys.count + i]
                    }
                    guard graph.load(chunk.snapshots[n], into: &run) else {
                        var at = r
                        at.position = chunk.ends[n]
                        throw at.corrupt(
                            "\(description.name) \(id.key) appears twice (keys must be unique per root entity)")
                    }
                    loaded.insert(id)
                }
                refs.append(contentsOf: chunk.refs)
                if let error = chunk.error { throw error }
                r.position = chunk.end
            }
            graph.finishLoading(run)
        }
        guard r.position == r.bytes.count else {
            throw r.corrupt("\(r.bytes.count - r.position) bytes follow the last object")
        }
        let exists = graph.existence(model: model)
        for ref in refs where !loaded.contains(ref.target, else: exists) {
            throw r.corrupt(
                "\(model[ref.source.entity].name) \(ref.source.key).\(relationshipNames[Int(ref.relationship)]) refers to \(model[ref.target.entity].name) \(ref.target.key), which does not exist"
            )
        }
        return graph
    }

    /// A bounds-checked cursor over the objects section.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        let path: String
        var position = 0

        init(bytes: UnsafeRawBufferPointer, path: String) {
            self.bytes = bytes
            self.path = path
        }

        func corrupt(_ message: String) -> ObjectGraphError {
            ObjectGraphError(.corruptStore, "\(path): objects section, byte \(position): \(message)")
        }

        @inline(__always) mutating func byte() throws(ObjectGraphError) -> UInt8 {
            guard position < bytes.count else { throw corrupt("unexpected end of data") }
            defer { position += 1 }
            return bytes[position]
        }

        @inline(__always) mutating func varint() throws(ObjectGraphError) -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try byte()
                guard shift < 64, !(shift == 63 && b > 1) else { throw corrupt("varint is too long") }
                result |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return result }
                shift += 7
            }
        }

        mutating func signed() throws(ObjectGraphError) -> Int64 {
            let v = try varint()
            return Int64(bitPattern: (v >> 1) ^ (0 &- (v & 1)))
        }

        /// A count or index, bounded by the section's size so that garbage cannot ask for huge
        /// allocations.
        mutating func count() throws(ObjectGraphError) -> Int {
            let v = try varint()
            guard v <= UInt64(bytes.count) else { throw corrupt("count \(v) exceeds the data") }
            return Int(v)
        }

        mutating func key() throws(ObjectGraphError) -> PrimaryKey {
            let v = try varint()
            guard v > 0, v <= UInt64(Int64.max) else { throw corrupt("object key \(v) is invalid") }
            return PrimaryKey(Int64(v))
        }

        mutating func raw(_ n: Int) throws(ObjectGraphError) -> UnsafeRawBufferPointer {
            guard n <= bytes.count - position else { throw corrupt("unexpected end of data") }
            defer { position += n }
            return UnsafeRawBufferPointer(rebasing: bytes[position..<position + n])
        }

        mutating func fixed(_ n: Int) throws(ObjectGraphError) -> UInt64 {
            let b = try raw(n)
            var v: UInt64 = 0
            for i in 0..<n { v |= UInt64(b[i]) << (8 * UInt64(i)) }
            return v
        }

        mutating func string() throws(ObjectGraphError) -> String {
            let b = try raw(try count())
            guard let s = String(validating: b, as: UTF8.self) else { throw corrupt("a string is not valid UTF-8") }
            return s
        }

        /// The next value, of an attribute of `type`; `named` gives "Entity.attribute" for errors.
        mutating func value(as type: AttributeType, named: () -> String) throws(ObjectGraphError) -> AttributeValue? {
            let tagByte = try byte()
            guard let tag = Tag(rawValue: tagByte) else {
                throw corrupt("unknown value tag \(tagByte) for \(named())")
            }
            let value: AttributeValue
            switch tag {
            case .null: return nil
            case .integer: value = .integer(try signed())
            case .decimal:
                let text = try string()
                guard let d = DecimalConversion.decimal(text) else {
                    throw corrupt("\(named()): \"\(text)\" is not a decimal")
                }
                value = .decimal(d)
            case .double: value = .double(Double(bitPattern: try fixed(8)))
            case .float: value = .float(Float(bitPattern: UInt32(try fixed(4))))
            case .string: value = .string(try string())
            case .falseValue: value = .boolean(false)
            case .trueValue: value = .boolean(true)
            case .date: value = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try fixed(8))))
            case .data: value = .data(Data(try raw(try count())))
            case .uuid:
                let b = try raw(16)
                value = .uuid(
                    UUID(
                        uuid: (
                            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                            b[14], b[15]
                        )))
            }
            guard value.matches(type) else {
                throw corrupt(
                    "\(named()) holds a value of tag \(tagByte), which does not fit type \(type.rawValue)")
            }
            if case .integer(let v) = value, let range = type.integerRange, !range.contains(v) {
                throw corrupt("\(named()) value \(v) is out of range for \(type.rawValue)")
            }
            return value
        }
    }
}

extension Data {
    /// `withUnsafeBytes` with a typed error (Foundation's version rethrows untyped).
    func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        var result: Result<T, ObjectGraphError>?
        withUnsafeBytes { (b: UnsafeRawBufferPointer) in
            result = Result { () throws(ObjectGraphError) -> T in try body(b) }
        }
        return try result!.get()
    }
}
