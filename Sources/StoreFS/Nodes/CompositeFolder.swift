import Foundation
import FuseKit
import ObjectGraph

/// A composite attribute's folder (`Entity/pN/author/`): a file per element with a value (named
/// after the element, read and written as an attribute file), a folder per nested composite, and
/// the scratch files editors leave there. The folder shows while the composite has a value (an
/// element that is not nil) and always for a composite that is not optional; a nil composite has
/// no folder, as a nil attribute has no file.
///
/// Writing an element's file sets that element; `rm` of one sets it to nil (refused for an element
/// that is not optional); `rm -r` of the folder sets them all to nil, which is the composite set
/// to nil (an element that is not optional refuses it, as its `rm` does; `rmdir` of the empty
/// folder of a composite that is not optional is refused). `mkdir` of a composite's name is
/// accepted so that a copy can fill it.
struct CompositeFolder: NodeType {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node {
        guard mapping.isValid(node.entity) else { return .object(node.object) }
        return mapping.entry(ofComposite: node.compositeIndex, of: node.object)?.folder ?? .object(node.object)
    }

    private func path(of node: Node, in mapping: Mapping) throws(FileSystemError) -> String {
        guard mapping.isValid(node.entity) else { throw .notFound }
        let paths = mapping.model[node.entity].compositePaths
        guard node.compositeIndex < paths.count else { throw .notFound }
        return paths[node.compositeIndex]
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        let path = try path(of: node, in: mapping)
        let snapshot = try mapping.snapshot(of: node.object, known: known)
        guard
            listed || mapping.compositeShows(node.compositeIndex, of: node.object, snapshot: snapshot)
                || mapping.session.copyIn.isMadeComposite(path, in: node.object)
        else { throw .notFound }
        return mapping.make(node, .directory, time: mapping.session.schedule.modificationTime(of: node.object))
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let object = node.object
        if let serial = mapping.session.scratch.named(name, in: node) { return .scratch(serial) }
        let path = try path(of: node, in: mapping)
        let snapshot = try mapping.snapshot(of: object)
        let members = mapping.compositeMembers(at: path, of: object.entity)
        if let element = members.elements.first(where: { $0.name == name }) {
            let attribute = mapping.model[object.entity].allAttributes[element.index]
            guard
                (snapshot.attributes[attribute.name] != nil && !mapping.isHidden(attribute.name, in: object))
                    || mapping.session.openFiles.sizeBeingWritten(.attribute(object, element.index)) != nil
            else { throw .notFound }
            return .attribute(object, element.index)
        }
        if let folder = members.folders.first(where: { $0.name == name }) {
            guard
                mapping.compositeShows(folder.index, of: object, snapshot: snapshot)
                    || mapping.session.copyIn.isMadeComposite("\(path).\(name)", in: object)
            else { throw .notFound }
            return .compositeFolder(object, folder.index)
        }
        throw .notFound
    }

    func sharedSnapshot(of node: Node, in mapping: Mapping) throws(FileSystemError) -> Snapshot? {
        try mapping.snapshot(of: node.object)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let object = node.object
        let path = try path(of: node, in: mapping)
        let snapshot = try mapping.snapshot(of: object, known: known)
        let members = mapping.compositeMembers(at: path, of: object.entity)
        let attributes = mapping.model[object.entity].allAttributes
        var result: [(String, Node)] = []
        for element in members.elements
        where snapshot.attributes[attributes[element.index].name] != nil
            && !mapping.isHidden(attributes[element.index].name, in: object)
        {
            result.append((element.name, .attribute(object, element.index)))
        }
        for folder in members.folders where mapping.compositeShows(folder.index, of: object, snapshot: snapshot) {
            result.append((folder.name, .compositeFolder(object, folder.index)))
        }
        result += mapping.session.scratch.list(in: node).map { ($0.name, Node.scratch($0.serial)) }
        return .names(result)
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        let path = try path(of: node, in: mapping)
        let entity = mapping.model[node.entity]
        var optional = true
        if let top = entity.composite(named: String(path.prefix { $0 != "." })) {
            optional = !mapping.isRequired(path, in: entity) || top.isOptional
        }
        return [
            "user.attribute.type": Data("Composite".utf8),
            "user.attribute.optional": Data((optional ? "true" : "false").utf8),
            "user.attribute.keyPath": Data(path.utf8)
        ]
    }

