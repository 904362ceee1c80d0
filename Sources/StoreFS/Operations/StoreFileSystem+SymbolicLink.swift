import Foundation
import FuseKit
import ObjectGraph

/// `ln -s`: relationships. A link named after a to-one relationship sets it; a link in a to-many
/// folder adds its target, whatever its name; links in entity directories are a copy's subentity
/// links. A link under another name in an object folder sets the one to-one relationship that
/// can hold its target, or is `ln -sfn`'s temporary link (made under a temporary name and renamed
/// over the old one). A target outside the mount, or that no relationship there can hold, is
/// EINVAL: every link made is kept as a relationship.
///
/// While a copy fills a folder mkdir made, a link may name an object not copied yet
/// (`../../Project/p7`, in exactly the form storefs shows): it waits, and becomes the relationship
/// when that object is made. Anywhere else a link to an object that does not exist is ENOENT.
extension StoreFileSystem {
    public func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context request: RequestContext)
        throws(FileSystemError) -> Entry
    {
        guard !configuration.readOnly else { throw .readOnly }
        let directory = try node(parent)
        switch directory {
        case .object(let object):
            let entity = model[object.entity]
            guard let index = entity.allRelationships.firstIndex(where: { $0.name == name }) else {
                guard entity.attribute(named: name) == nil else { throw .notPermitted }
                if PrimaryKey(reference: name) != nil {
                    // `ln -s ../../Department/p3 Employee/p1/department` while department is set:
                    // ln follows the link into the department's folder and makes p3 there.
                    logger.error(
                        "ln -s \(target) \(describe(object))/\(name): an object folder holds no links named like objects; to replace a set relationship use ln -sfn")
                    throw .notPermitted
                }
                return try entry(for: linkUnderOtherName(name, target: target, in: object))
            }
            let relationship = entity.allRelationships[index]
            guard !relationship.isToMany else {
                logger.error("ln -s \(target) \(describe(object))/\(name): a to-many relationship is a folder; link inside it")
                throw .notPermitted
            }
            guard let destination = try resolve(target, from: directory, for: relationship) else {
                return try entry(for: waitingLink(named: name, in: directory, of: object, target: target, for: relationship))
            }
            try setToOne(object, index, destination: destination)
            return try entry(for: .toOne(object, index))
        case .toMany(let object, let index):
            // A link of any name is a member: the name it shows under is its target's (`pN`).
            let relationship = model[object.entity].allRelationships[index]
            guard let named = try resolvePath(target, from: directory) else {
                logger.error("ln -s \(target) \(describe(object))/\(relationship.name)/\(name): the target is not an object folder (../../../Entity/pN) of this mount")
                throw .invalid
            }
            copyIn.noteLink(to: .init(root: model[named.entity].rootID, key: named.key), in: relationship.name, of: object)
            guard let destination = try resolve(target, from: directory, for: relationship) else {
                return try entry(for: waitingLink(named: name, in: directory, of: object, target: target, for: relationship))
            }
            try addMember(object, index, destination)
            if name != destination.key.description {
                // A name other than a key finds it until the next commit, so that the rename
                // `ln -sf` makes next (its temporary name onto pN) succeeds.
                if PrimaryKey(reference: name) == nil { scratch.alias(name, in: directory, to: .member(destination)) }
                invalidateEntry(parent: directory, name: name)
            }
            return try entry(for: .member(destination))
        case .fetched(let object, _) where copyIn.isFresh(object):
            // A copy brings the computed links too: kept as scratch links while the copy lasts.
            guard try resolvePath(target, from: directory) != nil else {
                logger.error("ln -s \(target) \(name): the target is not an object folder of this mount")
                throw .invalid
            }
            return try entry(for: .scratch(scratch.create(named: name, in: directory, linkTarget: target)))
        case .fetched, .template, .templates:
            logger.error("ln -s \(target) \(name): fetched properties are computed by their predicate and read-only")
            throw .notPermitted
        case .entity(let entity):
            // A copy of an entity directory brings the links to its subentities' objects: they
            // are there already (or will be, once copied), so the link is accepted as it is.
            guard let key = PrimaryKey(reference: name), Node.fits(key),
                let named = try resolvePath(target, from: directory), named.key == key,
                model.entity(named.entity, isKindOf: entity), named.entity != entity, target == "../\(model[named.entity].name)/\(name)"
            else {
                logger.error("ln -s \(target) \(model[entity].name)/\(name): links here are the subentities' objects (../Sub/pN)")
                throw .notPermitted
            }
            if let object = try engine({ () throws(ObjectGraphError) in try context.objectID(forKey: key, in: entity) },
                "ln -s"), object.entity == named.entity
            {
                return try entry(for: .subentityLink(object))
            }
            let serial = scratch.create(named: name, in: directory, linkTarget: target)
            copyIn.addWaitingLink(serial, to: CopyInSession.LinkTarget(root: model[entity].rootID, key: key))
            return try entry(for: .scratch(serial))
        default:
            logger.error("ln -s \(target) \(name): links can only be made for relationships")
            throw .notPermitted
        }
    }

    /// A link in an object folder under a name that is no property's. Its target must be an
    /// object folder of this mount that a to-one relationship of the object can hold: when one
    /// relationship can, the link sets it (the name finds it until the next commit, for the
    /// rename `ln -sfn` makes next); when several can and one of them is set, it is `ln -sfn`'s
    /// temporary link, kept in memory for the rename that names the relationship. Anything else
    /// is EINVAL: such a link could not be kept.
    private func linkUnderOtherName(_ name: String, target: String, in object: ObjectID) throws(FileSystemError) -> Node {
        let directory = Node.object(object)
        let entity = model[object.entity]
        guard let named = try resolvePath(target, from: directory) else {
            logger.error("ln -s \(target) \(describe(object))/\(name): the target is not an object folder (../../Entity/pN) of this mount")
            throw .invalid
        }
        let candidates = entity.allRelationships.indices.filter { index in
            let relationship = entity.allRelationships[index]
            guard !relationship.isToMany, let destination = model.entityID(named: relationship.destinationEntityName) else {
                return false
            }
            return model.entity(named.entity, isKindOf: destination)
        }
        guard !candidates.isEmpty else {
            logger.error(
                "ln -s \(target) \(describe(object))/\(name): no to-one relationship of \(entity.name) holds \(model[named.entity].name) objects; links are made under a relationship's name")
            throw .invalid
        }
        if candidates.count == 1, let index = candidates.first {
            guard let destination = try resolve(target, from: directory, for: entity.allRelationships[index]) else {
                logger.error("ln -s \(target) \(describe(object))/\(name): \(describe(named)) does not exist")
                throw .notFound
            }
            try setToOne(object, index, destination: destination)
            scratch.alias(name, in: directory, to: .toOne(object, index))
            invalidateEntry(parent: directory, name: name)
            return .toOne(object, index)
        }
        let snapshot = try snapshot(of: object)
        guard candidates.contains(where: { snapshot.toOne[entity.allRelationships[$0].name] != nil }) else {
            logger.error(
                "ln -s \(target) \(describe(object))/\(name): several relationships of \(entity.name) hold \(model[named.entity].name) objects (\(candidates.map { entity.allRelationships[$0].name }.joined(separator: ", "))); make the link under the relationship's name")
            throw .invalid
        }
        return .scratch(scratch.create(named: name, in: directory, linkTarget: target))
    }

    /// A link to an object that does not exist yet, in a folder a copy is filling: kept as a
    /// scratch link and applied when the object is made. The target must be what storefs itself
    /// shows for such a link (`../../Entity/pN` from an object folder, one more `../` from a
    /// to-many folder) and name an entity the relationship holds.
    private func waitingLink(
        named name: String, in directory: Node, of object: ObjectID, target: String, for relationship: RelationshipDescription
    ) throws(FileSystemError) -> Node {
        guard let named = try resolvePath(target, from: directory) else { throw .invalid }
        guard copyIn.isFresh(object) else {
            logger.error("ln -s \(target) \(describe(object))/\(name): \(describe(named)) does not exist")
            throw .notFound
        }
        let up = directory.isToManyFolder ? "../../../" : "../../"
        guard target == "\(up)\(model[named.entity].name)/\(named.key)", Node.fits(named.key),
            let destinationEntity = model.entityID(named: relationship.destinationEntityName),
            model.entity(named.entity, isKindOf: destinationEntity)
        else {
            logger.error(
                "ln -s \(target) \(describe(object))/\(name): a link to an object not made yet must read \(up)\(relationship.destinationEntityName)/pN")
            throw .invalid
        }
        let serial = scratch.create(named: name, in: directory, linkTarget: target)
        copyIn.addWaitingLink(serial, to: CopyInSession.LinkTarget(root: model[named.entity].rootID, key: named.key))
        logger.debug("ln -s \(target) \(name): the object does not exist yet; the link waits for it")
        return .scratch(serial)
    }

    /// Applies the links that were waiting for `object`.
    func resolveWaitingLinks(to object: ObjectID) {
        for serial in copyIn.takeWaitingLinks(to: CopyInSession.LinkTarget(root: model[object.entity].rootID, key: object.key)) {
            guard let link = scratch.remove(serial), let target = link.linkTarget else { continue }
            do throws(FileSystemError) {
                switch link.parent {
                case .object(let source):
                    if let index = model[source.entity].allRelationships.firstIndex(where: { $0.name == link.name }) {
                        try setToOne(source, index, destination: object)
                    }
                case .toMany(let source, let index):
                    try addMember(source, index, object)
                default:
                    break
                }
            } catch {
                logger.error("ln -s \(target) \(link.name): \(describe(object)) appeared but the link failed (\(error))")
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
        try engine({ () throws(ObjectGraphError) in
            try context.setDestination(destination, of: relationship.name, for: object)
        }, "ln -s \(describe(destination)) \(describe(object))/\(relationship.name)")
        copyIn.show(relationship.name, in: object)
        removals.unhide(.property(relationship.name), in: object)
        changed(object)
        invalidateRelationship(relationship.name, of: object, touching: [destination] + (old.map { [$0] } ?? []))
        if let displaced, displaced != object { invalidateRelationship(relationship.name, of: displaced, touching: []) }
    }

    /// Adds `destination` to to-many relationship `index` of `object`; in a folder being copied
    /// in, an ordered relationship follows the order its links were made in.
    func addMember(_ object: ObjectID, _ index: Int, _ destination: ObjectID) throws(FileSystemError) {
        let relationship = model[object.entity].allRelationships[index]
        try engine({ () throws(ObjectGraphError) in
            try context.addDestination(destination, to: relationship.name, of: object)
            if relationship.isOrdered, let order = copyIn.linkOrder(of: relationship.name, in: object) {
                let position = Dictionary(order.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { a, _ in a })
                let current = try context.destinations(of: relationship.name, for: object)
                let rank = { (id: ObjectID) in
                    position[CopyInSession.LinkTarget(root: self.model[id.entity].rootID, key: id.key)] ?? Int.max
                }
                let sorted = current.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
                if sorted != current { try context.setDestinations(sorted, of: relationship.name, for: object) }
            }
        }, "ln -s \(describe(destination)) \(describe(object))/\(relationship.name)/")
        copyIn.showMember(destination, of: relationship.name, in: object)
        removals.unhide(.member(relationship: relationship.name, destination), in: object)
        changed(object)
        invalidateRelationship(relationship.name, of: object, touching: [destination])
    }
}
