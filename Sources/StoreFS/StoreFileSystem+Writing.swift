import Foundation
import FuseKit
import ObjectGraph

#if canImport(Glibc)
import Glibc
#endif

/// The write path: attribute files written through buffers that parse on close, editors'
/// temporary files and renames, objects made with mkdir and removed with rmdir or `rm -r`,
/// relationships set with `ln -s` and cleared with `rm`.
///
/// Every change goes through the engine (validation, delete rules, inverses); changes collect in
/// the context and commit as one transaction after ``StoreFSConfiguration/commitDelay`` of quiet,
/// on fsync and at unmount.
extension StoreFileSystem {
    // MARK: - Files

    func openFile(_ node: Node, flags: Int32) throws(FileSystemError) -> OpenResult {
        let writing = flags & O_ACCMODE != O_RDONLY
        if writing && configuration.readOnly { throw .readOnly }
        _ = try attributes(of: node)
        let truncating = writing && flags & O_TRUNC != 0
        let handle = writes.open(node, buffer: truncating ? Data() : nil)
        // The kernel may keep pages across opens: storefs drops them whenever the value changes.
        return OpenResult(handle: handle, keepCache: true)
    }

    public func write(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, data: Data) throws(FileSystemError) -> Int {
        guard !configuration.readOnly else { throw .readOnly }
        let node = try node(inode)
        guard offset + UInt64(data.count) <= 64 << 20 else { throw .tooBig }
        let current = try currentContent(of: node, handle: handle)
        let updated = Self.splice(data, into: current, at: Int(offset))
        if case .scratch(let serial) = node {
            writes.setScratch(serial, content: updated)
        } else {
            writes.update(handle) {
                $0.buffer = updated
                $0.dirty = true
                $0.written = true
            }
        }
        return data.count
    }

    public func flush(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard writes.openFile(handle)?.written == true else { return }
        try commitBuffer(handle)
    }

    public func release(_ inode: InodeNumber, handle: FuseKit.FileHandle, flags: Int32) throws(FileSystemError) {
        defer { writes.close(handle) }
        try? commitBuffer(handle)
    }

    public func fsync(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError) {
        try commitBuffer(handle)
        if let error = commitPendingChanges(reason: "fsync") {
            throw fileSystemError(error, "fsync", logger: logger)
        }
    }

