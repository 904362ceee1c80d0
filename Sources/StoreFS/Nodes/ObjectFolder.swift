import Foundation
import FuseKit
import ObjectGraph

/// An object's folder (`Entity/pN`): a file per non-nil attribute, a link per set to-one, a folder
/// per to-many, the fetched properties' folders (reachable by name; listed with `-o
/// list_fetched`), renderings of values (`ATTR.json`, reachable by name), and the scratch files
/// editors leave there.
///
/// Creating a file under an attribute's name sets it when the writer closes; any other name is a
/// scratch file, kept in memory (how editors save: a temporary file renamed onto the attribute).
/// `ln -s` sets a to-one. `rm` sets nil or clears; the process that opened the folder last is
/// emptying it to delete the object (`rm -r`), and its removals are only hidden (``RemovalLog``).
struct ObjectFolder: NodeType {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { .entity(node.entity) }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        // Its row says it exists, unless its folder's listing just did.
        if !listed { _ = try mapping.snapshot(of: node.object, known: known) }
        return mapping.make(node, .directory, time: mapping.session.schedule.modificationTime(of: node.object))
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let object = node.object
        if let serial = mapping.session.scratch.named(name, in: node) { return .scratch(serial) }
        if let aliased = mapping.session.scratch.aliased(name, in: node) { return aliased }
        if mapping.isHidden(name, in: object) { throw .notFound }
        let snapshot = try mapping.snapshot(of: object)
        let entity = mapping.model[object.entity]
        if let index = entity.allAttributes.firstIndex(where: { $0.name == name && $0.composite == nil }),
            index < Node.maximumAttributeFiles
        {
            guard
                snapshot.attributes[name] != nil
                    || mapping.session.openFiles.sizeBeingWritten(.attribute(object, index)) != nil
            else { throw .notFound }
            return .attribute(object, index)
        }
        if let index = entity.allRelationships.firstIndex(where: { $0.name == name }) {
            if entity.allRelationships[index].isToMany { return .toMany(object, index) }
            guard snapshot.toOne[name] != nil else { throw .notFound }
            return .toOne(object, index)
        }
        if let folder = mapping.compositeMembers(at: nil, of: object.entity).folders.first(where: { $0.name == name }) {
            guard
                mapping.compositeShows(folder.index, of: object, snapshot: snapshot)
                    || mapping.session.copyIn.isMadeComposite(name, in: object)
            else { throw .notFound }
            return .compositeFolder(object, folder.index)
        }
        if let index = entity.allFetchedProperties.firstIndex(where: { $0.name == name }),
            mapping.hasFetchedFolder(object, index)
        {
            return .fetched(object, index)
        }
        if let rendering = try RenderingFile.node(named: name, in: object, snapshot: snapshot, mapping) {
            return rendering
        }
        throw .notFound
    }

    func sharedSnapshot(of node: Node, in mapping: Mapping) throws(FileSystemError) -> Snapshot? {
        try mapping.snapshot(of: node.object)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        .names(try entries(of: node.object, known: known, in: mapping))
    }

    /// The folder's entries: each non-nil attribute, each set to-one, each to-many, the fetched
    /// properties when they are listed, and the scratch files an editor left there.
    func entries(of object: ObjectID, known: Snapshot?, in mapping: Mapping) throws(FileSystemError) -> [(String, Node)]
    {
        let snapshot = try mapping.snapshot(of: object, known: known)
        let entity = mapping.model[object.entity]
        var result: [(String, Node)] = []
        for (index, attribute) in entity.allAttributes.enumerated()
        where attribute.composite == nil && index < Node.maximumAttributeFiles
            && snapshot.attributes[attribute.name] != nil
        {
            result.append((attribute.name, .attribute(object, index)))
        }
        for folder in mapping.compositeMembers(at: nil, of: object.entity).folders
        where mapping.compositeShows(folder.index, of: object, snapshot: snapshot) {
            result.append((folder.name, .compositeFolder(object, folder.index)))
        }
        for (index, relationship) in entity.allRelationships.enumerated() {
            if relationship.isToMany {
                result.append((relationship.name, .toMany(object, index)))
            } else if snapshot.toOne[relationship.name] != nil {
                result.append((relationship.name, .toOne(object, index)))
            }
        }
        if mapping.configuration.listsFetchedProperties {
            for (index, property) in entity.allFetchedProperties.enumerated()
            where mapping.hasFetchedFolder(object, index) {
                result.append((property.name, .fetched(object, index)))
            }
        }
        result.removeAll { mapping.isHidden($0.0, in: object) }
        result += mapping.session.scratch.list(in: .object(object)).map { ($0.name, Node.scratch($0.serial)) }
        return result
    }

    /// `rm -r` (and `find -delete`) open a folder before they empty it; the kernel may answer
    /// their reads from a listing it kept, but the opening reaches storefs.
    func opened(_ node: Node, by request: RequestContext, in mapping: Mapping) {
        if !mapping.configuration.readOnly { mapping.session.removals.noteOpening(of: node.object, by: request.pid) }
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        let object = node.object
        guard mapping.isValid(object.entity) else { throw .notFound }
        let context = mapping.context
        let version = try mapping.engine({ () throws(ObjectGraphError) in try context.version(of: object) }, "version")
        let entity = mapping.model[object.entity]
        let uri = ObjectURI(storeUUID: try mapping.storeUUID(), entityName: entity.name, key: object.key)
        var result = [
            "user.object.uri": Data(uri.description.utf8),
            "user.object.version": Data(String(version).utf8),
            "user.object.entity": Data(entity.name.utf8)
        ]
        // Fetched properties' folders are reachable by name but not listed (unless -o
        // list_fetched): this says which names there are.
        let fetched = entity.allFetchedProperties.indices.filter { mapping.hasFetchedFolder(object, $0) }
        if !fetched.isEmpty {
            result["user.object.fetchedProperties"] = Data(
                fetched.map { entity.allFetchedProperties[$0].name }.joined(separator: ",").utf8)
        }
        if let reason = mapping.session.failures.reason(for: object) {
            result[RootFolder.errorName] = Data(reason.utf8)
        }
        return result
    }

    // MARK: - Changes

    /// An attribute's name makes its file (set when the handle is flushed); any other name is a
    /// scratch file.
    func createFile(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let object = node.object
        let entity = mapping.model[object.entity]
        if let index = entity.allAttributes.firstIndex(where: { $0.name == name && $0.composite == nil }),
            index < Node.maximumAttributeFiles
        {
            guard !entity.allAttributes[index].isTransient else { throw .notPermitted }
            mapping.session.copyIn.show(name, in: object)
            return .attribute(object, index)
        }
        if entity.relationship(named: name) != nil {
            mapping.logger.error("create \(mapping.describe(object))/\(name): \(name) is a relationship; use ln -s")
            throw .notPermitted
        }
        if RenderingFile.isRenderingName(name, of: object, mapping) {
            mapping.logger.error(
                "create \(mapping.describe(object))/\(name): the name of a value's rendering, which is computed and read-only"
            )
            throw .notPermitted
        }
        _ = try mapping.snapshot(of: object)
        if let existing = mapping.session.scratch.named(name, in: node) { return .scratch(existing) }
        return .scratch(mapping.session.scratch.create(named: name, in: node))
    }

    /// A copy into a folder mkdir made brings its to-many and fetched folders: they are there.
    func makeDirectory(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let object = node.object
        let entity = mapping.model[object.entity]
        if mapping.session.copyIn.isFresh(object) {
            if let index = entity.allFetchedProperties.firstIndex(where: { $0.name == name }),
                mapping.hasFetchedFolder(object, index)
            {
                mapping.session.copyIn.show(name, in: object)
                return .fetched(object, index)
            }
            if let index = entity.allRelationships.firstIndex(where: { $0.name == name && $0.isToMany }) {
                mapping.session.copyIn.show(name, in: object)
                return .toMany(object, index)
            }
        }
        if (try? child(named: name, of: node, in: mapping)) != nil { throw .exists }
        if let folder = mapping.compositeMembers(at: nil, of: object.entity).folders.first(where: { $0.name == name }) {
            // A copy about to fill a composite: its folder shows empty meanwhile.
            mapping.session.removals.unhide(.folder(name), in: object)
            mapping.session.copyIn.madeComposite(name, in: object)
            mapping.session.copyIn.show(name, in: object)
            return .compositeFolder(object, folder.index)
        }
        mapping.logger.error("mkdir \(name): folders can only be made in entity directories (a new object)")
        throw .notPermitted
    }

    /// `ln -s TARGET rel` sets to-one `rel`; a link under another name is ``Mapping/linkUnderOtherName(_:target:in:)``.
    func makeLink(named name: String, to target: String, in node: Node, in mapping: Mapping) throws(FileSystemError)
        -> Node
    {
        let object = node.object
        let entity = mapping.model[object.entity]
        guard let index = entity.allRelationships.firstIndex(where: { $0.name == name }) else {
            guard entity.attribute(named: name) == nil else { throw .notPermitted }
            if PrimaryKey(reference: name) != nil {
                // `ln -s ../../Department/p3 Employee/p1/department` while department is set:
                // ln follows the link into the department's folder and makes p3 there.
                mapping.logger.error(
                    "ln -s \(target) \(mapping.describe(object))/\(name): an object folder holds no links named like objects; to replace a set relationship use ln -sfn"
                )
                throw .notPermitted
            }
            return try mapping.linkUnderOtherName(name, target: target, in: object)
        }
        let relationship = entity.allRelationships[index]
        guard !relationship.isToMany else {
            mapping.logger.error(
                "ln -s \(target) \(mapping.describe(object))/\(name): a to-many relationship is a folder; link inside it"
            )
            throw .notPermitted
        }
        guard let destination = try mapping.resolve(target, from: node, for: relationship) else {
            return try mapping.waitingLink(named: name, in: node, of: object, target: target, for: relationship)
        }
        try mapping.setToOne(object, index, destination: destination)
        return .toOne(object, index)
    }

    func waitingLinkFound(named name: String, in node: Node, object: ObjectID, in mapping: Mapping)
        throws(FileSystemError)
    {
        let source = node.object
        if let index = mapping.model[source.entity].allRelationships.firstIndex(where: { $0.name == name }) {
            try mapping.setToOne(source, index, destination: object)
        }
    }

    /// rmdir of an object folder deletes the object (``Mapping/deleteObject(_:)``).
    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    {
        try mapping.deleteObject(node.object)
    }

    /// A scratch file renamed onto an attribute sets it (an editor's save); a scratch link renamed
    /// onto a to-one sets it (`ln -sfn`); onto another name, it is renamed.
    func renameScratch(_ serial: UInt64, named name: String, to newName: String, in node: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        let object = node.object
        let entity = mapping.model[object.entity]
        let scratch = mapping.session.scratch
        let file = scratch.file(serial)
        if let index = entity.allAttributes.firstIndex(where: { $0.name == newName && $0.composite == nil }),
            index < Node.maximumAttributeFiles, file?.linkTarget == nil
        {
            // An editor's save: the temporary file's content becomes the value.
            try mapping.setContent(file?.content ?? Data(), of: .attribute(object, index))
            scratch.consume(serial, becoming: .attribute(object, index))
        } else if let index = entity.allRelationships.firstIndex(where: { $0.name == newName }),
            let target = file?.linkTarget, !entity.allRelationships[index].isToMany
        {
            // `ln -sfn`: the temporary link replaces the relationship.
            guard let destination = try mapping.resolve(target, from: node, for: entity.allRelationships[index]) else {
                mapping.logger.error("ln -sfn \(target) \(mapping.describe(object))/\(newName): no such object")
                throw .notFound
            }
            try mapping.setToOne(object, index, destination: destination)
            scratch.consume(serial, becoming: .toOne(object, index))
        } else if entity.attribute(named: newName) != nil || entity.relationship(named: newName) != nil
            || entity.composite(named: newName) != nil
        {
            throw .notPermitted
        } else {
            if let existing = scratch.named(newName, in: node) { scratch.remove(existing) }
            scratch.rename(serial, to: newName, in: node)
        }
        mapping.invalidateEntry(parent: node, name: newName)
        mapping.changed(object)
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        [mapping.model[node.entity].name, node.key.description]
    }
}
