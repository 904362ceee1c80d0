import Foundation
import FuseKit
import ObjectGraph

/// Extended attributes, all in the `user.` namespace: store metadata on the mount root (Core Data's
/// metadata dictionary; `setfattr` there is setMetadata), descriptions on entities, objects,
/// attribute files and relationships, and `user.storefs.stats` on the root.
extension StoreFileSystem {
    static let statsName = "user.storefs.stats"
    static let orderName = "user.order"
    /// Why an object's changes (or, on the root, the store's) could not be saved.
    static let errorName = "user.storefs.error"
    /// The names storefs gives meaning to; none of them is a metadata key.
    static let ownPrefix = "user.storefs."

    public func extendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) -> Data {
        // `ls -l` asks for security.selinux and system.posix_acl_* on every entry, and the kernel
        // does not cache the answer. storefs has no security labels and no ACLs: EOPNOTSUPP says
        // so, and ls (gnulib's file_has_acl, getfilecon) then stops asking for the rest of its run.
        // ENODATA would be asked again for every entry.
        guard name.hasPrefix("user.") else { throw .notSupported }
        let node = try node(inode)
        if node == .root && name == Self.statsName { return Data(statisticsJSON().utf8) }
        if node == .root, let provided = try configuration.rootAttributes?.value(of: name) { return provided }
        guard let value = try extendedAttributes(of: node)[name] else { throw .noAttribute }
        return value
    }

    public func extendedAttributeNames(of inode: InodeNumber) throws(FileSystemError) -> [String] {
        let node = try node(inode)
        var names = try extendedAttributes(of: node).keys.sorted()
        if node == .root {
            // The model storefs keeps in the store is long and for storefs itself: readable by
            // name (getfattr -n user.StoreFSModel), left out of listings (getfattr -d).
            names.removeAll { $0 == "user." + StoreMetadata.modelKey }
            names.append(Self.statsName)
            names += configuration.rootAttributes?.listedNames ?? []
        }
        return names
    }

    public func setExtendedAttribute(_ name: String, of inode: InodeNumber, value: Data, flags: ExtendedAttributeFlags)
        throws(FileSystemError)
    {
        guard name.hasPrefix("user.") else { throw .notSupported }
        guard !configuration.readOnly else { throw .readOnly }
        let node = try node(inode)
        switch node {
        case .root:
            let key = String(name.dropFirst("user.".count))
            // `user.storefs.` names are storefs's own (stats, errors, evidence), never metadata keys.
            guard !name.hasPrefix(Self.ownPrefix), !StoreMetadata.managedKeys.contains(key),
                !StoreMetadata.bookkeepingKeys.contains(key)
            else {
                // Info, not error: `cp -a` of a whole mount copies these and is refused as it should.
                logger.info("setfattr \(name): the store manages this key; it cannot be set")
                throw .notPermitted
            }
            let current = try engine({ () throws(ObjectGraphError) in try context.metadata() }, "read metadata")[key]
            if flags.contains(.create) && current != nil { throw .exists }
            if flags.contains(.replace) && current == nil { throw .noAttribute }
            let newValue = Self.metadataValue(from: value, like: current)
            try engine({ () throws(ObjectGraphError) in try context.setMetadata(newValue, for: key) }, "setfattr \(name)")
            changed()
        case .toMany(let object, let index) where name == Self.orderName:
            try setOrder(value, of: object, index)
        default:
            throw .notPermitted
        }
    }

    public func removeExtendedAttribute(_ name: String, of inode: InodeNumber) throws(FileSystemError) {
        guard name.hasPrefix("user.") else { throw .notSupported }
        guard !configuration.readOnly else { throw .readOnly }
        let key = String(name.dropFirst("user.".count))
        guard try node(inode) == .root, !name.hasPrefix(Self.ownPrefix), !StoreMetadata.managedKeys.contains(key) else {
            logger.error("setfattr -x \(name): only custom metadata keys of the mount root can be removed")
            throw .notPermitted
        }
        guard try engine({ () throws(ObjectGraphError) in try context.metadata() }, "read metadata")[key] != nil else {
            throw .noAttribute
        }
        try engine({ () throws(ObjectGraphError) in try context.setMetadata(nil, for: key) }, "setfattr -x \(name)")
        changed()
    }

    /// Every `user.` attribute of `node` with its value.
    func extendedAttributes(of node: Node) throws(FileSystemError) -> [String: Data] {
        func text(_ s: String) -> Data { Data(s.utf8) }
        switch node {
        case .root:
            let metadata = try engine({ () throws(ObjectGraphError) in try context.metadata() }, "read metadata")
            var result: [String: Data] = [:]
            for (key, value) in metadata.values { result["user." + key] = Self.data(of: value) }
            if let reason = failures.storeReason { result[Self.errorName] = text(reason) }
            return result
        case .entity(let id):
            guard id.rawValue >= 1 && id.rawValue <= model.entities.count else { throw .notFound }
            let entity = model[id]
            var result = [
                "user.entity.abstract": text(entity.isAbstract ? "true" : "false"),
                "user.entity.count": text(String(try engine({ () throws(ObjectGraphError) in try context.count(of: id) }, "count"))),
            ]
            if let parent = entity.parentName { result["user.entity.parent"] = text(parent) }
            if !entity.subentityIDs.isEmpty {
                result["user.entity.subentities"] = text(entity.subentityIDs.map { model[$0].name }.joined(separator: ","))
            }
            if let className = entity.representedClassName { result["user.entity.class"] = text(className) }
            return result
        case .object(let object):
            let version = try engine({ () throws(ObjectGraphError) in try context.version(of: object) }, "version")
            let uuid = try storeUUID()
            var result = [
                "user.object.uri": text(ObjectURI(storeUUID: uuid, entityName: model[object.entity].name, key: object.key).description),
                "user.object.version": text(String(version)),
                "user.object.entity": text(model[object.entity].name),
            ]
            // Fetched properties' folders are reachable by name but not listed (unless -o
            // list_fetched): this says which names there are.
            let fetched = model[object.entity].allFetchedProperties.indices.filter { hasFetchedFolder(object, $0) }
            if !fetched.isEmpty {
                result["user.object.fetchedProperties"] = text(
                    fetched.map { model[object.entity].allFetchedProperties[$0].name }.joined(separator: ","))
            }
            if let reason = failures.reason(for: object) { result[Self.errorName] = text(reason) }
            return result
        case .attribute(let object, let index):
            let (attribute, _) = try attributeValue(object, index)
            var result = [
                "user.attribute.type": text(attribute.type.rawValue),
                "user.attribute.optional": text(attribute.isOptional ? "true" : "false"),
            ]
            if let transformer = attribute.valueTransformerName { result["user.attribute.transformer"] = text(transformer) }
            // Renderings are not listed in the folder: this says which there are.
            if Self.isRenderable(attribute.type) {
                let names = renderings(of: object, index)
                if !names.isEmpty { result["user.attribute.renderings"] = text(names.joined(separator: ",")) }
            }
            return result
        case .toOne(let object, let index), .toMany(let object, let index):
            _ = try attributes(of: node)
            let relationship = model[object.entity].allRelationships[index]
            var result = [
                "user.relationship.destination": text(relationship.destinationEntityName),
                "user.relationship.toMany": text(relationship.isToMany ? "true" : "false"),
                "user.relationship.deleteRule": text(relationship.deleteRule.rawValue),
                "user.relationship.ordered": text(relationship.isOrdered ? "true" : "false"),
            ]
            if let inverse = relationship.inverseName { result["user.relationship.inverse"] = text(inverse) }
            if relationship.isToMany && relationship.isOrdered {
                let members = try engine({ () throws(ObjectGraphError) in
                    try context.destinations(of: relationship.name, for: object)
                }, "order")
                result[Self.orderName] = text(members.map(\.key.description).joined(separator: " "))
            }
            return result
        case .member, .subentityLink, .templateMember, .templates:
            return [:]
        case .fetched(let object, let index):
            _ = try attributes(of: node)
            let property = model[object.entity].allFetchedProperties[index]
            return [
                "user.fetched.entity": text(property.destinationEntityName),
                "user.fetched.predicate": text(property.predicateString),
            ]
        case .template(let index):
            let template = model.fetchRequestTemplates[index]
            return [
                "user.fetched.entity": text(template.entityName),
                "user.fetched.predicate": text(template.predicateString ?? "TRUEPREDICATE"),
            ]
        case .scratch, .rendering:
            _ = try attributes(of: node)
            return [:]
        }
    }

    /// The store's UUID, read once: it never changes, and `getfattr -d` of every object folder
    /// would otherwise read the store's metadata once per object.
    func storeUUID() throws(FileSystemError) -> String {
        if let known = cachedStoreUUID.withLock({ $0 }) { return known }
        let uuid = try engine({ () throws(ObjectGraphError) in try context.metadata() }, "read metadata").storeUUID ?? ""
        cachedStoreUUID.withLock { $0 = uuid }
        return uuid
    }

    /// The counters tests and benchmarks read: store requests, faults fired, cache size, FUSE
    /// operations by kind.
    func statisticsJSON() -> String {
        let cache = coordinator.rowCache.statistics
        var object: [String: Any] = [
            "storeRequests": coordinator.store.requestCount,
            "faultsFired": context.faultsFired,
            "cachedObjects": cache.snapshots,
            "cacheBytes": cache.bytes,
            "cacheHits": cache.hits,
            "cacheMisses": cache.misses,
            "commits": schedule.commitCount,
            "valuesRendered": renderedValues.renderCount,
        ]
        if let counters { object["fuse"] = counters.snapshot() }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    // MARK: - Metadata values as bytes

    static func data(of value: MetadataValue) -> Data {
        switch value {
        case .string(let s): return Data(s.utf8)
        case .integer(let i): return Data(String(i).utf8)
        case .real(let d): return Data(d.description.utf8)
        case .boolean(let b): return Data((b ? "true" : "false").utf8)
        case .date(let d): return Data(ValueText.format(d).utf8)
        case .data(let d): return d
        case .array, .dictionary:
            let json = try? JSONSerialization.data(withJSONObject: jsonObject(value), options: [.sortedKeys])
            return json ?? Data()
        }
    }

    private static func jsonObject(_ value: MetadataValue) -> Any {
        switch value {
        case .string(let s): s
        case .integer(let i): i
        case .real(let d): d
        case .boolean(let b): b
        case .date(let d): ValueText.format(d)
        case .data(let d): d.base64EncodedString()
        case .array(let a): a.map(jsonObject)
        case .dictionary(let d): d.mapValues(jsonObject)
        }
    }

    /// The metadata value for bytes a user set: the existing key's type where the text parses as
    /// it, else a string (or data, when the bytes are not UTF-8).
    static func metadataValue(from bytes: Data, like current: MetadataValue?) -> MetadataValue {
        guard let text = String(data: bytes, encoding: .utf8) else { return .data(bytes) }
        switch current {
        case .integer?: if let i = Int64(text) { return .integer(i) }
        case .real?: if let d = Double(text) { return .real(d) }
        case .boolean?:
            if text == "true" || text == "false" { return .boolean(text == "true") }
        case .date?: if let d = ValueText.parseDate(text) { return .date(d) }
        case .data?: return .data(bytes)
        default: break
        }
        return .string(text)
    }
}
