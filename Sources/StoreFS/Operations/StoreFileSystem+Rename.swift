import Foundation
import FuseKit
import ObjectGraph

/// rename inside object folders: how editors save (a scratch file renamed onto an attribute sets
/// it), `ln -sfn` (a scratch link renamed onto a to-one relationship sets it), and an editor's
/// backup (an attribute renamed to another name gets a scratch copy).
extension StoreFileSystem {
    public func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: RenameFlags)
        throws(FileSystemError)
    {
        guard !configuration.readOnly else { throw .readOnly }
        guard !flags.contains(.exchange), !flags.contains(.whiteout) else { throw .invalid }
        let from = try node(parent)
        let to = try node(newParent)
        guard let object = from.object, from.isFolderOfObject, to.isFolderOfObject else {
            logger.error("mv \(name) \(newName): only files inside object folders can be renamed")
            throw .notPermitted
        }
        guard from == to else { throw .crossDevice }
        if isRenderingName(newName, of: object) || isRenderingName(name, of: object) {
            logger.error("mv \(name) \(newName) in \(describe(object)): a value's rendering is computed and read-only")
            throw .notPermitted
        }
        let source = try child(named: name, in: from)
        let existing = try? child(named: newName, in: to)
        if flags.contains(.noReplace) && existing != nil { throw .exists }
        let entity = model[object.entity]
        switch (source, to) {
        case (.scratch(let serial), .object):
            let file = scratch.file(serial)
            if let index = entity.allAttributes.firstIndex(where: { $0.name == newName }), file?.linkTarget == nil {
                // An editor's save: the temporary file's content becomes the value.
                try setContent(file?.content ?? Data(), of: .attribute(object, index))
                scratch.consume(serial, becoming: .attribute(object, index))
            } else if let index = entity.allRelationships.firstIndex(where: { $0.name == newName }),
                let target = file?.linkTarget, !entity.allRelationships[index].isToMany
            {
                // `ln -sfn`: the temporary link replaces the relationship.
                guard let destination = try resolve(target, from: to, for: entity.allRelationships[index]) else {
                    logger.error("ln -sfn \(target) \(describe(object))/\(newName): no such object")
                    throw .notFound
                }
                try setToOne(object, index, destination: destination)
                scratch.consume(serial, becoming: .toOne(object, index))
            } else if entity.attribute(named: newName) != nil || entity.relationship(named: newName) != nil {
                throw .notPermitted
            } else {
                if case .scratch(let old)? = existing { scratch.remove(old) }
                scratch.rename(serial, to: newName, in: to)
            }
            invalidateEntry(parent: to, name: newName)
        case (.scratch(let serial), .toMany(_, let index)):
            guard let target = scratch.file(serial)?.linkTarget, PrimaryKey(reference: newName) != nil else {
                throw .notPermitted
            }
            guard let destination = try resolve(target, from: to, for: entity.allRelationships[index]) else {
                throw .notFound
            }
            try addMember(object, index, destination)
            scratch.consume(serial, becoming: .member(destination))
            invalidateEntry(parent: to, name: newName)
        case (.toOne(_, let index), .object) where scratch.aliased(name, in: from) != nil,
            (.member, .toMany(_, let index)) where scratch.aliased(name, in: from) != nil:
            // `ln -sf`'s temporary link, which already became what it names: renamed onto that
            // name, nothing is left to do; onto another, the link would lie about its target.
            let shownAs = if case .member(let destination) = source { destination.key.description } else {
                entity.allRelationships[index].name
            }
            guard newName == shownAs else {
                logger.error("mv \(name) \(newName) in \(describe(object)): the link is \(shownAs) now; a link's name is its target's")
                throw .invalid
            }
            scratch.forgetAlias(name, in: from)
            invalidateEntry(parent: from, name: name)
            return
        case (.attribute(_, let index), .object):
            guard entity.attribute(named: newName) == nil, entity.relationship(named: newName) == nil else {
                logger.error("mv \(name) \(newName) in \(describe(object)): one attribute cannot be renamed onto another; use cp")
                throw .notPermitted
            }
            // An editor's backup (vim renames the file to file~ before writing the new one): the
            // backup gets a copy, and the attribute keeps its value until the new file is written.
            if case .scratch(let old)? = existing { scratch.remove(old) }
            let content = try currentContent(of: .attribute(object, index), handle: FuseKit.FileHandle.none)
            _ = scratch.create(named: newName, in: to, content: content)
            invalidateEntry(parent: from, name: name)
            invalidateEntry(parent: to, name: newName)
        default:
            logger.error("mv \(name) \(newName) in \(describe(object)): relationships are changed with ln -s and rm")
            throw .notPermitted
        }
        changed(object)
    }
}
