import Foundation
import FuseKit
import ObjectGraph

/// What a link's target names: an object folder of this mount, by a path relative to the link's
/// folder or absolute under the mount point.
extension StoreFileSystem {
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
    func resolve(_ target: String, from directory: Node, for relationship: RelationshipDescription) throws(FileSystemError)
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
                "ln -s \(target): \(relationship.name) holds \(relationship.destinationEntityName) objects, not \(model[named.entity].name)")
            throw .invalid
        }
        guard Node.fits(named.key) else { return nil }
        guard let object = try engine({ () throws(ObjectGraphError) in try context.objectID(forKey: named.key, in: named.entity) },
            "resolve \(target)")
        else { return nil }
        guard model.entity(object.entity, isKindOf: destinationEntity) else {
            logger.error(
                "ln -s \(target): \(relationship.name) holds \(relationship.destinationEntityName) objects, not \(model[object.entity].name)")
            throw .invalid
        }
        return object
    }

    /// A folder's path below the mount point, as components.
    func pathComponents(of node: Node) -> [String] {
        switch node {
        case .root: []
        case .entity(let e): [model[e].name]
        case .object(let o): [model[o.entity].name, o.key.description]
        case .toMany(let o, let i): [model[o.entity].name, o.key.description, model[o.entity].allRelationships[i].name]
        case .fetched(let o, let i): [model[o.entity].name, o.key.description, model[o.entity].allFetchedProperties[i].name]
        default: []
        }
    }
}
