import Foundation
import FuseKit
import ObjectGraph

/// Setting relationships through links: what a link's target names (an object folder of this
/// mount, by a path relative to the link's folder or absolute under the mount point), to-ones and
/// to-many members set with their inverses, links that wait for objects a copy has not made yet,
/// and the names links were made under.
extension Mapping {
    /// The entity and key a link target names (`…/Entity/pN`); nil when it names no object folder.
    /// EINVAL when it leaves the mount.
    func resolvePath(_ target: String, from directory: Node) throws(FileSystemError) -> ObjectID? {
        var components: [String]
        if target.hasPrefix("/") {
            guard let mountPoint = configuration.mountPoint, target.hasPrefix(mountPoint + "/") else {
                logger.error("ln -s \(target): an absolute target must lie inside the mount")
                throw .invalid
            }
            components = target.dropFirst(mountPoint.count + 1).split(separator: "/").map(String.init)
        } else {
            components = pathComponents(of: directory)
            for part in target.split(separator: "/") {
                if part == "." || part.isEmpty { continue }
                if part == ".." {
                    guard !components.isEmpty else {
                        logger.error("ln -s \(target): the target leaves the mount")
                        throw .invalid
                    }
                    components.removeLast()
                } else {
                    components.append(String(part))
                }
            }
        }
        guard components.count == 2, let entity = model.entityID(named: components[0]),
            let key = PrimaryKey(reference: components[1])
        else { return nil }
        return ObjectID(entity: entity, key: key)
    }

    /// The object a link target names, checked against the relationship's destination entity;
    /// nil when the path is right but no such object exists (yet). EINVAL when the target is not
    /// an object folder of the destination entity.
    func resolve(_ target: String, from directory: Node, for relationship: RelationshipDescription)
        throws(FileSystemError)
        -> ObjectID?
    {
        guard let named = try resolvePath(target, from: directory) else {
            logger.error("ln -s \(target): the target is not an object folder (Entity/pN) of this mount")
            throw .invalid
        }
        guard let destinationEntity = model.entityID(named: relationship.destinationEntityName),
            model[named.entity].rootID == model[destinationEntity].rootID
        else {
            logger.error(
                "ln -s \(target): \(relationship.name) holds \(relationship.destinationEntityName) objects, not \(model[named.entity].name)"
            )
            throw .invalid
        }
        guard Node.fits(named.key) else { return nil }
        guard
            let object = try engine(
                { () throws(ObjectGraphError) in try context.objectID(forKey: named.key, in: named.entity) },
                "resolve \(target)")
        else { return nil }
        guard model.entity(object.entity, isKindOf: destinationEntity) else {
            logger.error(
                "ln -s \(target): \(relationship.name) holds \(relationship.destinationEntityName) objects, not \(model[object.entity].name)"
            )
            throw .invalid
        }
        return object
    }

    /// A link in an object folder under a name that is no property's. Its target must be an
    /// object folder of this mount that a to-one relationship of the object can hold: when one
    /// relationship can, the link sets it (the name finds it until the next commit, for the
    /// rename `ln -sfn` makes next); when several can and one of them is set, it is `ln -sfn`'s
    /// temporary link, kept in memory for the rename that names the relationship. Anything else
    /// is EINVAL: such a link could not be kept.
    func linkUnderOtherName(_ name: String, target: String, in object: ObjectID) throws(FileSystemError) -> Node {
        let directory = Node.object(object)
        let entity = model[object.entity]
        guard let named = try resolvePath(target, from: directory) else {
            logger.error(
                "ln -s \(target) \(describe(object))/\(name): the target is not an object folder (../../Entity/pN) of this mount"
            )
            throw .invalid
        }
        let candidates = entity.allRelationships.indices.filter { index in
            let relationship = entity.allRelationships[index]
            guard !relationship.isToMany, let destination = model.entityID(named: relationship.destinationEntityName)
            else {
                return false
            }
            return model.entity(named.entity, isKindOf: destination)
        }
        guard !candidates.isEmpty else {
            logger.error(
                "ln -s \(target) \(describe(object))/\(name): no to-one relationship of \(entity.name) holds \(model[named.entity].name) objects; links are made under a relationship's name"
            )
            throw .invalid
        }
        if candidates.count == 1, let index = candidates.first {
            guard let destination = try resolve(target, from: directory, for: entity.allRelationships[index]) else {
                logger.error("ln -s \(target) \(describe(object))/\(name): \(describe(named)) does not exist")
                throw .notFound
            }
            do {
                try setToOne(object, index, destination: destination)
            } catch .exists {
                // Refused for what it would do to a unique key. `ln -sfn` links under a temporary
                // name and renames it onto the relationship's: EEXIST here would read as a name
                // taken and make it try another name (hundreds of thousands of times). The link
                // stays a scratch link, and the rename onto the relationship gets the EEXIST.
                return .scratch(session.scratch.create(named: name, in: directory, linkTarget: target))
            }
            session.scratch.alias(name, in: directory, to: .toOne(object, index))
            invalidateEntry(parent: directory, name: name)
            return .toOne(object, index)
        }
        let snapshot = try snapshot(of: object)
        guard candidates.contains(where: { snapshot.toOne[entity.allRelationships[$0].name] != nil }) else {
            logger.error(
                "ln -s \(target) \(describe(object))/\(name): several relationships of \(entity.name) hold \(model[named.entity].name) objects (\(candidates.map { entity.allRelationships[$0].name }.joined(separator: ", "))); make the link under the relationship's name"
            )
            throw .invalid
        }
        return .scratch(session.scratch.create(named: name, in: directory, linkTarget: target))
    }

