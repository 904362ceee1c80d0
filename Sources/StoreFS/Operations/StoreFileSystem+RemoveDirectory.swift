import Foundation
import FuseKit
import ObjectGraph

/// rmdir: an object folder deletes the object by its relationships' delete rules, as it is: what
/// `rm -r` removed inside its folder was only hidden (``RemovalLog``), so a Deny rule sees the
/// relationships, and a refused delete leaves the object exactly as it was and shows it whole. An emptied to-many or
/// fetched folder is hidden for a while, so `rm -r` of an object can pass through it.
extension StoreFileSystem {
    public func removeDirectory(parent: InodeNumber, name: String, context request: RequestContext) throws(FileSystemError) {
        guard !configuration.readOnly else { throw .readOnly }
        let directory = try node(parent)
        let target = try child(named: name, in: directory)
        switch target {
        case .object(let object):
            try deleteObject(object)
        case .toMany(let object, let index):
            let relationship = model[object.entity].allRelationships[index]
            let members = try engine({ () throws(ObjectGraphError) in
                try context.destinations(of: relationship.name, for: object)
            }, "rmdir")
            guard removals.visibleMembers(members, of: relationship.name, in: object).isEmpty else { throw .notEmpty }
            removals.hide(.folder(name), in: object)
            schedule.noteChange(object)
            invalidate(.object(object))
        case .fetched(let object, let index):
            removals.hide(.folder(model[object.entity].allFetchedProperties[index].name), in: object)
            schedule.noteChange(object)
            invalidate(.object(object))
        case .subentityLink, .scratch, .member, .toOne, .attribute, .templateMember:
            throw .notDirectory
        default:
            throw .notPermitted
        }
    }

    /// Deletes `object` by its delete rules; what `rm -r` hid in its folder goes with it.
    func deleteObject(_ object: ObjectID) throws(FileSystemError) {
        let related = relatedObjects(of: object)
        do {
            try context.delete(object)
        } catch {
            // Refused (a Deny rule): what rm -r hid shows again, and the object is as it was.
            removals.take(of: object)
            invalidateRelated([object] + related)
            throw fileSystemError(error, "rmdir \(describe(object))", logger: logger)
        }
        removals.take(of: object)
        scratch.removeAll(of: object)
        _ = copyIn.endFreshness(of: object)
        failures.clear([object])
        changed(nil)
        invalidateRelated(related)
        invalidateAncestorDirectories(of: object)
    }

    private func relatedObjects(of object: ObjectID) -> [ObjectID] {
        var result: [ObjectID] = []
        for relationship in model[object.entity].persistentRelationships {
            if relationship.isToMany {
                result += (try? context.destinations(of: relationship.name, for: object)) ?? []
            } else if let d = try? context.destination(of: relationship.name, for: object) {
                result.append(d)
            }
        }
        return result
    }
}
