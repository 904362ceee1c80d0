import Foundation
import FuseKit
import ObjectGraph

/// `rm`: an attribute file sets the value to nil, a to-one link clears the relationship, a link
/// in a to-many folder removes that destination, a scratch file goes. A value that is not
/// optional, or that the store computes, cannot be removed (EPERM at once).
///
/// The process that opened the object's folder last is emptying it to delete the object (`rm
/// -r`, `find -delete`): its removals are hidden instead, and the rmdir that follows deletes the
/// object as it is (``RemovalLog``).
extension StoreFileSystem {
    public func unlink(parent: InodeNumber, name: String, context request: RequestContext) throws(FileSystemError) {
        guard !configuration.readOnly else { throw .readOnly }
        let directory = try node(parent)
        switch directory {
        case .object(let object):
            let target = try child(named: name, in: directory)
            switch target {
            case .scratch(let serial):
                scratch.remove(serial)
                return
            case .attribute, .toOne:
                if removals.isEmptying(object, by: request.pid) {
                    removals.hide(.property(name), in: object)
                } else {
                    try removeNow(name, of: object, target)
                }
            case .toMany:
                throw .isDirectory
            case .rendering:
                logger.error("rm \(describe(object))/\(name): a rendering of a value is computed and cannot be removed")
                throw .notPermitted
            default:
                throw .notFound
            }
            schedule.noteChange(object)
            invalidateEntry(parent: directory, name: name)
            invalidate(.object(object))
        case .toMany(let object, let index):
            let target = try child(named: name, in: directory)
            if case .scratch(let serial) = target {
                scratch.remove(serial)
                return
            }
            guard case .member(let destination) = target else { throw .notFound }
            let relationship = model[object.entity].allRelationships[index]
            if removals.isEmptying(object, by: request.pid) {
                removals.hide(.member(relationship: relationship.name, destination), in: object)
                schedule.noteChange(object)
                invalidateEntry(parent: directory, name: name)
                invalidate(directory)
                return
            }
            try engine({ () throws(ObjectGraphError) in
                try context.removeDestination(destination, from: relationship.name, of: object)
            }, "rm \(describe(object))/\(relationship.name)/\(name)")
            changed(object)
            invalidateRelationship(relationship.name, of: object, touching: [destination])
        case .fetched(let object, let index):
            // A fetched property is computed: removing its links changes nothing. `rm -r` of the
            // object removes them on the way, so the folder is hidden for a while (or until the
            // object goes) rather than refused, which would stop `rm -r` half-way.
            let target = try child(named: name, in: directory)
            if case .scratch(let serial) = target {
                scratch.remove(serial)
                return
            }
            removals.hide(.folder(model[object.entity].allFetchedProperties[index].name), in: object)
            schedule.noteChange(object)
            invalidate(.object(object))
        case .entity:
            let target = try child(named: name, in: directory)
            if case .scratch(let serial) = target {
                scratch.remove(serial)
                return
            }
            throw .isDirectory
        default:
            throw .notPermitted
        }
    }

    /// Removes attribute or to-one `name` of `object` (the node `target`) now: nil where it is
    /// optional and the store does not compute it, EPERM otherwise.
    func removeNow(_ name: String, of object: ObjectID, _ target: Node) throws(FileSystemError) {
        let entity = model[object.entity]
        do throws(ObjectGraphError) {
            switch target {
            case .attribute(_, let index):
                guard entity.allAttributes[index].isOptional else { throw Self.notRemovable(name) }
                try context.setValue(nil, of: name, for: object)
                changed(object)
            case .toOne(_, let index):
                guard entity.allRelationships[index].isOptional else { throw Self.notRemovable(name) }
                let old = try context.destination(of: name, for: object)
                try context.setDestination(nil, of: name, for: object)
                changed(object)
                invalidateRelationship(name, of: object, touching: old.map { [$0] } ?? [])
            default:
                throw ObjectGraphError(.notFound, "\(name) is no attribute or to-one relationship")
            }
        } catch {
            throw fileSystemError(error, "rm \(describe(object))/\(name)", logger: logger)
        }
    }

    static func notRemovable(_ name: String) -> ObjectGraphError {
        ObjectGraphError(.notPermitted, "\(name) is not optional and cannot be removed (rm -r of the folder deletes the object)")
    }
}