    public func fsyncDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle, dataOnly: Bool) throws(FileSystemError) {
        // fsync of a folder mkdir made says its writer is done with it: it shows all it holds.
        let node = try node(inode)
        invalidateListings(of: writes.endFreshness(of: node.isFolderOfObject ? node.object : nil))
        if let error = commitPendingChanges(reason: "fsync") {
            throw fileSystemError(error, "fsync", logger: logger)
        }
    }

    public func setAttributes(
        of inode: InodeNumber, _ changes: AttributeChanges, handle: FuseKit.FileHandle?, context request: RequestContext
    ) throws(FileSystemError) -> (FileAttributes, timeout: Double) {
        let node = try node(inode)
        switch node {
        case .fetched, .template:
            // `touch` on a fetched property's folder evaluates it again (Core Data's refreshObject).
            fetchedResults.drop(node)
            invalidate(node)
            return (try attributes(of: node), configuration.attributeTimeout)
        default:
            break
        }
        guard !configuration.readOnly else { throw .readOnly }
        if let size = changes.size {
            let newSize = Int(size)
            switch node {
            case .attribute:
                if let handle, writes.openFile(handle) != nil {
                    let current = try currentContent(of: node, handle: handle)
                    writes.update(handle) {
                        $0.buffer = Self.resize(current, to: newSize)
                        $0.dirty = true
                    }
                } else {
                    // truncate(1) by path: the new content is the value, now.
                    let current = try currentContent(of: node, handle: FuseKit.FileHandle.none)
                    try setContent(Self.resize(current, to: newSize), of: node)
                }
            case .scratch(let serial):
                writes.setScratch(serial, content: Self.resize(writes.scratchContent(serial) ?? Data(), to: newSize))
            default:
                throw .isDirectory
            }
        }
        // Permissions, owners and times have nowhere to go in a store: accepted so that tools that
        // copy them (cp -a, rsync, vim) work, and not kept.
        return (try attributes(of: node), configuration.attributeTimeout)
    }

    /// Parses a handle's buffered content and sets the attribute; EINVAL (value unchanged) when it
    /// does not parse or validate.
    func commitBuffer(_ handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard let file = writes.openFile(handle), file.dirty, let content = file.buffer else { return }
        writes.update(handle) {
            $0.dirty = false
            $0.written = false
            $0.buffer = nil
        }
        try setContent(content, of: file.node)
    }

    /// Sets the attribute `node` names from file content.
    func setContent(_ content: Data, of node: Node) throws(FileSystemError) {
        guard case .attribute(let object, let index) = node else { return }
        let attribute = model[object.entity].allAttributes[index]
        let value: AttributeValue
        do {
            value = try ValueText.value(from: content, type: attribute.type)
        } catch {
            logger.error("write \(describe(object))/\(attribute.name): \(error.message); the value stays as it was")
            throw .invalid
        }
        let existed = (try? snapshot(of: object))?.attributes[attribute.name] != nil && !writes.isHidden(attribute.name, in: object)
        writes.show(attribute.name, in: object)
        try engine({ () throws(ObjectGraphError) in try context.setValue(value, of: attribute.name, for: object) },
            "write \(describe(object))/\(attribute.name)")
        changed(object)
        invalidate(.attribute(object, index))
        if !existed { invalidate(.object(object)) }
    }

    // MARK: - Creating

    public func create(parent: InodeNumber, name: String, permissions: UInt32, flags: Int32, context request: RequestContext)
        throws(FileSystemError) -> (Entry, OpenResult)
    {
        guard !configuration.readOnly else { throw .readOnly }
        let node = try newFile(named: name, in: try self.node(parent))
        let handle = writes.open(node, buffer: node.isAttribute ? Data() : nil)
        changed(node.object)
        return (try entry(for: node), OpenResult(handle: handle, keepCache: true))
    }

    public func makeNode(parent: InodeNumber, name: String, permissions: UInt32, context request: RequestContext)
        throws(FileSystemError) -> Entry
    {
        guard !configuration.readOnly else { throw .readOnly }
        let node = try newFile(named: name, in: try self.node(parent))
        if node.isAttribute { try setContent(Data(), of: node) }
        return try entry(for: node)
    }

    /// The node a new regular file called `name` becomes: an attribute (set when its handle is
    /// flushed) or a scratch file.
    private func newFile(named name: String, in parent: Node) throws(FileSystemError) -> Node {
        guard case .object(let object) = parent else {
            logger.error("create \(name): files can only be created in object folders")
            throw .notPermitted
        }
        let entity = model[object.entity]
        if let index = entity.allAttributes.firstIndex(where: { $0.name == name }) {
            guard !entity.allAttributes[index].isTransient else { throw .notPermitted }
            writes.show(name, in: object)
            return .attribute(object, index)
        }
        if entity.relationship(named: name) != nil {
            logger.error("create \(describe(object))/\(name): \(name) is a relationship; use ln -s")
            throw .notPermitted
        }
        _ = try snapshot(of: object)
        if let existing = writes.scratchFile(named: name, in: parent) { return .scratch(existing) }
        return .scratch(writes.createScratch(named: name, in: parent))
    }

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
        if case .object(let object) = directory, writes.isFresh(object),
            let index = model[object.entity].allFetchedProperties.firstIndex(where: { $0.name == name }),
            hasFetchedFolder(object, index)
        {
            // A copy brings the fetched property's folder too: it is there already (computed).
            writes.show(name, in: object)
            return try entry(for: .fetched(object, index))
        }
        if case .object(let object) = directory, writes.isFresh(object),
            let index = model[object.entity].allRelationships.firstIndex(where: { $0.name == name && $0.isToMany })
        {
            // A copy into a folder mkdir made: its to-many folder is there already.
            writes.show(name, in: object)
            return try entry(for: .toMany(object, index))
        }
        guard case .entity(let entity) = directory else {
            logger.error("mkdir \(name): folders can only be made in entity directories (a new object)")
            throw .notPermitted
        }
        let requested = PrimaryKey(reference: name)
        let object = try engine({ () throws(ObjectGraphError) in
            let id = try context.insertObject(of: entity, key: requested)
            // Core Data would refuse to save an object whose mandatory attributes are nil; a folder
            // made by mkdir gets the type's zero value there, to be overwritten.
            for attribute in model[entity].persistentAttributes where !attribute.isOptional {
                if try context.value(of: attribute.name, for: id) == nil {
                    try context.setValue(Self.zeroValue(of: attribute.type), of: attribute.name, for: id)
                }
            }
            return id
        }, "mkdir \(model[entity].name)/\(name)")
        changed(object)
        writes.markFresh(object)
        resolvePendingLinks(to: object)
        if requested == nil {
            logger.info("mkdir \(model[entity].name)/\(name): made \(describe(object)) (names are keys)")
            invalidateEntry(parent: .entity(entity), name: name)
        }
        invalidateAncestorDirectories(of: object)
        return try entry(for: .object(object))
    }

    public func makeSymbolicLink(parent: InodeNumber, name: String, target: String, context request: RequestContext)
        throws(FileSystemError) -> Entry
    {
        guard !configuration.readOnly else { throw .readOnly }
        let directory = try node(parent)
        switch directory {
        case .object(let object):
            let entity = model[object.entity]
            guard let index = entity.allRelationships.firstIndex(where: { $0.name == name }) else {
                guard entity.attribute(named: name) == nil else { throw .notPermitted }
                // `ln -sf` makes its link under a temporary name and renames it over the old one.
                return try entry(for: .scratch(writes.createScratch(named: name, in: directory, linkTarget: target)))
            }
            let relationship = entity.allRelationships[index]
            guard !relationship.isToMany else {
                logger.error("ln -s \(target) \(describe(object))/\(name): a to-many relationship is a folder; link inside it")
                throw .notPermitted
            }
            guard let destination = try resolve(target, from: directory, for: relationship) else {
                return try entry(for: pendingLink(named: name, in: directory, target: target, for: relationship))
            }
            try setToOne(object, index, destination: destination)
            return try entry(for: .toOne(object, index))
        case .toMany(let object, let index):
            guard PrimaryKey(reference: name) != nil else {
                return try entry(for: .scratch(writes.createScratch(named: name, in: directory, linkTarget: target)))
            }
            let relationship = model[object.entity].allRelationships[index]
            if let named = try resolvePath(target, from: directory) {
                writes.noteLink(to: .init(root: model[named.entity].rootID, key: named.key), in: relationship.name, of: object)
            }
            guard let destination = try resolve(target, from: directory, for: relationship) else {
                return try entry(for: pendingLink(named: name, in: directory, target: target, for: relationship))
            }
            try addMember(object, index, destination)
            if name != destination.key.description { invalidateEntry(parent: directory, name: name) }
            return try entry(for: .member(destination))
        case .fetched(let object, _) where writes.isFresh(object):
            // A copy brings the computed links too: kept as scratch links while the copy lasts.
            return try entry(for: .scratch(writes.createScratch(named: name, in: directory, linkTarget: target)))
        case .fetched, .template, .templates:
            logger.error("ln -s \(target) \(name): fetched properties are computed by their predicate and read-only")
            throw .notPermitted
        case .entity(let entity):
            // A copy of an entity directory brings the links to its subentities' objects: they
            // are there already (or will be, once copied), so the link is accepted as it is.
            guard let key = PrimaryKey(reference: name), let named = try resolvePath(target, from: directory),
                named.key == key, model.entity(named.entity, isKindOf: entity), named.entity != entity
            else {
                logger.error("ln -s \(target) \(model[entity].name)/\(name): links here are the subentities' objects (../Sub/pN)")
                throw .notPermitted
            }
            if let object = try engine({ () throws(ObjectGraphError) in try context.objectID(forKey: key, in: entity) },
                "ln -s"), object.entity == named.entity
            {
                return try entry(for: .subentityLink(object))
            }
            let serial = writes.createScratch(named: name, in: directory, linkTarget: target)
            writes.addPendingLink(serial, to: WriteState.LinkTarget(root: model[entity].rootID, key: key))
            return try entry(for: .scratch(serial))
        default:
            logger.error("ln -s \(target) \(name): links can only be made for relationships")
            throw .notPermitted
        }
    }

    /// A link to an object that does not exist yet: kept as a scratch link and applied when the
    /// object is made (cp -a copies a folder's links before the folders they point at).
    private func pendingLink(named name: String, in directory: Node, target: String, for relationship: RelationshipDescription)
        throws(FileSystemError) -> Node
    {
        guard let named = try resolvePath(target, from: directory) else { throw .invalid }
        let serial = writes.createScratch(named: name, in: directory, linkTarget: target)
        writes.addPendingLink(serial, to: WriteState.LinkTarget(root: model[named.entity].rootID, key: named.key))
        logger.debug("ln -s \(target) \(name): the object does not exist yet; the link waits for it")
        return .scratch(serial)
    }

    /// Applies the links that were waiting for `object`.
    func resolvePendingLinks(to object: ObjectID) {
        for serial in writes.takePendingLinks(to: WriteState.LinkTarget(root: model[object.entity].rootID, key: object.key)) {
            guard let scratch = writes.scratch(serial), let target = scratch.linkTarget else { continue }
            writes.removeScratch(serial)
            do throws(FileSystemError) {
                switch scratch.parent {
                case .object(let source):
                    if let index = model[source.entity].allRelationships.firstIndex(where: { $0.name == scratch.name }) {
                        try setToOne(source, index, destination: object)
                    }
                case .toMany(let source, let index):
                    try addMember(source, index, object)
                default:
                    break
                }
            } catch {
                logger.error("ln -s \(target) \(scratch.name): \(describe(object)) appeared but the link failed (\(error))")
            }
            invalidateEntry(parent: scratch.parent, name: scratch.name)
            invalidate(scratch.parent)
            _ = target
        }
    }

    /// Sets to-one relationship `index` of `object` to `destination`.
    private func setToOne(_ object: ObjectID, _ index: Int, destination: ObjectID) throws(FileSystemError) {
        let relationship = model[object.entity].allRelationships[index]
        let old = try snapshot(of: object).toOne[relationship.name]
        try engine({ () throws(ObjectGraphError) in
            try context.setDestination(destination, of: relationship.name, for: object)
        }, "ln -s \(describe(destination)) \(describe(object))/\(relationship.name)")
        writes.show(relationship.name, in: object)
        changed(object)
        invalidateRelationship(relationship.name, of: object, touching: [destination] + (old.map { [$0] } ?? []))
    }

    /// Adds `destination` to to-many relationship `index` of `object`; in a folder being copied
    /// in, an ordered relationship follows the order its links were made in.
    private func addMember(_ object: ObjectID, _ index: Int, _ destination: ObjectID) throws(FileSystemError) {
        let relationship = model[object.entity].allRelationships[index]
        try engine({ () throws(ObjectGraphError) in
            try context.addDestination(destination, to: relationship.name, of: object)
            if relationship.isOrdered, let order = writes.linkOrder(of: relationship.name, in: object) {
                let position = Dictionary(order.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { a, _ in a })
                let current = try context.destinations(of: relationship.name, for: object)
                let rank = { (id: ObjectID) in position[WriteState.LinkTarget(root: self.model[id.entity].rootID, key: id.key)] ?? Int.max }
                let sorted = current.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
                if sorted != current { try context.setDestinations(sorted, of: relationship.name, for: object) }
            }
        }, "ln -s \(describe(destination)) \(describe(object))/\(relationship.name)/")
        writes.showMember(destination, of: relationship.name, in: object)
        changed(object)
        invalidateRelationship(relationship.name, of: object, touching: [destination])
    }

    /// The entity and key a link target names: a path relative to the link's folder (or absolute
    /// under the mount point) that ends in `Entity/pN`; nil when it names no object folder.
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
                    guard !components.isEmpty else { throw .invalid }
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

    private func pathComponents(of node: Node) -> [String] {
        switch node {
        case .root: []
        case .entity(let e): [model[e].name]
        case .object(let o): [model[o.entity].name, o.key.description]
        case .toMany(let o, let i): [model[o.entity].name, o.key.description, model[o.entity].allRelationships[i].name]
        default: []
        }
    }

    // MARK: - Removing

    public func unlink(parent: InodeNumber, name: String) throws(FileSystemError) {
        guard !configuration.readOnly else { throw .readOnly }
        let directory = try node(parent)
        switch directory {
        case .object(let object):
            let target = try child(named: name, in: directory)
            switch target {
            case .scratch(let serial):
                writes.removeScratch(serial)
            case .attribute(_, let index):
                let attribute = model[object.entity].allAttributes[index]
                let old = try attributeValue(object, index).1
                if attribute.isOptional {
                    try engine({ () throws(ObjectGraphError) in try context.setValue(nil, of: name, for: object) },
                        "rm \(describe(object))/\(name)")
                    writes.recordRemoval(.attribute(name, old), in: object)
                } else {
                    // Refused at the next commit unless `rmdir` deletes the object first (rm -r).
                    writes.recordRemoval(.hiddenProperty(name), in: object)
                }
                changed(object)
                invalidate(.object(object))
            case .toOne(_, let index):
                let relationship = model[object.entity].allRelationships[index]
                guard let old = try snapshot(of: object).toOne[name] else { throw .notFound }
                if relationship.isOptional {
                    try engine({ () throws(ObjectGraphError) in try context.setDestination(nil, of: name, for: object) },
                        "rm \(describe(object))/\(name)")
                    writes.recordRemoval(.toOne(name, old), in: object)
                    invalidateRelationship(name, of: object, touching: [old])
                } else {
                    writes.recordRemoval(.hiddenProperty(name), in: object)
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
                writes.removeScratch(serial)
                return
            }
            guard case .member(let destination) = target else { throw .notFound }
            let relationship = model[object.entity].allRelationships[index]
            let position = try engine({ () throws(ObjectGraphError) in
                let list = try context.destinations(of: relationship.name, for: object)
                try context.removeDestination(destination, from: relationship.name, of: object)
                return list.firstIndex(of: destination) ?? list.count
            }, "rm \(describe(object))/\(relationship.name)/\(name)")
            writes.recordRemoval(.member(relationship.name, destination, index: position), in: object)
            changed(object)
            invalidateRelationship(relationship.name, of: object, touching: [destination])
        case .fetched(let object, let index):
            // A fetched property is computed: removing its links changes nothing. `rm -r` of the
            // object removes them on the way, so the folder is hidden until the next commit (or
            // the object goes) rather than refused, which would stop `rm -r` half-way.
            _ = try child(named: name, in: directory)
            writes.recordRemoval(.hiddenFolder(model[object.entity].allFetchedProperties[index].name), in: object)
            changed(object)
            invalidate(.object(object))
        case .entity:
            _ = try child(named: name, in: directory)
            throw .isDirectory
        default:
            throw .notPermitted
        }
    }

    public func removeDirectory(parent: InodeNumber, name: String) throws(FileSystemError) {
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
            // The folder is the relationship itself: `rm -r` of an object removes it on the way;
            // it shows again (empty) after the next commit unless the object goes.
            writes.recordRemoval(.hiddenFolder(name), in: object)
            changed(object)
        case .fetched(let object, let index):
            writes.recordRemoval(.hiddenFolder(model[object.entity].allFetchedProperties[index].name), in: object)
            changed(object)
        case .subentityLink:
            throw .notDirectory
        default:
            throw .notPermitted
        }
    }

    /// Deletes `object` by its delete rules, after taking back the removals `rm -r` made inside
    /// its folder (so a Deny rule sees the relationships as they were).
    func deleteObject(_ object: ObjectID) throws(FileSystemError) {
        let removals = writes.takeRecentRemovals(in: object)
        try engine({ () throws(ObjectGraphError) in
            for removal in removals.reversed() {
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
        writes.removeScratchFiles(of: object)
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

    // MARK: - Renaming

    public func rename(parent: InodeNumber, name: String, newParent: InodeNumber, newName: String, flags: UInt32)
        throws(FileSystemError)
    {
        guard !configuration.readOnly else { throw .readOnly }
        guard flags & 2 == 0 else { throw .invalid }  // RENAME_EXCHANGE
        let from = try node(parent)
        let to = try node(newParent)
        guard let object = from.object, from.isFolderOfObject, to.isFolderOfObject else {
            logger.error("mv \(name) \(newName): only files inside object folders can be renamed")
            throw .notPermitted
        }
        guard from == to else { throw .crossDevice }
        let source = try child(named: name, in: from)
        let existing = try? child(named: newName, in: to)
        if flags & 1 != 0 && existing != nil { throw .exists }  // RENAME_NOREPLACE
        let entity = model[object.entity]
        switch (source, to) {
        case (.scratch(let serial), .object):
            let scratch = writes.scratch(serial)
            if let index = entity.allAttributes.firstIndex(where: { $0.name == newName }), scratch?.linkTarget == nil {
                // An editor's save: the temporary file's content becomes the value.
                try setContent(scratch?.content ?? Data(), of: .attribute(object, index))
                writes.removeScratch(serial)
            } else if let index = entity.allRelationships.firstIndex(where: { $0.name == newName }),
                let target = scratch?.linkTarget, !entity.allRelationships[index].isToMany
            {
                // `ln -sfn`: the temporary link replaces the relationship.
                guard let destination = try resolve(target, from: to, for: entity.allRelationships[index]) else {
                    throw .invalid
                }
                try setToOne(object, index, destination: destination)
                writes.removeScratch(serial)
            } else if entity.attribute(named: newName) != nil || entity.relationship(named: newName) != nil {
                throw .notPermitted
            } else {
                if case .scratch(let old)? = existing { writes.removeScratch(old) }
                writes.renameScratch(serial, to: newName, in: to)
            }
            invalidateEntry(parent: to, name: newName)
        case (.scratch(let serial), .toMany(_, let index)):
            guard let target = writes.scratch(serial)?.linkTarget, PrimaryKey(reference: newName) != nil else {
                throw .notPermitted
            }
            guard let destination = try resolve(target, from: to, for: entity.allRelationships[index]) else {
                throw .invalid
            }
            try addMember(object, index, destination)
            writes.removeScratch(serial)
            invalidateEntry(parent: to, name: newName)
        case (.attribute(_, let index), .object):
            guard entity.attribute(named: newName) == nil, entity.relationship(named: newName) == nil else {
                logger.error("mv \(name) \(newName) in \(describe(object)): one attribute cannot be renamed onto another; use cp")
                throw .notPermitted
            }
            // An editor's backup (vim renames the file to file~ before writing the new one): the
            // backup gets a copy, and the attribute keeps its value until the new file is written.
            if case .scratch(let old)? = existing { writes.removeScratch(old) }
            let content = try currentContent(of: .attribute(object, index), handle: FuseKit.FileHandle.none)
            _ = writes.createScratch(named: newName, in: to, content: content)
            invalidateEntry(parent: from, name: name)
            invalidateEntry(parent: to, name: newName)
        default:
            logger.error("mv \(name) \(newName) in \(describe(object)): relationships are changed with ln -s and rm")
            throw .notPermitted
        }
        changed(object)
    }

    /// Reorders an ordered to-many relationship from `setfattr -n user.order -v "p3 p1 p2"`.
    func setOrder(_ value: Data, of object: ObjectID, _ index: Int) throws(FileSystemError) {
        let relationship = model[object.entity].allRelationships[index]
        guard relationship.isOrdered else { throw .notPermitted }
        let current = try engine({ () throws(ObjectGraphError) in try context.destinations(of: relationship.name, for: object) },
            "order")
        let names = String(decoding: value, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
        var order: [ObjectID] = []
        if writes.isFresh(object) {
            // A copy in progress: the links were made in order, and some may still wait for
            // their objects; the order they were made in is the order.
            return
        }
        for name in names {
            guard let key = PrimaryKey(reference: name), let id = current.first(where: { $0.key == key }) else {
                logger.error("setfattr user.order on \(describe(object))/\(relationship.name): \(name) is not a member")
                throw .invalid
            }
            order.append(id)
        }
        guard Set(order) == Set(current), order.count == current.count else {
            logger.error("setfattr user.order on \(describe(object))/\(relationship.name): name every member exactly once")
            throw .invalid
        }
        try engine({ () throws(ObjectGraphError) in try context.setDestinations(order, of: relationship.name, for: object) },
            "order")
        changed(object)
        invalidate(.toMany(object, index))
    }

    // MARK: - Commits

    /// Notes a change: the commit timer restarts.
    func changed(_ object: ObjectID? = nil) {
        writes.noteChange(object)
    }

    /// Commits everything pending as one transaction. Returns the error, logged, when the save
    /// failed: a conflict (another process changed an edited object: its value wins, ours is
    /// dropped) or a validation failure (changes stay pending).
    @discardableResult
    func commitPendingChanges(reason: String) -> ObjectGraphError? {
        commitLock.withLock { (_) -> ObjectGraphError? in
            for (object, removals) in writes.takeAllRemovals() {
                for case .hiddenProperty(let name) in removals where (try? context.exists(object)) == true {
                    logger.error(
                        "rm \(describe(object))/\(name): refused, \(name) is not optional; it keeps its value and shows again")
                    invalidateEntry(parent: .object(object), name: name)
                    invalidate(.object(object))
                }
                if removals.contains(where: { if case .hiddenFolder = $0 { true } else { false } }) {
                    invalidate(.object(object))
                }
            }
            guard context.hasChanges else {
                writes.markCommitted()
                return nil
            }
            do throws(ObjectGraphError) {
                try context.save()
                writes.markCommitted()
                dropFetchedResults()
                invalidateListings(of: writes.clearFresh())
                rememberStoreToken()
                logger.debug("committed (\(reason))")
                return nil
            } catch {
                if error.code == .conflict {
                    logger.error("commit (\(reason)): \(error); the other change is kept and this mount's pending changes are dropped")
                    context.rollback()
                    coordinator.dropCaches()
                    writes.markCommitted()
                    invalidateEverythingCached(including: [])
                } else {
                    logger.error("commit (\(reason)): \(error.message); the changes stay pending until fixed")
                }
                return error
            }
        }
    }

    // MARK: - Helpers

    static func splice(_ data: Data, into content: Data, at offset: Int) -> Data {
        var result = content
        if offset > result.count { result.append(Data(count: offset - result.count)) }
        let end = offset + data.count
        if end > result.count { result.append(Data(count: end - result.count)) }
        result.replaceSubrange(result.startIndex + offset..<result.startIndex + end, with: data)
        return result
    }

    static func resize(_ content: Data, to size: Int) -> Data {
        if size <= content.count { return content.prefix(size) }
        return content + Data(count: size - content.count)
    }

    static func zeroValue(of type: AttributeType) -> AttributeValue? {
        switch type {
        case .integer16, .integer32, .integer64: .integer(0)
        case .decimal: .decimal(0)
        case .double: .double(0)
        case .float: .float(0)
        case .string, .uri: .string("")
        case .boolean: .boolean(false)
        case .date: .date(Date(timeIntervalSinceReferenceDate: 0))
        case .binaryData, .transformable: .data(Data())
        case .uuid: .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .objectID, .undefined: nil
        }
    }
}

extension Node {
    var isAttribute: Bool {
        if case .attribute = self { return true }
        return false
    }

    /// Whether this is an object folder or one of its to-many folders (where scratch files live).
    var isFolderOfObject: Bool {
        switch self {
        case .object, .toMany: true
        default: false
        }
    }

    /// The object whose folder holds this node, if any.
    var object: ObjectID? {
        switch self {
        case .object(let o), .attribute(let o, _), .toOne(let o, _), .toMany(let o, _): o
        default: nil
        }
    }
}
