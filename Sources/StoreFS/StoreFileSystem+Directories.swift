import FuseKit
import ObjectGraph

extension StoreFileSystem {
    public func openDirectory(_ inode: InodeNumber, flags: OpenFlags, context request: RequestContext) throws(FileSystemError)
        -> OpenResult
    {
        let node = try node(inode)
        switch node {
        case .root, .entity, .object, .toMany, .fetched, .templates, .template: _ = try attributes(of: node)
        default: throw .notDirectory
        }
        // The kernel may keep listings (cache_readdir) because storefs invalidates a directory
        // whenever its own changes touch it, and on changes it detects from other processes.
        // Not a computed folder's: one evaluated while a change landed is answered but must not
        // stay, and an invalidation sent for it could reach the kernel before the answer does.
        // (Read-only mounts open directories without asking, so there the kernel keeps every
        // listing, these too: see docs/SEMANTICS.md, Known limits.)
        let computed = switch node {
        case .fetched, .template: true
        default: false
        }
        // `rm -r` opens a folder before it empties it; the kernel may answer its reads from a
        // listing it kept, so the opening is what says who is about to empty it.
        if case .object(let object) = node, !configuration.readOnly { removals.noteOpening(of: object, by: request.pid) }
        return OpenResult(handle: directories.open(), keepCache: true, cacheDirectory: !computed)
    }

    public func releaseDirectory(_ inode: InodeNumber, handle: FuseKit.FileHandle) {
        directories.close(handle)
    }

    /// Lists a directory: `.` and `..`, then its entries. Entity directories resume by primary key
    /// (the cookie after the object with key k is k + 3), others by position in the listing kept
    /// for the reader (per open, or per directory on read-only mounts until the store changes), so
    /// a listing that changes between calls neither repeats nor skips what stayed.
    public func readDirectory(
        _ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, plus: Bool, context request: RequestContext,
        add: (DirectoryEntry) -> Bool
    ) throws(FileSystemError) {
        let directory = try node(inode)
        // An opened directory is listed afresh at offset 0 (rewinddir); one read without opendir
        // shares its listing with every reader until the store changes.
        var kept = directories.kept(handle, of: inode)
        let listsAfresh = kept == nil || (offset == 0 && handle != DirectoryHandles.unopened)
        // Read before anything a new listing is made of: a change after it keeps that listing from
        // staying. (Most calls continue a kept listing and need none.)
        let generation = listsAfresh ? directories.generation : 0
        // An object folder's entries all come from its one snapshot: read it once per call, not
        // once per entry.
        let known: Snapshot? = if case .object(let object) = directory { try snapshot(of: object) } else { nil }
        if offset == 0 {
            guard add(DirectoryEntry(name: ".", entry: try entry(for: directory, known: known), nextOffset: 1)) else { return }
        }
        if offset <= 1 {
            guard add(DirectoryEntry(name: "..", entry: try entry(for: parent(of: directory)), nextOffset: 2)) else {
                return
            }
        }
        if listsAfresh {
            kept = directories.keep(
                try listing(of: directory, known: known), for: handle, of: inode, takenIn: generation)
        }
        guard let kept else { return }
        switch kept {
        case .objects(let ids):
            // An entity folder lists its objects from the store's list of keys alone: a folder's
            // attributes need no row, so `ls -l` reads none. What is opened next (a folder, a
            // value) fires its fault then, in a batch read ahead in key order.
            // An offset is one this listing gave (a key + 3) or one lseek set: beyond every key, the
            // listing is at its end.
            guard let resume = Int64(exactly: offset) else { return }
            var index = resume <= 2 ? 0 : ids.firstIndex(afterKey: resume - 3)
            while index < ids.count {
                let id = ids[index]
                let node: Node = id.entity == entityOf(directory) ? .object(id) : .subentityLink(id)
                guard let e = try? entry(for: node, listed: true) else {
                    index += 1
                    continue
                }
                guard add(DirectoryEntry(name: id.key.description, entry: e, nextOffset: UInt64(id.key.rawValue) + 3))
                else { return }
                index += 1
            }
        case .names(let names):
            guard let resume = Int(exactly: offset) else { return }
            var index = resume <= 2 ? 0 : resume - 2
            while index < names.count {
                let (name, node) = names[index]
                if let e = try? entry(for: node, known: known) {
                    guard add(DirectoryEntry(name: name, entry: e, nextOffset: UInt64(index) + 3)) else { return }
                }
                index += 1
            }
        }
    }

