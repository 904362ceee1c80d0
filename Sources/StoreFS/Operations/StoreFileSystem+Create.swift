import Foundation
import FuseKit
import ObjectGraph

/// Creating files in object folders: an attribute's name makes its file (set when the handle is
/// flushed); any other name is a scratch file, kept in memory (editors' temporary files).
extension StoreFileSystem {
    public func create(parent: InodeNumber, name: String, permissions: UInt32, flags: OpenFlags, context request: RequestContext)
        throws(FileSystemError) -> (Entry, OpenResult)
    {
        guard !configuration.readOnly else { throw .readOnly }
        let node = try newFile(named: name, in: try self.node(parent))
        let handle = openFiles.open(node, buffer: node.isAttribute ? Data() : nil)
        changed(node.object)
        // A new attribute file has no value until its writer closes it: its entry is the empty
        // file being written.
        let attributes = node.isAttribute ? writtenFileAttributes(node, size: 0) : try attributes(of: node)
        let entry = Entry(
            attributes: attributes, entryTimeout: configuration.entryTimeout, attributeTimeout: configuration.attributeTimeout)
        return (entry, OpenResult(handle: handle, keepCache: false, directIO: node.isAttribute))
    }

    public func makeNode(parent: InodeNumber, name: String, permissions: UInt32, context request: RequestContext)
        throws(FileSystemError) -> Entry
    {
        guard !configuration.readOnly else { throw .readOnly }
        let node = try newFile(named: name, in: try self.node(parent))
        if node.isAttribute { try setContent(Data(), of: node) }
        return try entry(for: node)
    }

    /// The node a new regular file called `name` becomes: an attribute (set when its handle is
    /// flushed) or a scratch file.
    private func newFile(named name: String, in parent: Node) throws(FileSystemError) -> Node {
        guard case .object(let object) = parent else {
            logger.error("create \(name): files can only be created in object folders")
            throw .notPermitted
        }
        let entity = model[object.entity]
        if let index = entity.allAttributes.firstIndex(where: { $0.name == name }) {
            guard !entity.allAttributes[index].isTransient else { throw .notPermitted }
            copyIn.show(name, in: object)
            return .attribute(object, index)
        }
        if entity.relationship(named: name) != nil {
            logger.error("create \(describe(object))/\(name): \(name) is a relationship; use ln -s")
            throw .notPermitted
        }
        if isRenderingName(name, of: object) {
            logger.error("create \(describe(object))/\(name): the name of a value's rendering, which is computed and read-only")
            throw .notPermitted
        }
        _ = try snapshot(of: object)
        if let existing = scratch.named(name, in: parent) { return .scratch(existing) }
        return .scratch(scratch.create(named: name, in: parent))
    }
}