    /// A link to an object that does not exist yet, in a folder a copy is filling: kept as a
    /// scratch link and applied when the object is made. The target must be what storefs itself
    /// shows for such a link (`../../Entity/pN` from an object folder, one more `../` from a
    /// to-many folder) and name an entity the relationship holds.
    func waitingLink(
        named name: String, in directory: Node, of object: ObjectID, target: String,
        for relationship: RelationshipDescription
    ) throws(FileSystemError) -> Node {
        guard let named = try resolvePath(target, from: directory) else { throw .invalid }
        guard session.copyIn.isFresh(object) else {
            logger.error("ln -s \(target) \(describe(object))/\(name): \(describe(named)) does not exist")
            throw .notFound
        }
        let up = directory.kind == .toMany ? "../../../" : "../../"
        guard target == "\(up)\(model[named.entity].name)/\(named.key)", Node.fits(named.key),
            let destinationEntity = model.entityID(named: relationship.destinationEntityName),
            model.entity(named.entity, isKindOf: destinationEntity)
        else {
            logger.error(
                "ln -s \(target) \(describe(object))/\(name): a link to an object not made yet must read \(up)\(relationship.destinationEntityName)/pN"
            )
            throw .invalid
        }
        let serial = session.scratch.create(named: name, in: directory, linkTarget: target)
        session.copyIn.addWaitingLink(
            serial, to: CopyInSession.LinkTarget(root: model[named.entity].rootID, key: named.key))
        logger.debug("ln -s \(target) \(name): the object does not exist yet; the link waits for it")
        return .scratch(serial)
    }

    /// Applies the links that were waiting for `object`.
    func resolveWaitingLinks(to object: ObjectID) {
        for serial in session.copyIn.takeWaitingLinks(
            to: CopyInSession.LinkTarget(root: model[object.entity].rootID, key: object.key))
        {
            guard let link = session.scratch.remove(serial), let target = link.linkTarget else { continue }
            do throws(FileSystemError) {
                try link.parent.kind.type.waitingLinkFound(named: link.name, in: link.parent, object: object, in: self)
            } catch {
                logger.error(
                    "ln -s \(target) \(link.name): \(describe(object)) appeared but the link failed (\(error))")
            }
            invalidateEntry(parent: link.parent, name: link.name)
            invalidate(link.parent)
        }
    }

    /// Sets to-one relationship `index` of `object` to `destination`.
    func setToOne(_ object: ObjectID, _ index: Int, destination: ObjectID) throws(FileSystemError) {
        let relationship = model[object.entity].allRelationships[index]
        let old = try snapshot(of: object).toOne[relationship.name]
        // The destination's own partner, if the inverse is to-one: it loses its side of the pair.
        let displaced = model.inverse(of: relationship).flatMap { inverse in
            inverse.isToMany ? nil : (try? snapshot(of: destination))?.toOne[inverse.name]
        }
        try engine(
            { () throws(ObjectGraphError) in
                try context.setDestination(destination, of: relationship.name, for: object)
            }, "ln -s \(describe(destination)) \(describe(object))/\(relationship.name)")
        session.copyIn.show(relationship.name, in: object)
        session.removals.unhide(.property(relationship.name), in: object)
        changed(object)
        invalidateRelationship(relationship.name, of: object, touching: [destination] + (old.map { [$0] } ?? []))
        if let displaced, displaced != object { invalidateRelationship(relationship.name, of: displaced, touching: []) }
    }

    /// Adds `destination` to to-many relationship `index` of `object`; in a folder being copied
    /// in, an ordered relationship follows the order its links were made in.
    func addMember(_ object: ObjectID, _ index: Int, _ destination: ObjectID) throws(FileSystemError) {
        let relationship = model[object.entity].allRelationships[index]
        // The destination's own holder, if the inverse is to-one: it loses the destination.
        let displaced = model.inverse(of: relationship).flatMap { inverse in
            inverse.isToMany ? nil : (try? snapshot(of: destination))?.toOne[inverse.name]
        }
        try engine(
            { () throws(ObjectGraphError) in
                try context.addDestination(destination, to: relationship.name, of: object)
                if relationship.isOrdered, let order = session.copyIn.linkOrder(of: relationship.name, in: object) {
                    let position = Dictionary(
                        order.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { a, _ in a })
                    let current = try context.destinations(of: relationship.name, for: object)
                    let rank = { (id: ObjectID) in
                        position[CopyInSession.LinkTarget(root: self.model[id.entity].rootID, key: id.key)] ?? Int.max
                    }
                    let sorted = current.enumerated().sorted {
                        (rank($0.element), $0.offset) < (rank($1.element), $1.offset)
                    }.map(\.element)
                    if sorted != current { try context.setDestinations(sorted, of: relationship.name, for: object) }
                }
            }, "ln -s \(describe(destination)) \(describe(object))/\(relationship.name)/")
        session.copyIn.showMember(destination, of: relationship.name, in: object)
        session.removals.unhide(.member(relationship: relationship.name, destination), in: object)
        changed(object)
        invalidateRelationship(relationship.name, of: object, touching: [destination])
        if let displaced, displaced != object {
            invalidateRelationship(relationship.name, of: displaced, touching: [destination])
        }
    }

    /// `ln -sf`'s temporary link, which already became what it names: renamed onto the name it
    /// shows under, nothing is left to do; onto another, the link would lie about its target.
    func renameAlias(_ name: String, to newName: String, in folder: Node, shownAs: String) throws(FileSystemError) {
        guard newName == shownAs else {
            logger.error(
                "mv \(name) \(newName) in \(describe(folder)): the link is \(shownAs) now; a link's name is its target's"
            )
            throw .invalid
        }
        session.scratch.forgetAlias(name, in: folder)
        invalidateEntry(parent: folder, name: name)
    }
}