    /// The entries of a directory other than `.` and `..`.
    func listing(of directory: Node, known: Snapshot? = nil) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        switch directory {
        case .root:
            let hidden = hiddenEntities.withLock { $0 }
            // `.fetchRequests` is reachable by name but not listed, so that copies (`cp -a`),
            // `diff -r` and `find` of a mount leave the computed folders out.
            return .names(
                model.entities.filter { !hidden.contains($0.name) }.sorted { $0.name < $1.name }
                    .map { ($0.name, Node.entity($0.id)) })
        case .templates:
            return .names(
                model.fetchRequestTemplates.enumerated().filter { predicates.templates[$0.offset] != nil }
                    .map { ($0.element.name, Node.template($0.offset)) })
        case .template:
            return .names(try fetchedMembers(of: directory).map { ($0.key.description, Node.templateMember($0)) })
        case .fetched(let object, _):
            let computed = copyIn.isFresh(object) ? [] : try fetchedMembers(of: directory)
            return .names(
                computed.map { ($0.key.description, Node.member($0)) }
                    + scratch.list(in: directory).map { ($0.name, Node.scratch($0.serial)) })
        case .entity(let entity):
            let ids = try engine({ () throws(ObjectGraphError) in
                try context.objectIDs(of: entity, includingSubentities: true)
            }, "list \(model[entity].name)")
            return .objects(EntityListing(ids))
        case .object(let object):
            return .names(try entries(of: object, known: known))
        case .toMany(let object, let index):
            let relationship = model[object.entity].allRelationships[index]
            let members = try engine({ () throws(ObjectGraphError) in
                try context.destinations(of: relationship.name, for: object)
            }, "list \(describe(object))/\(relationship.name)")
            return .names(
                visibleMembers(members, of: relationship.name, in: object).filter { Node.fits($0) }
                    .map { ($0.key.description, Node.member($0)) }
                    + scratch.list(in: directory).map { ($0.name, Node.scratch($0.serial)) })
        default:
            throw .notDirectory
        }
    }

    /// An object folder's entries: each non-nil attribute, each set to-one, each to-many, the
    /// fetched properties when they are listed, and the scratch files an editor left there.
    func entries(of object: ObjectID, known: Snapshot? = nil) throws(FileSystemError) -> [(String, Node)] {
        let entity = model[object.entity]
        let snapshot = try snapshot(of: object, known: known)
        var result: [(String, Node)] = []
        for (index, attribute) in entity.allAttributes.enumerated() where snapshot.attributes[attribute.name] != nil {
            result.append((attribute.name, .attribute(object, index)))
        }
        for (index, relationship) in entity.allRelationships.enumerated() {
            if relationship.isToMany {
                result.append((relationship.name, .toMany(object, index)))
            } else if snapshot.toOne[relationship.name] != nil {
                result.append((relationship.name, .toOne(object, index)))
            }
        }
        if configuration.listsFetchedProperties {
            for (index, property) in entity.allFetchedProperties.enumerated() where hasFetchedFolder(object, index) {
                result.append((property.name, .fetched(object, index)))
            }
        }
        result.removeAll { isHidden($0.0, in: object) }
        result += scratch.list(in: .object(object)).map { ($0.name, Node.scratch($0.serial)) }
        return result
    }

    /// Fires the row faults of `ids` in one store request; their to-many faults then fire per
    /// batch too, when the first of them is read (the engine remembers the batch).
    func prefetch(_ ids: [ObjectID]) throws(FileSystemError) {
        try engine({ () throws(ObjectGraphError) in try context.prefetch(ids) }, "prefetch")
    }

    private func entityOf(_ directory: Node) -> EntityID? {
        if case .entity(let e) = directory { return e }
        return nil
    }
}
