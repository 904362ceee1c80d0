import Foundation
import FuseKit
import ObjectGraph

/// A fetched property's folder in an object folder: read-only links to the objects its predicate
/// selects, evaluated when first listed and kept until something changes (``Mapping/computedMembers(of:evaluate:)``);
/// `touch` on the folder evaluates it again (Core Data's refreshObject). Reachable by name, listed
/// only with `-o list_fetched`.
///
/// While a copy fills the object's folder, the links it brings are kept as scratch links; `rm -r`
/// of the object passes through the folder (its links are hidden, not refused).
struct FetchedFolder: NodeType {
    var isDirectory: Bool { true }
    /// A listing evaluated while a change landed must not stay.
    var keepsListings: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { .object(node.object) }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard mapping.hasFetchedFolder(node.object, node.property) else { throw .notFound }
        _ = try mapping.snapshot(of: node.object, known: known)
        return mapping.make(node, .directory, permissions: 0o555)
    }

    func members(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [ObjectID] {
        try mapping.computedMembers(of: node) { () throws(FileSystemError) in
            let object = node.object
            guard mapping.hasFetchedFolder(object, node.property) else { throw .notFound }
            let entity = mapping.model[object.entity]
            let property = entity.allFetchedProperties[node.property]
            guard let predicate = mapping.predicates.predicate(of: property.name, in: entity, model: mapping.model),
                let destination = mapping.model.entityID(named: property.destinationEntityName)
            else { throw .notFound }
            let context = mapping.context
            return try mapping.engine(
                { () throws(ObjectGraphError) in
                    try context.objects(
                        matching: predicate, of: destination, includingSubentities: true, source: object,
                        fetchedProperty: property)
                }, "evaluate \(mapping.describe(object))/\(property.name)")
        }
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        if let serial = mapping.session.scratch.named(name, in: node) { return .scratch(serial) }
        // While a copy fills a new folder, its fetched folders hold what the copy put there.
        if mapping.session.copyIn.isFresh(node.object) { throw .notFound }
        guard let key = PrimaryKey(reference: name),
            let member = try members(of: node, in: mapping).first(where: { $0.key == key })
        else { throw .notFound }
        return .member(member)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let computed = mapping.session.copyIn.isFresh(node.object) ? [] : try members(of: node, in: mapping)
        return .names(
            computed.map { ($0.key.description, Node.member($0)) }
                + mapping.session.scratch.list(in: node).map { ($0.name, Node.scratch($0.serial)) })
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        let property = mapping.model[node.entity].allFetchedProperties[node.property]
        var result = [
            "user.fetched.entity": Data(property.destinationEntityName.utf8),
            "user.fetched.predicate": Data(property.predicateString.utf8)
        ]
        // Why its last evaluation stopped at a limit, until one succeeds.
        if let reason = mapping.queryFailures.reason(for: node) { result[RootFolder.errorName] = Data(reason.utf8) }
        return result
    }

    /// `touch` evaluates the folder again.
    func touch(_ node: Node, in mapping: Mapping) throws(FileSystemError) {
        mapping.fetchedResults.drop(node)
        mapping.invalidate(node)
    }

    // MARK: - Changes

    /// A copy brings the computed links too: kept as scratch links while the copy lasts.
    func makeLink(named name: String, to target: String, in node: Node, in mapping: Mapping) throws(FileSystemError)
        -> Node
    {
        guard mapping.session.copyIn.isFresh(node.object) else {
            mapping.logger.error(
                "ln -s \(target) \(name): fetched properties are computed by their predicate and read-only")
            throw .notPermitted
        }
        guard try mapping.resolvePath(target, from: node) != nil else {
            mapping.logger.error("ln -s \(target) \(name): the target is not an object folder of this mount")
            throw .invalid
        }
        return .scratch(mapping.session.scratch.create(named: name, in: node, linkTarget: target))
    }

    /// Removing a computed link changes nothing: `rm -r` of the object removes them on the way,
    /// so the folder is hidden for a while (or until the object goes) rather than refused, which
    /// would stop `rm -r` half-way.
    func removeMember(
        _ member: ObjectID, named name: String, in node: Node, by request: RequestContext, in mapping: Mapping
    )
        throws(FileSystemError)
    {
        try removeFolder(
            node, named: mapping.model[node.entity].allFetchedProperties[node.property].name,
            from: .object(node.object), in: mapping)
    }

    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    {
        mapping.session.removals.hide(.folder(name), in: node.object)
        mapping.noteFolderChange(node.object)
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        [
            mapping.model[node.entity].name, node.key.description,
            mapping.model[node.entity].allFetchedProperties[node.property].name
        ]
    }

    func createFile(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        mapping.logger.error("create \(name): fetched properties are computed by their predicate and read-only")
        throw .notPermitted
    }
}
