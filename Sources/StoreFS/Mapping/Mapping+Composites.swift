import FuseKit
import ObjectGraph

/// Where composite attributes show: a composite is a folder named after it in the object's folder
/// (a nested one in its composite's folder), holding a file per element that has a value. The
/// elements are attributes of their own in the model (`author.person`, flattened by
/// ``ManagedObjectModel``), so their files are attribute nodes; the folders are composite-folder
/// nodes naming the composite by its place in the entity's `compositePaths`.
extension Mapping {
    /// The folder that shows attribute `index` of `object` and its name there: the object's folder
    /// and the attribute's name, or an element's composite folder and the element's own name.
    func entry(ofAttribute index: Int, of object: ObjectID) -> (folder: Node, name: String) {
        let attribute = model[object.entity].allAttributes[index]
        guard attribute.composite != nil, let dot = attribute.name.lastIndex(of: ".") else {
            return (.object(object), attribute.name)
        }
        let path = String(attribute.name[..<dot])
        guard let folder = model[object.entity].compositePaths.firstIndex(of: path) else {
            return (.object(object), attribute.name)
        }
        return (.compositeFolder(object, folder), String(attribute.elementName))
    }

    /// The folder holding composite folder `index` of `object`, and the folder's name there.
    func entry(ofComposite index: Int, of object: ObjectID) -> (folder: Node, name: String)? {
        let paths = model[object.entity].compositePaths
        guard index < paths.count else { return nil }
        let path = paths[index]
        guard let dot = path.lastIndex(of: ".") else { return (.object(object), path) }
        let parent = String(path[..<dot])
        guard let parentIndex = paths.firstIndex(of: parent) else { return (.object(object), path) }
        return (.compositeFolder(object, parentIndex), String(path[path.index(after: dot)...]))
    }

    /// The composite folders and element files directly in the folder at `path` (nil: the
    /// object's folder, where composites at the top level show), each with the index that names it.
    func compositeMembers(at path: String?, of entity: EntityID) -> (
        folders: [(name: String, index: Int)], elements: [(name: String, index: Int)]
    ) {
        let description = model[entity]
        var folders: [(String, Int)] = []
        for (index, candidate) in description.compositePaths.enumerated() {
            if let path {
                guard candidate.hasPrefix(path + "."), !candidate.dropFirst(path.count + 1).contains(".") else {
                    continue
                }
                folders.append((String(candidate.dropFirst(path.count + 1)), index))
            } else if !candidate.contains(".") {
                folders.append((candidate, index))
            }
        }
        var elements: [(String, Int)] = []
        if let path {
            for (index, attribute) in description.allAttributes.enumerated()
            where attribute.composite != nil && index < Node.maximumAttributeFiles {
                guard attribute.name.hasPrefix(path + "."),
                    !attribute.name.dropFirst(path.count + 1).contains(".")
                else { continue }
                elements.append((String(attribute.elementName), index))
            }
        }
        return (folders, elements)
    }

    /// Whether composite `index` of `object` shows: it has an element with a value (or one being
    /// written), or it is not optional (nor is any composite it sits in), so it always has a value.
    func compositeShows(_ index: Int, of object: ObjectID, snapshot: Snapshot) -> Bool {
        let description = model[object.entity]
        guard index < description.compositePaths.count else { return false }
        let path = description.compositePaths[index]
        for (attributeIndex, attribute) in description.allAttributes.enumerated()
        where attribute.composite != nil && attribute.name.hasPrefix(path + ".") {
            if snapshot.attributes[attribute.name] != nil { return true }
            if attributeIndex < Node.maximumAttributeFiles,
                session.openFiles.sizeBeingWritten(.attribute(object, attributeIndex)) != nil
            {
                return true
            }
        }
        return isRequired(path, in: description)
    }

    /// Whether the composite at `path` always has a value: it and every composite it sits in are
    /// not optional.
    func isRequired(_ path: String, in entity: EntityDescription) -> Bool {
        let parts = path.split(separator: ".").map(String.init)
        guard let first = parts.first, var current = entity.composite(named: first) else { return false }
        if current.isOptional { return false }
        for part in parts.dropFirst() {
            guard
                let next = current.elements.lazy.compactMap({ element -> CompositeAttributeDescription? in
                    if case .composite(let inner) = element, inner.name == part { return inner }
                    return nil
                }).first
            else { return false }
            if next.isOptional { return false }
            current = next
        }
        return true
    }
}
