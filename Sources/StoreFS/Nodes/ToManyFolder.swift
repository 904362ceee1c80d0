import Foundation
import FuseKit
import ObjectGraph

/// A to-many relationship's folder in an object folder: a link per member, named by its key
/// (`projects/p2 -> ../../../Project/p2`), in order for an ordered relationship (`ls -U`).
///
/// `ln -s` adds a member, whatever the link's name (it shows under its target's key); `rm`
/// removes one; the inverses follow. `setfattr -n user.order -v "p3 p1 p2"` reorders an ordered
/// relationship. The links `rm -r` removes on its way to deleting the object are only hidden
/// (``RemovalLog``).
struct ToManyFolder: NodeType {
    static let orderName = "user.order"

    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { .object(node.object) }

    func relationship(of node: Node, in mapping: Mapping) throws(FileSystemError) -> RelationshipDescription {
        guard mapping.isValid(node.entity), node.property < mapping.model[node.entity].allRelationships.count else {
            throw .notFound
        }
        return mapping.model[node.entity].allRelationships[node.property]
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        _ = try relationship(of: node, in: mapping)
        _ = try mapping.snapshot(of: node.object, known: known)
        // Its own time, which moves when its members change, not when the object's values do.
        return mapping.make(node, .directory, time: mapping.session.fileTimes.time(of: node.inode))
    }

    func members(of node: Node, in mapping: Mapping, _ operation: @autoclosure () -> String) throws(FileSystemError)
        -> [ObjectID]
    {
        let name = try relationship(of: node, in: mapping).name
        let context = mapping.context
        let members = try mapping.engine(
            { () throws(ObjectGraphError) in
                try context.destinations(of: name, for: node.object)
            }, operation())
        return mapping.visibleMembers(members, of: name, in: node.object).filter { Node.fits($0) }
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        if let serial = mapping.session.scratch.named(name, in: node) { return .scratch(serial) }
        if let aliased = mapping.session.scratch.aliased(name, in: node) { return aliased }
        guard let key = PrimaryKey(reference: name), Node.fits(key),
            let member = try members(of: node, in: mapping, "lookup \(name)").first(where: { $0.key == key })
        else { throw .notFound }
        return .member(member)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let members = try members(of: node, in: mapping, "list \(mapping.describe(node))")
        return .names(
            members.map { ($0.key.description, Node.member($0)) }
                + mapping.session.scratch.list(in: node).map { ($0.name, Node.scratch($0.serial)) })
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        return mapping.relationshipAttributes(of: node.object, node.property)
    }

    // MARK: - Changes

    /// A link of any name is a member: the name it shows under is its target's (`pN`).
    func makeLink(named name: String, to target: String, in node: Node, in mapping: Mapping) throws(FileSystemError)
        -> Node
    {
        let object = node.object
        let relationship = try self.relationship(of: node, in: mapping)
        guard let named = try mapping.resolvePath(target, from: node) else {
            mapping.logger.error(
                "ln -s \(target) \(mapping.describe(node))/\(name): the target is not an object folder (../../../Entity/pN) of this mount"
            )
            throw .invalid
        }
        mapping.session.copyIn.noteLink(
            to: .init(root: mapping.model[named.entity].rootID, key: named.key), in: relationship.name, of: object)
        guard let destination = try mapping.resolve(target, from: node, for: relationship) else {
            return try mapping.waitingLink(named: name, in: node, of: object, target: target, for: relationship)
        }
        try mapping.addMember(object, node.property, destination)
        if name != destination.key.description {
            // A name other than a key finds it until the next commit, so that the rename
            // `ln -sf` makes next (its temporary name onto pN) succeeds.
            if PrimaryKey(reference: name) == nil {
                mapping.session.scratch.alias(name, in: node, to: .member(destination))
            }
            mapping.invalidateEntry(parent: node, name: name)
        }
        return .member(destination)
    }

    func waitingLinkFound(named name: String, in node: Node, object: ObjectID, in mapping: Mapping)
        throws(FileSystemError)
    {
        try mapping.addMember(node.object, node.property, object)
    }

