import Foundation
import FuseKit
import ObjectGraph

/// `rm`: an attribute file sets the value to nil, a to-one link clears the relationship, a link
/// in a to-many folder removes that destination, a scratch file goes. What a removal inside an
/// object folder did is kept until the next commit, so that `rm -r` (which empties the folder
/// before its rmdir) can take it back and delete the object by its rules instead.
///
/// A value that is not optional cannot be removed (EPERM at once), except by the process that is
/// emptying the folder to delete the object (`rm -r`): then the entry is hidden, and shows again
/// (with its value) if the object is not deleted after all.
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
            case .attribute(_, let index):
                let attribute = model[object.entity].allAttributes[index]
                let old = try attributeValue(object, index).1
                if attribute.isOptional {
                    try engine({ () throws(ObjectGraphError) in try context.setValue(nil, of: name, for: object) },
                        "rm \(describe(object))/\(name)")
                    removals.record(.attribute(name, old), in: object)
                } else {
                    try refuseMandatoryRemoval(name, of: object, by: request.pid)
                    // Refused at the next commit unless `rmdir` deletes the object first (rm -r).
                    removals.record(.hiddenProperty(name), in: object)
                }
                changed(object)
                invalidate(.object(object))
            case .toOne(_, let index):
                let relationship = model[object.entity].allRelationships[index]
                guard let old = try snapshot(of: object).toOne[name] else { throw .notFound }
                if relationship.isOptional {
                    try engine({ () throws(ObjectGraphError) in try context.setDestination(nil, of: name, for: object) },
                        "rm \(describe(object))/\(name)")
                    removals.record(.toOne(name, old), in: object)
                    invalidateRelationship(name, of: object, touching: [old])
                } else {
                    try refuseMandatoryRemoval(name, of: object, by: request.pid)
                    removals.record(.hiddenProperty(name), in: object)
                }
                changed(object)
            case .toMany:
                throw .isDirectory
            default:
                throw .notFound
            }
        case .toMany(let object, let index):
            let target = try child(named: name, in: directory)
            if case .scratch(let serial) = target {
                scratch.remove(serial)
                return
            }
            guard case .member(let destination) = target else { throw .notFound }
            let relationship = model[object.entity].allRelationships[index]
            let position = try engine({ () throws(ObjectGraphError) in
                let list = try context.destinations(of: relationship.name, for: object)
                try context.removeDestination(destination, from: relationship.name, of: object)
                return list.firstIndex(of: destination) ?? list.count
            }, "rm \(describe(object))/\(relationship.name)/\(name)")
            removals.record(.member(relationship.name, destination, index: position), in: object)
            changed(object)
            invalidateRelationship(relationship.name, of: object, touching: [destination])
        case .fetched(let object, let index):
            // A fetched property is computed: removing its links changes nothing. `rm -r` of the
            // object removes them on the way, so the folder is hidden until the next commit (or
            // the object goes) rather than refused, which would stop `rm -r` half-way.
            let target = try child(named: name, in: directory)
            if case .scratch(let serial) = target {
                scratch.remove(serial)
                return
            }
            removals.record(.hiddenFolder(model[object.entity].allFetchedProperties[index].name), in: object)
            changed(object)
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

    /// EPERM for removing mandatory value `name`, unless process `pid` is emptying the folder.
    private func refuseMandatoryRemoval(_ name: String, of object: ObjectID, by pid: Int32) throws(FileSystemError) {
        guard !removals.isEmptying(object, by: pid) else { return }
        logger.error("rm \(describe(object))/\(name): \(name) is not optional and cannot be removed (rm -r of the folder deletes the object)")
        throw .notPermitted
    }
}