    // MARK: - Changes

    /// An element's name makes its file (set when the writer closes); any other name is a
    /// scratch file (an editor's temporary file).
    func createFile(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let object = node.object
        let path = try path(of: node, in: mapping)
        let members = mapping.compositeMembers(at: path, of: object.entity)
        if let element = members.elements.first(where: { $0.name == name }) {
            let attribute = mapping.model[object.entity].allAttributes[element.index]
            guard !attribute.isTransient else { throw .notPermitted }
            mapping.session.copyIn.show(attribute.name, in: object)
            return .attribute(object, element.index)
        }
        if members.folders.contains(where: { $0.name == name }) { throw .exists }
        _ = try mapping.snapshot(of: object)
        if let existing = mapping.session.scratch.named(name, in: node) { return .scratch(existing) }
        return .scratch(mapping.session.scratch.create(named: name, in: node))
    }

    /// A nested composite's folder, for a copy to fill.
    func makeDirectory(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let object = node.object
        let path = try path(of: node, in: mapping)
        guard
            let folder = mapping.compositeMembers(at: path, of: object.entity).folders.first(where: { $0.name == name })
        else {
            mapping.logger.error("mkdir \(mapping.describe(object))/\(path)/\(name): \(path) has no composite \(name)")
            throw .notPermitted
        }
        if (try? child(named: name, of: node, in: mapping)) != nil { throw .exists }
        mapping.session.copyIn.madeComposite("\(path).\(name)", in: object)
        return .compositeFolder(object, folder.index)
    }

    /// A scratch file renamed onto an element sets it (an editor's save).
    func renameScratch(_ serial: UInt64, named name: String, to newName: String, in node: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        let object = node.object
        let path = try path(of: node, in: mapping)
        let members = mapping.compositeMembers(at: path, of: object.entity)
        let scratch = mapping.session.scratch
        let file = scratch.file(serial)
        if let element = members.elements.first(where: { $0.name == newName }), file?.linkTarget == nil {
            try mapping.setContent(file?.content ?? Data(), of: .attribute(object, element.index))
            scratch.consume(serial, becoming: .attribute(object, element.index))
        } else if members.folders.contains(where: { $0.name == newName }) {
            throw .notPermitted
        } else {
            if let existing = scratch.named(newName, in: node) { scratch.remove(existing) }
            scratch.rename(serial, to: newName, in: node)
        }
        mapping.invalidateEntry(parent: node, name: newName)
        mapping.changed(object)
    }

    /// rmdir: an empty composite folder of an optional composite goes (the composite is nil); a
    /// composite that is not optional cannot be removed.
    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    {
        let object = node.object
        let path = try path(of: node, in: mapping)
        let entity = mapping.model[object.entity]
        let snapshot = try mapping.snapshot(of: object)
        let hasValue = entity.allAttributes.contains {
            $0.composite != nil && $0.name.hasPrefix(path + ".") && snapshot.attributes[$0.name] != nil
                && !mapping.isHidden($0.name, in: object)
        }
        if hasValue { throw .notEmpty }
        let emptied = entity.allAttributes.contains {
            $0.composite != nil && $0.name.hasPrefix(path + ".") && mapping.session.removals.hides($0.name, in: object)
        }
        if emptied {
            // `rm -r` of the object (or of this folder) whose removals are hidden until the
            // object's rmdir: they go with the object, or are applied once its folder settles.
            mapping.session.removals.hide(.folder(path), in: object)
            mapping.noteFolderChange(object)
            mapping.session.copyIn.forgetComposite(path, in: object)
            mapping.invalidate(folder)
            return
        }
        if mapping.isRequired(path, in: entity) {
            mapping.logger.error(
                "rmdir \(mapping.describe(object))/\(path): the composite \(path) is not optional and cannot be removed"
            )
            throw .notPermitted
        }
        mapping.session.copyIn.forgetComposite(path, in: object)
        mapping.invalidateEntry(parent: folder, name: name)
    }

    func rename(_ node: Node, named name: String, to newName: String, in folder: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error(
            "mv \(name) \(newName) in \(mapping.describe(folder)): a composite's folder cannot be renamed")
        throw .notPermitted
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        guard let path = try? path(of: node, in: mapping) else { return [] }
        return [mapping.model[node.entity].name, node.key.description] + path.split(separator: ".").map(String.init)
    }
}
