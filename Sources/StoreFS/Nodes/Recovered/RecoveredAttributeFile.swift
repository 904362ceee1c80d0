import Foundation
import FuseKit
import ObjectGraph

/// An attribute of a recovered record, as its live object's file would show it (``ValueText``:
/// text with one trailing newline, binary values raw).
struct RecoveredAttributeFile: RecoveredFile {
    func parent(of node: Node, in mapping: Mapping) -> Node { RecoveredNode.record(Int(node.key.rawValue)) }

    func bytes(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data {
        let (attribute, value) = try Self.value(of: node, property: node.property, mapping)
        return ValueText.content(of: value, type: attribute.type)
    }

    /// The attribute at index `property` of the record `node` is in, and its value.
    static func value(of node: Node, property: Int, _ mapping: Mapping) throws(FileSystemError)
        -> (AttributeDescription, AttributeValue)
    {
        let (records, index) = try RecoveredNode.found(node, mapping)
        let attributes = mapping.model[records.records[index].entity].allAttributes
        guard property < attributes.count,
            let value = try mapping.recoveredValues(records, index).attributes[attributes[property].name]
        else { throw .notFound }
        return (attributes[property], value)
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        let (attribute, value) = try Self.value(of: node, property: node.property, mapping)
        var result = ["user.attribute.type": Data(attribute.type.rawValue.utf8)]
        if RenderingFile.isRenderable(attribute.type), case .data(let bytes) = value {
            let names = ValueRendering.names(for: bytes)
            if !names.isEmpty { result["user.attribute.renderings"] = Data(names.joined(separator: ",").utf8) }
        }
        return result
    }
}

/// A rendering of a recovered record's binary value (`ATTR.json`, `.inflated`, `.pb.txt`,
/// `.plist`), as beside a live object's attribute.
struct RecoveredRenderingFile: RecoveredFile {
    func parent(of node: Node, in mapping: Mapping) -> Node { RecoveredNode.record(Int(node.key.rawValue)) }

    func bytes(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data {
        let attribute = node.property & (Node.maximumRenderedAttributes - 1)
        let renderer = node.property >> Node.renderingShift
        guard renderer < ValueRendering.all.count else { throw .notFound }
        let (description, value) = try RecoveredAttributeFile.value(of: node, property: attribute, mapping)
        guard RenderingFile.isRenderable(description.type), case .data(let bytes) = value,
            let rendered = ValueRendering.all[renderer].render(bytes)
        else { throw .notFound }
        return rendered
    }
}
