import Foundation
import FuseKit
import ObjectGraph

/// An entity's directory: the folders of its objects (`pN`, by primary key), and links to the
/// folders of its subentities' objects (`Person/p6 -> ../Employee/p6`).
///
/// `mkdir pN` inserts an object with that key (any other name gets the next key, and the folder
/// shows under its real name); `rmdir`/`rm -r` deletes one by its delete rules. Listing it reads
/// the keys of its objects only, never their rows.
struct EntityFolder: NodeType {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard mapping.isValid(node.entity) else { throw .notFound }
        return mapping.make(node, .directory)
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        guard mapping.isValid(node.entity) else { throw .notFound }
        if let serial = mapping.session.scratch.named(name, in: node) { return .scratch(serial) }
        // Keys the inode numbers cannot hold are never shown, so never looked for.
        guard let key = PrimaryKey(reference: name), Node.fits(key) else { throw .notFound }
        let context = mapping.context
        guard
            let object = try mapping.engine(
                { () throws(ObjectGraphError) in
                    try context.objectID(forKey: key, in: node.entity)
                }, "lookup \(mapping.model[node.entity].name)/\(name)")
        else { throw .notFound }
        return object.entity == node.entity ? .object(object) : .subentityLink(object)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        guard mapping.isValid(node.entity) else { throw .notFound }
        let context = mapping.context
        let ids = try mapping.engine(
            { () throws(ObjectGraphError) in
                try context.objectIDs(of: node.entity, includingSubentities: true)
            }, "list \(mapping.model[node.entity].name)")
        // A name this listing shows is found by the next lookup, even one another process added
        // since the mount last learned the highest key (KeyBounds).
        if let highest = ids.max(by: { $0.key.rawValue < $1.key.rawValue }) {
            mapping.coordinator.keyBounds.raise(highest, root: mapping.model[node.entity].rootID)
        }
        return .objects(EntityListing(ids))
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        guard mapping.isValid(node.entity) else { throw .notFound }
        let entity = mapping.model[node.entity]
        let context = mapping.context
        let model = mapping.model
        // `count` is what `ls` lists (the entity's objects and its subentities'), `ownCount` the
        // entity's own objects (the folders; the others are links).
        let (own, listed) = try mapping.engine(
            { () throws(ObjectGraphError) -> (Int, Int) in
                var listed = 0
                for member in model.entityAndSubentities(of: node.entity) { listed += try context.count(of: member) }
                return (try context.count(of: node.entity), listed)
            }, "count")
        var result = [
            "user.entity.abstract": Data((entity.isAbstract ? "true" : "false").utf8),
            "user.entity.count": Data(String(listed).utf8),
            "user.entity.ownCount": Data(String(own).utf8)
        ]
        if let parent = entity.parentName { result["user.entity.parent"] = Data(parent.utf8) }
        if !entity.subentityIDs.isEmpty {
            result["user.entity.subentities"] = Data(
                entity.subentityIDs.map { mapping.model[$0].name }.joined(separator: ",").utf8)
        }
        if let className = entity.representedClassName { result["user.entity.class"] = Data(className.utf8) }
        for (name, predicate) in try mapping.savedQueries(of: node.entity) {
            result[Mapping.queryAttributePrefix + name] = Data(predicate.utf8)
        }
        return result
    }

    /// `user.query.NAME`: a saved query (``Mapping/saveQuery(_:_:flags:of:)``).
    func setExtendedAttribute(
        _ name: String, to value: Data, flags: ExtendedAttributeFlags, of node: Node, in mapping: Mapping
    ) throws(FileSystemError) { try mapping.saveQuery(name, value, flags: flags, of: node.entity) }

    func removeExtendedAttribute(_ name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) {
        try mapping.saveQuery(name, nil, of: node.entity)
    }

    // MARK: - Changes

    /// mkdir: a new object (`pN` keeps that key when it is free; any other name gets the next key).
    func makeDirectory(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        guard mapping.isValid(node.entity) else { throw .notFound }
        let entity = node.entity
        let model = mapping.model
        let context = mapping.context
        let requested = try requestedKey(name, in: entity, mapping)
        let object = try mapping.engine(
            { () throws(ObjectGraphError) in try context.insertObject(of: entity, key: requested) },
            "mkdir \(model[entity].name)/\(name)")
        guard Node.fits(object.key) else {
            context.discardChanges(of: [object])
            mapping.logger.error(
                "mkdir \(model[entity].name)/\(name): the next key is \(object.key), beyond what storefs can show (p\(Node.maximumKey)); name the folder with a free key below it"
            )
            throw .noSpace
        }
        // Core Data would refuse to save an object whose mandatory attributes are nil; a folder
        // made by mkdir gets the type's zero value there, to be overwritten. Where the zero value
        // is not valid (a minimum length), the attribute waits for a value.
        // An element of an optional composite is not: the composite starts nil.
        for attribute in model[entity].persistentAttributes
        where !attribute.isOptional && !model[entity].mayBeNil(attribute, isNil: { _ in true }) {
            let current = (try? context.value(of: attribute.name, for: object)) ?? nil
            if current == nil, let zero = attribute.type.zeroValue {
                try? context.setValue(zero, of: attribute.name, for: object)
            }
        }
        // The MKDIR answer, made after this, carries the new folder's attributes.
        mapping.changed(object, kernelUpdates: .object(object))
        mapping.session.copyIn.markFresh(object)
        mapping.resolveWaitingLinks(to: object)
        if requested == nil {
            mapping.logger.info(
                "mkdir \(model[entity].name)/\(name): made \(mapping.describe(object)) (names are keys)")
            mapping.invalidateEntry(parent: node, name: name)
        }
        // This folder's listing and attributes, and the new name in it, the kernel renews with
        // the answer; the parent entities' folders (their links to it) are storefs's to drop.
        mapping.invalidateAncestorDirectories(of: object, except: node.entity)
        return .object(object)
    }

    /// The key a new folder's name asks for: `pN` names key N; a name that looks like a key but is
    /// not one storefs can show (`p0`, `p007`, `p4294967296`) is EINVAL rather than another
    /// object under another name; any other name asks for the next key (nil).
    private func requestedKey(_ name: String, in entity: EntityID, _ mapping: Mapping) throws(FileSystemError)
        -> PrimaryKey?
    {
        let looksLikeKey =
            name.utf8.first == UInt8(ascii: "p") && name.utf8.count > 1
            && name.utf8.dropFirst().allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard looksLikeKey else { return nil }
        let key = PrimaryKey(reference: name)
        if let refusal = ChangeRules.keyRefusal(key) {
            mapping.logger.error("mkdir \(mapping.model[entity].name)/\(name): \(refusal)")
            throw .invalid
        }
        return key
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] { [mapping.model[node.entity].name] }

    /// A copy of an entity directory brings the links to its subentities' objects: they are there
    /// already (or will be, once copied), so the link is accepted as it is.
    func makeLink(named name: String, to target: String, in node: Node, in mapping: Mapping) throws(FileSystemError)
        -> Node
    {
        let entity = node.entity
        let model = mapping.model
        guard mapping.isValid(entity), let key = PrimaryKey(reference: name), Node.fits(key),
            let named = try mapping.resolvePath(target, from: node), named.key == key,
            model.entity(named.entity, isKindOf: entity), named.entity != entity,
            target == "../\(model[named.entity].name)/\(name)"
        else {
            mapping.logger.error(
                "ln -s \(target) \(mapping.isValid(entity) ? model[entity].name : "?")/\(name): links here are the subentities' objects (../Sub/pN)"
            )
            throw .notPermitted
        }
        let context = mapping.context
        if let object = try mapping.engine(
            { () throws(ObjectGraphError) in try context.objectID(forKey: key, in: entity) }, "ln -s"),
            object.entity == named.entity
        {
            return .subentityLink(object)
        }
        let serial = mapping.session.scratch.create(named: name, in: node, linkTarget: target)
        mapping.session.copyIn.addWaitingLink(
            serial, to: CopyInSession.LinkTarget(root: model[entity].rootID, key: key))
        return .scratch(serial)
    }

    func createFile(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        mapping.logger.error("create \(name): files can only be created in object folders")
        throw .notPermitted
    }
}
