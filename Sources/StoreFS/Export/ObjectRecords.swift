import Foundation
import ObjectGraph

/// The formats objects are written in by `storefs export` and a query folder's `.json`/`.csv`.
public enum ObjectRecordFormat: String, Sendable, CaseIterable {
    /// JSON Lines: one JSON object per line.
    case jsonLines = "jsonl"
    /// One JSON array of the objects, one per line inside it.
    case json
    /// RFC 4180 CSV with a header row, lines ending in `\n`.
    case csv
}

/// Writes ``ObjectRecord``s as JSON or CSV: what `storefs export` streams and what a query folder's
/// `.json` and `.csv` hold, the same bytes for the same objects.
///
/// Each object is `@entity` (its entity's name), `@uri` (its object URI,
/// `x-coredata://STORE-UUID/Entity/pN`), then every persistent attribute and relationship of the
/// entity, attributes first, each in the model's order (inherited ones first):
/// - attributes as their text forms, the text `cat` shows without its trailing newline (strings as
///   they are, numbers in decimal, dates ISO 8601 in UTC, booleans `true`/`false`); Binary Data and
///   Transformable values in base64; nil as JSON `null` or an empty CSV field (an empty string is a
///   quoted `""` in CSV, so the two stay apart);
/// - a to-one relationship as its destination's URI (nil as above), a to-many one as a JSON array
///   of URIs, in the relationship's order for ordered ones, or in CSV the URIs separated by spaces.
/// `@` cannot begin a Core Data property name, so the two names never collide with one.
///
/// CSV has one header for every object, so it is written for one entity: its columns are the
/// entity's properties followed by those its subentities add (empty for objects that lack them).
///
/// Pure: it formats what it is given and reads nothing, so a caller streams records of any number
/// of objects in pages (``ObjectRecordPages``) or formats a query's matches at once.
///
/// Threading: a value; use one writer per output.
public struct ObjectRecords: Sendable {
    public let format: ObjectRecordFormat
    public let model: ManagedObjectModel
    /// `x-coredata://UUID/`: the start of every URI.
    private let uriPrefix: [UInt8]
    /// `x-coredata://UUID/Entity/p` per entity (by number - 1).
    private var entityURIPrefixes: [[UInt8]] = []
    /// The columns of a CSV, by name; nil for JSON.
    private let csvColumns: [String]?
    /// Each entity's properties as written (by entity number - 1): the JSON key (`,"name":`),
    /// the attribute type (nil for a relationship).
    private var properties: [[Property]] = []
    /// For CSV, each entity's columns in order (by entity number - 1): the index in the entity's
    /// ``properties`` of the property each column holds, nil for a column it lacks; empty for
    /// entities outside the CSV's.
    private var csvLayouts: [[Int?]] = []
    /// By entity (number - 1), where each of its ``properties`` is in the values of the records
    /// last written of it: a store gives all records of an entity one layout of names, so the
    /// names are looked up once per layout rather than once per record and property.
    private var slotCache: [PropertySlots?] = []
    /// Each entity's name as UTF-8, JSON-quoted and as a CSV field.
    private var entityNames: [(json: [UInt8], csv: [UInt8])] = []
    private var written = 0

