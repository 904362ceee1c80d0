import Foundation
import FuseKit
import ObjectGraph

/// Removing: a value or to-one now (nil where it may be, EPERM where not), deleting an object by
/// its delete rules, and the removals `rm -r` hid (``RemovalLog``) applied when no rmdir came for
/// them.
extension Mapping {
    /// Removes attribute or to-one `name` of `object` (the node `target`) now: nil where it is
    /// optional and the store does not compute it, EPERM otherwise.
    func removeNow(_ name: String, of object: ObjectID, _ target: Node) throws(FileSystemError) {
        let entity = model[object.entity]
        do throws(ObjectGraphError) {
            if target.kind == .attribute {
                let attribute = entity.allAttributes[target.property]
                // A composite's element: judged at the commit with its composite's other elements.
                guard attribute.isOptional || attribute.composite != nil else { throw Self.notRemovable(name) }
                try context.setValue(nil, of: name, for: object)
                changed(object)
            } else if target.kind == .toOne {
                guard entity.allRelationships[target.property].isOptional else { throw Self.notRemovable(name) }
                let old = try context.destination(of: name, for: object)
                try context.setDestination(nil, of: name, for: object)
                changed(object)
                invalidateRelationship(name, of: object, touching: old.map { [$0] } ?? [])
            } else {
                throw ObjectGraphError(.notFound, "\(name) is no attribute or to-one relationship")
            }
        } catch {
            throw fileSystemError(error, "rm \(describe(object))/\(name)", logger: logger)
        }
    }

    /// `rm` of attribute or to-one `name` (the node `target`): hidden when the process that
    /// opened the folder last is emptying it (``RemovalLog``), else removed now.
    func removeProperty(_ target: Node, named shownName: String, by request: RequestContext) throws(FileSystemError) {
        let object = target.object
        // A composite's element shows under its own name; the model knows it by its key path.
        var name = shownName
        if target.kind == .attribute, isValid(object.entity), target.property < model[object.entity].allAttributes.count
        {
            name = model[object.entity].allAttributes[target.property].name
            // The composite's folder stays for the rmdir that `rm -r` sends once it is empty.
            if model[object.entity].allAttributes[target.property].composite != nil {
                var path = Substring(name)
                while let dot = path.lastIndex(of: ".") {
                    path = path[..<dot]
                    session.copyIn.madeComposite(String(path), in: object)
                }
            }
        }
        if session.removals.isEmptying(object, by: request.pid) {
            session.removals.hide(.property(name), in: object)
        } else {
            try removeNow(name, of: object, target)
        }
        noteFolderChange(object)
        if target.kind == .attribute, isValid(object.entity), target.property < model[object.entity].allAttributes.count
        {
            let (folder, shown) = entry(ofAttribute: target.property, of: object)
            invalidateEntry(parent: folder, name: shown)
            invalidate(folder)
        } else {
            invalidateEntry(parent: .object(object), name: name)
        }
        invalidate(.object(object))
        if target.kind == .attribute { invalidateRenderings(of: object, target.property) }
    }

    static func notRemovable(_ name: String) -> ObjectGraphError {
        ObjectGraphError(
            .notPermitted, "\(name) is not optional and cannot be removed (rm -r of the folder deletes the object)")
    }

    /// Deletes `object` by its delete rules, as it is: what `rm -r` hid in its folder goes with
    /// it, so a Deny rule sees the relationships, and a refused delete shows the object whole.
    func deleteObject(_ object: ObjectID) throws(FileSystemError) {
        let deleted: [DeletedObject]
        do {
            deleted = try context.delete(object)
        } catch {
            // Refused (a Deny rule): what rm -r hid shows again, and the object is as it was.
            for removal in session.removals.take(of: object) {
                if case .member(let relationship, let member) = removal {
                    invalidateRelationship(relationship, of: object, touching: [member])
                }
            }
            invalidateRelated([object])
            throw fileSystemError(error, "rmdir \(describe(object))", logger: logger)
        }
        for gone in deleted.map(\.objectID) {
            _ = session.removals.take(of: gone)
            session.scratch.removeAll(of: gone)
            _ = session.copyIn.endFreshness(of: gone)
        }
        session.failures.clear(deleted.map(\.objectID))
        changed(nil)
        invalidateDeleted(deleted)
    }

    /// Applies what was removed in folders no rmdir came for (``RemovalLog``): each removal as
    /// if it had been made alone, refused (shown again, with the reason in the log) where it
    /// cannot be.
    func applyRemovals(_ settled: [ObjectID: [RemovalLog.Removal]]) {
        for (object, list) in settled where (try? context.exists(object)) == true {
            let entity = model[object.entity]
            for removal in list {
                switch removal {
                case .property(let name):
                    if let index = entity.allAttributes.firstIndex(where: { $0.name == name }) {
                        try? removeNow(name, of: object, .attribute(object, index))
                    } else if let index = entity.allRelationships.firstIndex(where: { $0.name == name }) {
                        try? removeNow(name, of: object, .toOne(object, index))
                    }
                    invalidateEntry(parent: .object(object), name: name)
                case .member(let relationship, let member):
                    try? engine(
                        { () throws(ObjectGraphError) in
                            try context.removeDestination(member, from: relationship, of: object)
                        }, "rm \(describe(object))/\(relationship)/\(member.key)")
                    invalidateRelationship(relationship, of: object, touching: [member])
                case .folder:
                    break
                }
            }
            invalidate(.object(object))
        }
    }

}
