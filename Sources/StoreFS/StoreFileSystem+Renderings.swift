import Foundation
import FuseKit
import ObjectGraph

/// Renderings of archived values (``ArchivedValueRendering``): `ATTR.json` beside a binary or
/// transformable attribute whose bytes are a keyed archive or a binary property list.
///
/// Like fetched properties they are reachable by name and not listed, so `cp -a`, `diff -r`,
/// `find` and `grep -r` of a mount see the raw bytes only, once; they are read-only (EPERM for
/// any change), their size is exact, and a value that is not such a property list has none
/// (ENOENT).
extension StoreFileSystem {
    /// The rendering node `name` names in `object`'s folder, if it is `ATTR.json` and the value
    /// of ATTR renders.
    func renderingNode(named name: String, in object: ObjectID, snapshot: Snapshot) -> Node? {
        guard name.hasSuffix(ArchivedValueRendering.suffix) else { return nil }
        let base = String(name.dropLast(ArchivedValueRendering.suffix.count))
        let attributes = model[object.entity].allAttributes
        guard let index = attributes.firstIndex(where: { $0.name == base }), Self.isRenderable(attributes[index].type),
            case .data? = snapshot.attributes[base], !isHidden(base, in: object)
        else { return nil }
        let node = Node.rendering(object, index)
        return (try? renderedContent(of: node)) == nil ? nil : node
    }

    static func isRenderable(_ type: AttributeType) -> Bool { type == .binaryData || type == .transformable }

    /// Whether `name` is where a rendering of one of `object`'s attributes would be (`ATTR.json`
    /// of a binary or transformable ATTR), whether or not its value renders: such names are not
    /// for scratch files, which would hide the rendering.
    func isRenderingName(_ name: String, of object: ObjectID) -> Bool {
        guard name.hasSuffix(ArchivedValueRendering.suffix), object.entity.rawValue >= 1,
            object.entity.rawValue <= model.entities.count
        else { return false }
        let base = String(name.dropLast(ArchivedValueRendering.suffix.count))
        return model[object.entity].attribute(named: base).map { Self.isRenderable($0.type) } ?? false
    }

    /// The rendering's text (kept for large ones, as values' texts are).
    func renderedContent(of node: Node) throws(FileSystemError) -> Data {
        guard case .rendering(let object, let index) = node else { throw .notFound }
        if let kept = renderedValues.kept(node) { return kept }
        let generation = renderedValues.generation
        let (attribute, value) = try attributeValue(object, index)
        guard Self.isRenderable(attribute.type), case .data(let bytes) = value else { throw .notFound }
        var rendered: Data?
        let content = renderedValues.render(node, generation: generation) {
            rendered = ArchivedValueRendering.json(of: bytes)
            return rendered ?? Data()
        }
        guard rendered != nil else { throw .notFound }
        return content
    }

    /// The names of the renderings an attribute file has (`json`), for its xattrs.
    func renderings(of object: ObjectID, _ index: Int) -> [String] {
        guard (try? renderedContent(of: .rendering(object, index))) != nil else { return [] }
        return [String(ArchivedValueRendering.suffix.dropFirst())]
    }
}