    func removeMember(
        _ member: ObjectID, named name: String, in node: Node, by request: RequestContext, in mapping: Mapping
    )
        throws(FileSystemError)
    {
        let object = node.object
        let relationship = try self.relationship(of: node, in: mapping)
        if mapping.session.removals.isEmptying(object, by: request.pid) {
            mapping.session.removals.hide(.member(relationship: relationship.name, member), in: object)
            mapping.noteFolderChange(object)
            mapping.session.fileTimes.touch(node.inode)
            mapping.invalidateEntry(parent: node, name: name)
            mapping.invalidate(node)
            return
        }
        let context = mapping.context
        try mapping.engine(
            { () throws(ObjectGraphError) in
                try context.removeDestination(member, from: relationship.name, of: object)
            }, "rm \(mapping.describe(node))/\(name)")
        mapping.changed(object)
        mapping.invalidateRelationship(relationship.name, of: object, touching: [member])
    }

    /// A scratch link a copy made, renamed onto a key, becomes that member.
    func renameScratch(_ serial: UInt64, named name: String, to newName: String, in node: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        let scratch = mapping.session.scratch
        guard let target = scratch.file(serial)?.linkTarget, PrimaryKey(reference: newName) != nil else {
            throw .notPermitted
        }
        guard let destination = try mapping.resolve(target, from: node, for: try relationship(of: node, in: mapping))
        else {
            throw .notFound
        }
        try mapping.addMember(node.object, node.property, destination)
        scratch.consume(serial, becoming: .member(destination))
        mapping.invalidateEntry(parent: node, name: newName)
        mapping.changed(node.object)
    }

    /// rmdir of an emptied to-many folder hides it for a while, so `rm -r` of its object can pass
    /// through it.
    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    {
        guard try members(of: node, in: mapping, "rmdir").isEmpty else { throw .notEmpty }
        mapping.session.removals.hide(.folder(name), in: node.object)
        mapping.noteFolderChange(node.object)
        mapping.invalidate(folder)
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        [
            mapping.model[node.entity].name, node.key.description,
            mapping.model[node.entity].allRelationships[node.property].name
        ]
    }

    // MARK: - Order

    /// Reordering an ordered relationship with `setfattr -n user.order -v "p3 p1 p2"`.
    func setExtendedAttribute(
        _ name: String, to value: Data, flags: ExtendedAttributeFlags, of node: Node, in mapping: Mapping
    ) throws(FileSystemError) {
        guard name == Self.orderName else { throw .notPermitted }
        let object = node.object
        let relationship = try self.relationship(of: node, in: mapping)
        guard relationship.isOrdered else { throw .notPermitted }
        // A copy in progress: the links were made in order, and some may still wait for their
        // objects; the order they were made in is the order.
        if mapping.session.copyIn.isFresh(object) { return }
        let context = mapping.context
        let current = try mapping.engine(
            { () throws(ObjectGraphError) in
                try context.destinations(of: relationship.name, for: object)
            }, "order")
        let where_ = "setfattr user.order on \(mapping.describe(node))"
        guard let text = String(validating: value, as: UTF8.self) else { throw .invalid }
        let names = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
        guard names.count == current.count else {
            mapping.logger.error("\(where_): name every member exactly once")
            throw .invalid
        }
        var order: [ObjectID] = []
        for name in names {
            guard let key = PrimaryKey(reference: name), let id = current.first(where: { $0.key == key }) else {
                mapping.logger.error("\(where_): \(name) is not a member")
                throw .invalid
            }
            order.append(id)
        }
        guard Set(order).count == current.count else {
            mapping.logger.error("\(where_): name every member exactly once")
            throw .invalid
        }
        try mapping.engine(
            { () throws(ObjectGraphError) in try context.setDestinations(order, of: relationship.name, for: object) },
            "order")
        mapping.changed(object)
        mapping.invalidate(node)
    }
}