    /// A writer of records of a store whose UUID is `storeUUID`.
    ///
    /// - Parameter entity: the entity whose objects (and subentities' objects) are written; CSV
    ///   needs it for its header, JSON takes objects of any entity.
    /// - Throws: ``ObjectGraphError/Code/validation`` for CSV without an entity.
    public init(format: ObjectRecordFormat, model: ManagedObjectModel, storeUUID: String, entity: EntityID?)
        throws(ObjectGraphError)
    {
        self.format = format
        self.model = model
        uriPrefix = Array("x-coredata://\(storeUUID)/".utf8)
        for description in model.entities {
            var json: [UInt8] = []
            Self.appendJSONString(description.name.utf8, to: &json)
            var csv: [UInt8] = []
            Self.appendCSVField(description.name.utf8, to: &csv)
            entityNames.append((json, csv))
            entityURIPrefixes.append(uriPrefix + Array("\(description.name)/p".utf8))
            properties.append(
                description.persistentAttributes.map { Property(name: $0.name, type: $0.type, toMany: false) }
                    + description.persistentRelationships.map {
                        Property(name: $0.name, type: nil, toMany: $0.isToMany)
                    })
        }
        slotCache = Array(repeating: nil, count: model.entities.count)
        if format == .csv {
            guard let entity, entity.rawValue >= 1, entity.rawValue <= model.entities.count else {
                throw ObjectGraphError(
                    .validation, "CSV has one header row, so it holds the objects of one entity: name the entity")
            }
            var names: [String] = []
            var column: [String: Int] = [:]
            for member in model.entityAndSubentities(of: entity) {
                for property in properties[member.rawValue - 1] where column[property.name] == nil {
                    column[property.name] = names.count
                    names.append(property.name)
                }
            }
            csvLayouts = Array(repeating: [], count: model.entities.count)
            for member in model.entityAndSubentities(of: entity) {
                var layout = [Int?](repeating: nil, count: names.count)
                for (index, property) in properties[member.rawValue - 1].enumerated() {
                    if let at = column[property.name] { layout[at] = index }
                }
                csvLayouts[member.rawValue - 1] = layout
            }
            csvColumns = names
        } else {
            csvColumns = nil
        }
    }

    private struct PropertySlots: Sendable {
        var attributeNames: [String]
        var toOneNames: [String]
        var toManyNames: [String]
        /// By property (as ``properties``): its slot in the record's values of its kind; nil
        /// when they have none for it.
        var slots: [Int?]
    }

    /// The slots of `record`'s entity's properties in its values (see ``slotCache``).
    private mutating func slots(of record: ObjectRecord, entity index: Int) -> [Int?] {
        let attributes = record.attributes.slotNames
        let toOne = record.toOne.slotNames
        let toMany = record.toMany.slotNames
        if let cached = slotCache[index], cached.attributeNames == attributes, cached.toOneNames == toOne,
            cached.toManyNames == toMany
        {
            return cached.slots
        }
        let slots = properties[index].map { property -> Int? in
            let names = property.type != nil ? attributes : property.toMany ? toMany : toOne
            return names.firstIndex(of: property.name)
        }
        slotCache[index] = PropertySlots(
            attributeNames: attributes, toOneNames: toOne, toManyNames: toMany, slots: slots)
        return slots
    }

    private struct Property: Sendable {
        var name: String
        var type: AttributeType?
        var toMany: Bool
        /// `,"name":`
        var jsonKey: [UInt8]

        init(name: String, type: AttributeType?, toMany: Bool) {
            self.name = name
            self.type = type
            self.toMany = toMany
            var key = [UInt8(ascii: ",")]
            ObjectRecords.appendJSONString(name.utf8, to: &key)
            key.append(UInt8(ascii: ":"))
            jsonKey = key
        }
    }

    private func isKnown(_ entity: EntityID) -> Bool { entity.rawValue >= 1 && entity.rawValue <= model.entities.count }

    /// Records written so far.
    public var count: Int { written }

    // MARK: - Writing

