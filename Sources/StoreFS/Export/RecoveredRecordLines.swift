import Foundation
import ObjectGraph

/// Writes recovered records (``RecoveredRecords``) as JSON Lines: what `storefs export
/// --recovered` streams, one line per record, with the same attributes `MNT/.recovered` shows.
///
/// Each line is `@entity`, `@recovered` (the record's folder name), `@key` and `@uri` (null when
/// the key did not survive), `@live` (`deleted`, `differs`, `unknown key`), `@version` (Z_OPT),
/// `@sources` (every place it was found: file, page, offset, frame, commit, place, description),
/// for a record whose end was overwritten `@partial` (`{"survived":124,"length":144}`, bytes) and
/// `@missing` (the attributes and to-ones lost; written as null below, as a nil value is: `@missing`
/// tells them apart), then every persistent attribute and to-one of the entity in the text forms of ``ObjectRecords``
/// (binary values in base64, to-ones as object URIs, nil as null). To-many relationships are kept
/// in other rows and are not part of a recovered record.
///
/// Threading: a value; use one writer per output.
public struct RecoveredRecordLines: Sendable {
    public let model: ManagedObjectModel
    private let uriPrefix: String

    public init(model: ManagedObjectModel, storeUUID: String) {
        self.model = model
        uriPrefix = "x-coredata://\(storeUUID)/"
    }

    /// Appends record `index` of `records` as one line.
    public func append(_ records: RecoveredRecords, _ index: Int, into out: inout [UInt8]) throws(ObjectGraphError) {
        let record = records.records[index]
        let values = try records.values(of: index)
        let entity = model[record.entity]
        func key(_ name: String) {
            out.append(UInt8(ascii: ","))
            ObjectRecords.appendJSONString(name.utf8, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        func string(_ text: String?) {
            if let text { ObjectRecords.appendJSONString(text.utf8, to: &out) } else { out += Array("null".utf8) }
        }
        out += Array(#"{"@entity":"#.utf8)
        string(entity.name)
        key("@recovered")
        string(record.name)
        key("@key")
        string(record.key?.description)
        key("@uri")
        string(record.key.map { "\(uriPrefix)\(entity.name)/\($0)" })
        key("@live")
        string(record.live.rawValue)
        key("@version")
        out += Array((values.version.map(String.init) ?? "null").utf8)
        key("@sources")
        out.append(UInt8(ascii: "["))
        for (i, source) in record.sources.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += Array(#"{"file":"#.utf8)
            string(source.file)
            out += Array(",\"page\":\(source.page),\"offset\":\(source.offset)".utf8)
            key("frame")
            out += Array((source.frame.map(String.init) ?? "null").utf8)
            key("commit")
            out += Array((source.commit.map(String.init) ?? "null").utf8)
            key("place")
            string(source.place)
            key("description")
            string(source.description)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        if let partial = record.partial {
            key("@partial")
            out += Array("{\"survived\":\(partial.survivingBytes),\"length\":\(partial.length)}".utf8)
            key("@missing")
            out.append(UInt8(ascii: "["))
            for (i, name) in values.missing.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(name)
            }
            out.append(UInt8(ascii: "]"))
        }
        for attribute in entity.persistentAttributes {
            key(attribute.name)
            string(values.attributes[attribute.name].map { ObjectRecords.text(of: $0, type: attribute.type) })
        }
        for relationship in entity.persistentRelationships where !relationship.isToMany {
            key(relationship.name)
            string(values.toOne[relationship.name].map { "\(uriPrefix)\(model[$0.entity].name)/\($0.key)" })
        }
        out += Array("}\n".utf8)
    }
}
