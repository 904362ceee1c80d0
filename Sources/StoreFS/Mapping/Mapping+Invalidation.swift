import Foundation
import FuseKit
import ObjectGraph

/// Keeping the kernel's caches true: what storefs's own changes touch is invalidated at once,
/// through FuseKit's notification queue (never inline in a request).
extension Mapping {
    /// Invalidates the root, every entity directory and everything about `objects`.
    func invalidateEverythingCached(including objects: [ObjectID]) {
        invalidate(.root)
        // Another process's commit may have added transactions (kept listings of read-only mounts).
        invalidate(HistoryNode.folder)
        for entity in model.entities { invalidate(.entity(entity.id)) }
        invalidateRelated(objects)
    }

    /// Drops the kernel's cached attributes and data of `node`.
    func invalidate(_ node: Node) {
        invalidator.withLock { $0 }?.invalidateInode(node.inode)
    }

    func invalidateEntry(parent: Node, name: String) {
        invalidator.withLock { $0 }?.invalidateEntry(parent: parent.inode, name: name)
    }

    /// Invalidates everything the folders of `objects` show: the folder, its files and links, its
    /// to-many folders and their names.
    func invalidateRelated(_ objects: [ObjectID]) {
        guard let invalidator = invalidator.withLock({ $0 }) else { return }
        for object in Set(objects) where object.entity.rawValue >= 1 && object.entity.rawValue <= model.entities.count {
            let entity = model[object.entity]
            invalidator.invalidateInode(Node.object(object).inode)
            for index in entity.allAttributes.indices where index < Node.maximumAttributeFiles {
                invalidator.invalidateInode(Node.attribute(object, index).inode)
                let (folder, name) = entry(ofAttribute: index, of: object)
                invalidator.invalidateEntry(parent: folder.inode, name: name)
                invalidateRenderings(of: object, index)
            }
            for index in entity.compositePaths.indices {
                invalidator.invalidateInode(Node.compositeFolder(object, index).inode)
                if let (folder, name) = entry(ofComposite: index, of: object) {
                    invalidator.invalidateEntry(parent: folder.inode, name: name)
                }
            }
            for (index, relationship) in entity.allRelationships.enumerated() {
                let node: Node = relationship.isToMany ? .toMany(object, index) : .toOne(object, index)
                invalidator.invalidateInode(node.inode)
                invalidator.invalidateEntry(parent: Node.object(object).inode, name: relationship.name)
            }
        }
    }

    /// Invalidates the renderings of `object`'s attribute `index` (`ATTR.json`, …), which follow
    /// its value: a name that had none may have one now, and sizes change.
    func invalidateRenderings(of object: ObjectID, _ index: Int) {
        guard let invalidator = invalidator.withLock({ $0 }), isValid(object.entity),
            index < model[object.entity].allAttributes.count, index < Node.maximumRenderedAttributes
        else { return }
        let attribute = model[object.entity].allAttributes[index]
        guard RenderingFile.isRenderable(attribute.type), attribute.composite == nil else { return }
        for (renderer, rendering) in ValueRendering.all.enumerated() {
            invalidator.invalidateInode(Node.rendering(object, index, renderer).inode)
            invalidator.invalidateEntry(parent: Node.object(object).inode, name: attribute.name + rendering.suffix)
        }
    }

    /// Invalidates what a change of relationship `name` of `object` touches: that relationship's
    /// link or folder (with the names of `others` in it), and the inverse relationship of each
    /// object in `others` (the old and new destinations), with `object`'s name in it. Only those
    /// nodes: a copy into a mount makes tens of thousands of links.
    func invalidateRelationship(_ name: String, of object: ObjectID, touching others: [ObjectID]) {
        guard let invalidator = invalidator.withLock({ $0 }) else { return }
        let others = Set(others)
        func invalidate(_ relationship: String, of id: ObjectID, members: Set<ObjectID>) {
            guard isValid(id.entity),
                let index = model[id.entity].allRelationships.firstIndex(where: { $0.name == relationship })
            else { return }
            let isToMany = model[id.entity].allRelationships[index].isToMany
            let node: Node = isToMany ? .toMany(id, index) : .toOne(id, index)
            // A to-many folder's time is its own: its members changed.
            if isToMany { session.fileTimes.touch(node.inode) }
            invalidator.invalidateInode(node.inode)
            invalidator.invalidateEntry(parent: Node.object(id).inode, name: relationship)
            invalidator.invalidateInode(Node.object(id).inode)
            // The names of members that came or went: the kernel would otherwise still find a
            // link that left the folder.
            if isToMany {
                for member in members { invalidator.invalidateEntry(parent: node.inode, name: member.key.description) }
            }
        }
        invalidate(name, of: object, members: others)
        guard isValid(object.entity), let relationship = model[object.entity].relationship(named: name),
            let inverse = relationship.inverseName
        else { return }
        for other in others { invalidate(inverse, of: other, members: [object]) }
    }

    /// Invalidates everything that showed the objects a delete removed: their names in their
    /// entities' directories, what their folders held, and their names on the other side of each
    /// relationship they had.
    func invalidateDeleted(_ deleted: [DeletedObject]) {
        for object in deleted {
            invalidateAncestorDirectories(of: object.objectID)
            invalidateRelated([object.objectID])
            for (name, destinations) in object.relationships {
                invalidateRelationship(name, of: object.objectID, touching: destinations)
            }
        }
    }

    /// Invalidates the listings of `objects`' folders and to-many folders (what a fresh folder hid).
    func invalidateListings(of objects: [ObjectID]) {
        let copiedLinks = session.scratch.fetchedLinks(of: objects)
        for link in copiedLinks {
            // Until the kernel forgets the name (below, asynchronously), it may still ask for the
            // copied link's inode: it answers as the member it names, as a consumed scratch entry
            // does. (Removed outright, `diff -r` right after `cp -a` could read ENOENT for a name
            // it had just listed.)
            if let target = link.file.linkTarget, let member = (try? resolvePath(target, from: link.file.parent)) ?? nil
            {
                session.scratch.consume(link.serial, becoming: .member(member))
            } else {
                session.scratch.remove(link.serial)
            }
        }
        guard let invalidator = invalidator.withLock({ $0 }) else { return }
        // The kernel would otherwise keep resolving a copied link's name to the link just removed.
        for link in copiedLinks { invalidator.invalidateEntry(parent: link.file.parent.inode, name: link.file.name) }
        for object in objects {
            invalidator.invalidateInode(Node.object(object).inode)
            for (index, relationship) in model[object.entity].allRelationships.enumerated() where relationship.isToMany
            {
                invalidator.invalidateInode(Node.toMany(object, index).inode)
            }
            for index in model[object.entity].allFetchedProperties.indices {
                invalidator.invalidateInode(Node.fetched(object, index).inode)
            }
        }
    }

    /// Invalidates the listings that show `object`: its entity's directory and its ancestors'
    /// (but `renewedByKernel`'s, the folder a MKDIR the kernel is being answered made it in).
    func invalidateAncestorDirectories(of object: ObjectID, except renewedByKernel: EntityID? = nil) {
        var entity: EntityID? = object.entity
        while let e = entity {
            if e != renewedByKernel {
                invalidate(.entity(e))
                invalidateEntry(parent: .entity(e), name: object.key.description)
            }
            entity = model[e].parentID
        }
    }
}