    /// What comes before the first record: the CSV header, JSON's `[`.
    public func begin(into out: inout [UInt8]) {
        switch format {
        case .jsonLines:
            break
        case .json:
            out.append(UInt8(ascii: "["))
        case .csv:
            let names = ["@entity", "@uri"] + (csvColumns ?? [])
            for (index, name) in names.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.appendCSVField(name.utf8, to: &out)
            }
            out.append(UInt8(ascii: "\n"))
        }
    }

    /// Appends `record` to `out`.
    public mutating func append(_ record: ObjectRecord, into out: inout [UInt8]) {
        defer { written += 1 }
        switch format {
        case .jsonLines:
            appendJSON(record, to: &out)
            out.append(UInt8(ascii: "\n"))
        case .json:
            out.append(contentsOf: written == 0 ? [UInt8(ascii: "\n")] : [UInt8(ascii: ","), UInt8(ascii: "\n")])
            appendJSON(record, to: &out)
        case .csv:
            appendCSV(record, to: &out)
        }
    }

    /// What comes after the last record: JSON's `]` and the last newline.
    public func end(into out: inout [UInt8]) {
        if format == .json { out.append(contentsOf: Array((written == 0 ? "]\n" : "\n]\n").utf8)) }
    }

    /// The whole output for `records`, from ``begin(into:)`` to ``end(into:)``.
    public func document(of records: [ObjectRecord]) -> Data {
        var writer = self
        writer.written = 0
        var out: [UInt8] = []
        writer.begin(into: &out)
        for record in records { writer.append(record, into: &out) }
        writer.end(into: &out)
        return Data(out)
    }

    /// The URI of `id` in this store: `x-coredata://UUID/Entity/pN`.
    public func uri(of id: ObjectID) -> String {
        var out: [UInt8] = []
        appendURI(id, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The text form of `value` as records hold it: the file's text without its newline, or
    /// base64 for Binary Data and Transformable values.
    public static func text(of value: AttributeValue, type: AttributeType) -> String {
        if case .data(let bytes) = value {
            return ValueText.isText(type) ? String(decoding: bytes, as: UTF8.self) : bytes.base64EncodedString()
        }
        return ValueText.text(of: value)
    }

    // MARK: - JSON

    private mutating func appendJSON(_ record: ObjectRecord, to out: inout [UInt8]) {
        let id = record.objectID
        out.append(contentsOf: Self.entityKey)
        if isKnown(id.entity) {
            out.append(contentsOf: entityNames[id.entity.rawValue - 1].json)
        } else {
            Self.appendJSONString(name(of: id.entity).utf8, to: &out)
        }
        out.append(contentsOf: Self.uriKey)
        appendURI(id, to: &out)
        out.append(UInt8(ascii: "\""))
        guard isKnown(id.entity) else {
            out.append(UInt8(ascii: "}"))
            return
        }
        let entity = id.entity.rawValue - 1
        let slots = slots(of: record, entity: entity)
        let entityProperties = properties[entity]
        for (property, slot) in zip(entityProperties, slots) {
            out.append(contentsOf: property.jsonKey)
            guard let slot else {
                out.append(contentsOf: property.toMany ? Self.emptyList : Self.null)
                continue
            }
            if let type = property.type {
                if let value = record.attributes.value(inSlot: slot) {
                    Self.appendJSONString(value, type: type, to: &out)
                } else {
                    out.append(contentsOf: Self.null)
                }
            } else if property.toMany {
                out.append(UInt8(ascii: "["))
                for (index, destination) in (record.toMany.value(inSlot: slot) ?? []).enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    out.append(UInt8(ascii: "\""))
                    appendURI(destination, to: &out)
                    out.append(UInt8(ascii: "\""))
                }
                out.append(UInt8(ascii: "]"))
            } else if let destination = record.toOne.value(inSlot: slot) {
                out.append(UInt8(ascii: "\""))
                appendURI(destination, to: &out)
                out.append(UInt8(ascii: "\""))
            } else {
                out.append(contentsOf: Self.null)
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    private static let null: [UInt8] = Array("null".utf8)
    private static let emptyList: [UInt8] = Array("[]".utf8)
    private static let entityKey: [UInt8] = Array(#"{"@entity":"#.utf8)
    private static let uriKey: [UInt8] = Array(#","@uri":""#.utf8)
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// An attribute's text form as a JSON string; integers and strings without making one.
    private static func appendJSONString(_ value: AttributeValue, type: AttributeType, to out: inout [UInt8]) {
        switch value {
        case .integer(let v):
            out.append(UInt8(ascii: "\""))
            appendDecimal(v, to: &out)
            out.append(UInt8(ascii: "\""))
        case .string(let v):
            appendJSONString(v.utf8, to: &out)
        case .date(let v):
            // Digits, signs, `T`, `:`, `.` and `Z`: nothing to escape.
            out.append(UInt8(ascii: "\""))
            ISO8601DateText.append(v, to: &out)
            out.append(UInt8(ascii: "\""))
        case .uuid(let v):
            out.append(UInt8(ascii: "\""))
            ValueText.appendUUID(v, to: &out)
            out.append(UInt8(ascii: "\""))
        default:
            appendJSONString(text(of: value, type: type).utf8, to: &out)
        }
    }

    /// A JSON string: `"`, `\` and control characters escaped, everything else as UTF-8.
    static func appendJSONString(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most values need no escape: one copy instead of a test per byte.
        let plain =
            bytes.withContiguousStorageIfAvailable { buffer in
                !buffer.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
            } ?? false
        if plain {
            out.append(contentsOf: bytes)
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    // MARK: - CSV

    private mutating func appendCSV(_ record: ObjectRecord, to out: inout [UInt8]) {
        let id = record.objectID
        guard isKnown(id.entity), csvColumns != nil else { return }
        let entity = id.entity.rawValue - 1
        let entityProperties = properties[entity]
        let slots = slots(of: record, entity: entity)
        out.append(contentsOf: entityNames[entity].csv)
        out.append(UInt8(ascii: ","))
        appendURI(id, to: &out)
        // Straight into the output in column order: columns the entity lacks stay empty.
        for index in csvLayouts[entity] {
            out.append(UInt8(ascii: ","))
            guard let index, let slot = slots[index] else { continue }
            let property = entityProperties[index]
            if let type = property.type {
                guard let value = record.attributes.value(inSlot: slot) else { continue }
                Self.appendCSVField(value, type: type, to: &out)
            } else if property.toMany {
                for (index, destination) in (record.toMany.value(inSlot: slot) ?? []).enumerated() {
                    if index > 0 { out.append(UInt8(ascii: " ")) }
                    appendURI(destination, to: &out)
                }
            } else if let destination = record.toOne.value(inSlot: slot) {
                appendURI(destination, to: &out)
            }
        }
        out.append(UInt8(ascii: "\n"))
    }

    /// An attribute's field: numbers, booleans and dates never need quotes.
    private static func appendCSVField(_ value: AttributeValue, type: AttributeType, to out: inout [UInt8]) {
        switch value {
        case .integer(let v): appendDecimal(v, to: &out)
        case .string(let v): appendCSVField(v.utf8, to: &out)
        case .date(let v): ISO8601DateText.append(v, to: &out)
        case .uuid(let v): ValueText.appendUUID(v, to: &out)
        default: appendCSVField(text(of: value, type: type).utf8, to: &out)
        }
    }

    /// A CSV field: quoted (with `"` doubled) when it holds a comma, quote or line break, or is
    /// empty (an empty string; nil is a field with nothing in it).
    static func appendCSVField(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        func special(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: ",") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\n")
                || byte == UInt8(ascii: "\r")
        }
        // Most fields are plain: tested and copied as one buffer (a string's bytes are one).
        let copied =
            bytes.withContiguousStorageIfAvailable { buffer -> Bool in
                guard !buffer.isEmpty, !buffer.contains(where: special) else { return false }
                out.append(contentsOf: buffer)
                return true
            } ?? false
        if copied { return }
        let needsQuotes = bytes.isEmpty || bytes.contains(where: special)
        guard needsQuotes else {
            out.append(contentsOf: bytes)
            return
        }
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            if byte == UInt8(ascii: "\"") { out.append(byte) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }

    // MARK: - Names

    private func name(of entity: EntityID) -> String {
        isKnown(entity) ? model[entity].name : "\(entity)"
    }

    private func appendURI(_ id: ObjectID, to out: inout [UInt8]) {
        if isKnown(id.entity) {
            out.append(contentsOf: entityURIPrefixes[id.entity.rawValue - 1])
        } else {
            out.append(contentsOf: uriPrefix)
            out.append(contentsOf: name(of: id.entity).utf8)
            out.append(contentsOf: [UInt8(ascii: "/"), UInt8(ascii: "p")])
        }
        Self.appendDecimal(id.key.rawValue, to: &out)
    }

    /// `value` in decimal, without making a string (a URI per relationship per object).
    static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var rest = value.magnitude
        var count = 1
        var bound: UInt64 = 10
        // Counted against powers of ten up to 10^19 (UInt64 holds it; magnitudes stay below 10^19).
        while count < 19 && rest >= bound {
            count += 1
            bound &*= 10
        }
        // Room first, then the digits from the last: a division by the constant 10 per digit.
        let end = out.count + count
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        var at = end - 1
        repeat {
            out[at] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
            at -= 1
        } while rest > 0
    }
}
