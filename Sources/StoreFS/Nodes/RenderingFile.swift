import Foundation
import FuseKit
import ObjectGraph

/// A rendering of a binary or transformable value beside its attribute file, one per renderer of
/// ``ValueRendering/all``: `ATTR.json` (a keyed archive or binary property list,
/// ``ArchivedValueRendering``), `ATTR.inflated`, `ATTR.pb.txt`, `ATTR.plist`. The inode says
/// which (``Node/rendering(_:_:_:)``); attributes at index 512 or beyond have none.
///
/// Like fetched properties they are reachable by name and not listed, so `cp -a`, `diff -r`,
/// `find` and `grep -r` of a mount see the raw bytes only, once; they are read-only (EPERM for
/// any change), their size is exact, and a value that is not such a property list has none
/// (ENOENT).
struct RenderingFile: NodeType {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { .object(node.object) }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(
            node, .regularFile, permissions: 0o444, size: try Self.content(of: node, mapping).count,
            time: mapping.session.fileTimes.time(of: Node.attribute(node.object, Self.parts(of: node).index).inode))
    }

    /// Computed from the value: read-only, like fetched properties.
    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult {
        if flags.isWriting { throw mapping.configuration.readOnly ? .readOnly : .notPermitted }
        return try mapping.openFile(node, flags: flags)
    }

    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data {
        try Self.content(of: node, mapping)
    }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error(
            "rm \(mapping.describe(folder))/\(name): a rendering of a value is computed and cannot be removed")
        throw .notPermitted
    }

    // MARK: - Which renderings there are

    static func isRenderable(_ type: AttributeType) -> Bool { type == .binaryData || type == .transformable }

    /// The attribute's index and the rendering a rendering node stands for.
    static func parts(of node: Node) -> (index: Int, renderer: Int) {
        (node.property & (Node.maximumRenderedAttributes - 1), node.property >> Node.renderingShift)
    }

    /// The rendering node `name` names in `object`'s folder, if it is `ATTR.SUFFIX` of a
    /// rendering of ``ValueRendering/all`` and the value of ATTR has it; EIO when the value cannot
    /// be read to say.
    static func node(named name: String, in object: ObjectID, snapshot: Snapshot, _ mapping: Mapping)
        throws(FileSystemError) -> Node?
    {
        guard let (base, rendering) = ValueRendering.split(name),
            let renderer = ValueRendering.all.firstIndex(where: { $0.suffix == rendering.suffix })
        else { return nil }
        let attributes = mapping.model[object.entity].allAttributes
        guard let index = attributes.firstIndex(where: { $0.name == base }), index < Node.maximumRenderedAttributes,
            isRenderable(attributes[index].type), case .data? = snapshot.attributes[base],
            !mapping.isHidden(base, in: object)
        else { return nil }
        let node = Node.rendering(object, index, renderer)
        return try hasContent(node, mapping) ? node : nil
    }

    /// Whether the rendering `node` stands for has bytes: false when the value has none (ENOENT
    /// from ``content(of:_:)``); any other error, such as a value's file that cannot be read, is
    /// the caller's.
    private static func hasContent(_ node: Node, _ mapping: Mapping) throws(FileSystemError) -> Bool {
        do {
            _ = try content(of: node, mapping)
            return true
        } catch let error where error == .notFound {
            return false
        }
    }

    /// Whether `name` is where a rendering of one of `object`'s attributes would be (`ATTR.json`,
    /// `ATTR.pb.txt`, … of a binary or transformable ATTR), whether or not its value renders: such
    /// names are not for scratch files, which would hide the rendering.
    static func isRenderingName(_ name: String, of object: ObjectID, _ mapping: Mapping) -> Bool {
        guard let (base, _) = ValueRendering.split(name), mapping.isValid(object.entity) else { return false }
        return mapping.model[object.entity].attribute(named: base).map { isRenderable($0.type) } ?? false
    }

    /// The rendering's bytes (kept for large ones, as values' texts are); ENOENT when the value
    /// has none. Every renderer is bounded (input, output, depth: docs/SEMANTICS.md).
    static func content(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data {
        if let kept = mapping.renderedValues.kept(node) { return kept }
        let (index, renderer) = parts(of: node)
        guard renderer < ValueRendering.all.count else { throw .notFound }
        let generation = mapping.renderedValues.generation
        let (attribute, value) = try mapping.attributeValue(node.object, index)
        guard isRenderable(attribute.type) else { throw .notFound }
        // A value kept in a file renders from its bytes; one past `max_value_size` has none, and
        // one whose file cannot be read is an error (EIO), not a value without renderings.
        let shown: AttributeValue
        do {
            shown = try mapping.shownValue(value, limit: mapping.configuration.maximumValueSize)
        } catch let error where error == .tooBig {
            throw .notFound
        }
        guard case .data(let bytes) = shown else { throw .notFound }
        var rendered: Data?
        let content = mapping.renderedValues.render(node, generation: generation) {
            rendered = ValueRendering.all[renderer].render(bytes)
            return rendered ?? Data()
        }
        guard rendered != nil else { throw .notFound }
        return content
    }

    /// The names of the renderings an attribute file has (`json`, `inflated`, `pb.txt`, `plist`),
    /// for its xattrs.
    static func renderings(of object: ObjectID, _ index: Int, _ mapping: Mapping) throws(FileSystemError) -> [String] {
        guard mapping.isValid(object.entity), index < mapping.model[object.entity].allAttributes.count,
            index < Node.maximumRenderedAttributes, isRenderable(mapping.model[object.entity].allAttributes[index].type)
        else { return [] }
        var names: [String] = []
        for renderer in ValueRendering.all.indices {
            if try hasContent(.rendering(object, index, renderer), mapping) {
                names.append(String(ValueRendering.all[renderer].suffix.dropFirst()))
            }
        }
        return names
    }
}
