import Foundation
import FuseKit
import ObjectGraph

/// mkdir: a new object in an entity directory (`pN` keeps that key when it is free; any other
/// name gets the next key), and the folders a copy brings along (to-many and fetched folders,
/// entity directories of a store made as a copy's target).
extension StoreFileSystem {
    public func makeDirectory(parent: InodeNumber, name: String, permissions: UInt32, context request: RequestContext)
        throws(FileSystemError) -> Entry
    {
        guard !configuration.readOnly else { throw .readOnly }
        let directory = try node(parent)
        if directory == .root, let entity = model.entityID(named: name),
            hiddenEntities.withLock({ $0.remove(name) != nil })
        {
            invalidate(.root)
            return try entry(for: .entity(entity))
        }
        if case .object(let object) = directory, copyIn.isFresh(object),
            let index = model[object.entity].allFetchedProperties.firstIndex(where: { $0.name == name }),
            hasFetchedFolder(object, index)
        {
            // A copy brings the fetched property's folder too: it is there already (computed).
            copyIn.show(name, in: object)
            return try entry(for: .fetched(object, index))
        }
        if case .object(let object) = directory, copyIn.isFresh(object),
            let index = model[object.entity].allRelationships.firstIndex(where: { $0.name == name && $0.isToMany })
        {
            // A copy into a folder mkdir made: its to-many folder is there already.
            copyIn.show(name, in: object)
            return try entry(for: .toMany(object, index))
        }
        guard case .entity(let entity) = directory else {
            if case .object = directory, (try? child(named: name, in: directory)) != nil { throw .exists }
            logger.error("mkdir \(name): folders can only be made in entity directories (a new object)")
            throw .notPermitted
        }
        let requested = try requestedKey(name, in: entity)
        let object = try engine({ () throws(ObjectGraphError) in try context.insertObject(of: entity, key: requested) },
            "mkdir \(model[entity].name)/\(name)")
        guard Node.fits(object.key) else {
            context.discardChanges(of: [object])
            logger.error(
                "mkdir \(model[entity].name)/\(name): the next key is \(object.key), beyond what storefs can show (p\(Node.maximumKey)); name the folder with a free key below it")
            throw .noSpace
        }
        // Core Data would refuse to save an object whose mandatory attributes are nil; a folder
        // made by mkdir gets the type's zero value there, to be overwritten. Where the zero value
        // is not valid (a minimum length), the attribute waits for a value.
        for attribute in model[entity].persistentAttributes where !attribute.isOptional {
            let current = (try? context.value(of: attribute.name, for: object)) ?? nil
            if current == nil, let zero = attribute.type.zeroValue {
                try? context.setValue(zero, of: attribute.name, for: object)
            }
        }
        changed(object)
        copyIn.markFresh(object)
        resolveWaitingLinks(to: object)
        if requested == nil {
            logger.info("mkdir \(model[entity].name)/\(name): made \(describe(object)) (names are keys)")
            invalidateEntry(parent: .entity(entity), name: name)
        }
        invalidateAncestorDirectories(of: object)
        return try entry(for: .object(object))
    }

    /// The key a new folder's name asks for: `pN` names key N; a name that looks like a key but is
    /// not one storefs can show (`p0`, `p007`, `p4294967296`) is EINVAL rather than another
    /// object under another name; any other name asks for the next key (nil).
    private func requestedKey(_ name: String, in entity: EntityID) throws(FileSystemError) -> PrimaryKey? {
        let looksLikeKey = name.utf8.first == UInt8(ascii: "p") && name.utf8.count > 1
            && name.utf8.dropFirst().allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard looksLikeKey else { return nil }
        guard let key = PrimaryKey(reference: name), Node.fits(key) else {
            logger.error(
                "mkdir \(model[entity].name)/\(name): not a key storefs can show; keys are p1 to p\(Node.maximumKey), without leading zeros")
            throw .invalid
        }
        return key
    }
}
