import Foundation
import FuseKit
import ObjectGraph

/// rmdir: an object folder deletes the object by its relationships' delete rules, after taking
/// back what `rm -r` removed inside it (so a Deny rule sees the relationships as they were, and a
/// refused delete leaves the object exactly as it was). An emptied to-many or fetched folder is
/// hidden until the next commit, so `rm -r` of an object can pass through it.
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
            guard members.isEmpty else { throw .notEmpty }
            removals.record(.hiddenFolder(name), in: object)
            changed(object)
        case .fetched(let object, let index):
            removals.record(.hiddenFolder(model[object.entity].allFetchedProperties[index].name), in: object)
            changed(object)
        case .subentityLink, .scratch, .member, .toOne, .attribute, .templateMember:
            throw .notDirectory
        default:
            throw .notPermitted
        }
    }

    /// Deletes `object` by its delete rules, after taking back the removals `rm -r` made inside
    /// its folder.
    func deleteObject(_ object: ObjectID) throws(FileSystemError) {
        let taken = removals.takeRecent(in: object)
        try engine({ () throws(ObjectGraphError) in
            for removal in taken.reversed() {
                switch removal {
                case .attribute(let name, let value): try context.setValue(value, of: name, for: object)
                case .toOne(let name, let destination): try context.setDestination(destination, of: name, for: object)
                case .member(let name, let destination, let index):
                    try context.addDestination(destination, to: name, of: object, at: index)
                case .hiddenProperty, .hiddenFolder: break
                }
            }
        }, "rmdir \(describe(object)) (restoring what rm -r removed inside)")
        let related = relatedObjects(of: object)
        do {
            try context.delete(object)
        } catch {
            invalidateRelated([object] + related)
            throw fileSystemError(error, "rmdir \(describe(object))", logger: logger)
        }
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
