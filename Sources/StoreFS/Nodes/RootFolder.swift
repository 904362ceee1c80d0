import Foundation
import FuseKit
import ObjectGraph

/// The mount root: one folder per entity, and the store's metadata as `user.*` extended
/// attributes (Core Data's metadata dictionary; `setfattr` there is setMetadata), with
/// `user.storefs.stats` (the mount's counters) and `user.storefs.error` (why a commit of the store
/// failed). `.fetchRequests`, `.query`, `.history`, `.recovered`, `.wal` and `.timeline` are reachable
/// by name but not listed, so that copies (`cp -a`), `diff -r` and `find` of a mount leave the
/// computed folders out.
struct RootFolder: NodeType {
    static let statsName = "user.storefs.stats"
    /// Why an object's changes (or, on the root, the store's) could not be saved.
    static let errorName = "user.storefs.error"
    /// The names storefs gives meaning to (stats, errors, evidence); none of them is a metadata key.
    static let ownPrefix = "user.storefs."

    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    { mapping.make(node, .directory) }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        if name == TemplatesFolder.name && !mapping.predicates.templates.isEmpty { return .templates }
        if name == HistoryNode.folderName && mapping.historyStore != nil { return HistoryNode.folder }
        if name == QueryFolder.name { return .query(QueryFolder.rootPart) }
        if name == RecoveredNode.folderName && mapping.showsRecovered { return RecoveredNode.folder }
        if name == RecoveredNode.walName && mapping.servesVersions { return RecoveredNode.wal }
        if name == TimelineNode.folderName { return TimelineNode.folder }
        guard let id = mapping.model.entityID(named: name), !mapping.hiddenEntities.withLock({ $0.contains(name) })
        else {
            throw .notFound
        }
        return .entity(id)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let hidden = mapping.hiddenEntities.withLock { $0 }
        return .names(
            mapping.model.entities.filter { !hidden.contains($0.name) }.sorted { $0.name < $1.name }
                .map { ($0.name, Node.entity($0.id)) })
    }

    /// A store made as the target of `cp -a` shows an entity's directory once the copy makes it.
    func makeDirectory(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        guard let entity = mapping.model.entityID(named: name),
            mapping.hiddenEntities.withLock({ $0.remove(name) != nil })
        else {
            if mapping.model.entityID(named: name) != nil { throw .exists }
            mapping.logger.error("mkdir \(name): folders at the root are the model's entities")
            throw .notPermitted
        }
        mapping.invalidate(.root)
        return .entity(entity)
    }

    // MARK: - Extended attributes

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        let metadata = try mapping.engine(
            { () throws(ObjectGraphError) in try mapping.context.metadata() }, "read metadata")
        var result: [String: Data] = [:]
        for (key, value) in metadata.values { result["user." + key] = MetadataBytes.data(of: value) }
        if let reason = mapping.session.failures.storeReason { result[Self.errorName] = Data(reason.utf8) }
        return result
    }

    func extendedAttribute(_ name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Data {
        if name == Self.statsName { return Data(statisticsJSON(mapping).utf8) }
        // What the serving program adds (an evidence mount's record and overlay).
        if let provided = try mapping.configuration.rootAttributes?.value(of: name) { return provided }
        guard let value = try extendedAttributes(of: node, in: mapping)[name] else { throw .noAttribute }
        return value
    }

    func extendedAttributeNames(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String] {
        // The model storefs keeps in the store is long and for storefs itself: readable by name
        // (getfattr -n user.StoreFSModel), left out of listings (getfattr -d).
        // Saved queries are listed on their entities' directories (``Mapping/saveQuery``).
        try extendedAttributes(of: node, in: mapping).keys.sorted()
            .filter { $0 != "user." + StoreMetadata.modelKey && $0 != "user." + Mapping.queriesKey }
            + [Self.statsName] + (mapping.configuration.rootAttributes?.listedNames ?? [])
    }

    func setExtendedAttribute(
        _ name: String, to value: Data, flags: ExtendedAttributeFlags, of node: Node, in mapping: Mapping
    ) throws(FileSystemError) {
        let key = String(name.dropFirst("user.".count))
        guard !name.hasPrefix(Self.ownPrefix), ChangeRules.metadataRefusal(key) == nil, key != Mapping.queriesKey
        else {
            // Info, not error: `cp -a` of a whole mount copies these and is refused as it should.
            mapping.logger.info("setfattr \(name): the store manages this key; it cannot be set")
            throw .notPermitted
        }
        let context = mapping.context
        let current = try mapping.engine({ () throws(ObjectGraphError) in try context.metadata() }, "read metadata")[
            key]
        if flags.contains(.create) && current != nil { throw .exists }
        if flags.contains(.replace) && current == nil { throw .noAttribute }
        let newValue = MetadataBytes.value(from: value, like: current)
        try mapping.engine(
            { () throws(ObjectGraphError) in try context.setMetadata(newValue, for: key) }, "setfattr \(name)")
        mapping.changed()
    }

    func removeExtendedAttribute(_ name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) {
        let key = String(name.dropFirst("user.".count))
        guard !name.hasPrefix(Self.ownPrefix), ChangeRules.metadataRefusal(key) == nil, key != Mapping.queriesKey else {
            mapping.logger.error("setfattr -x \(name): only custom metadata keys of the mount root can be removed")
            throw .notPermitted
        }
        let context = mapping.context
        guard try mapping.engine({ () throws(ObjectGraphError) in try context.metadata() }, "read metadata")[key] != nil
        else {
            throw .noAttribute
        }
        try mapping.engine(
            { () throws(ObjectGraphError) in try context.setMetadata(nil, for: key) }, "setfattr -x \(name)")
        mapping.changed()
    }

    /// The counters tests, benchmarks and `storefs stats` read: store requests, faults fired, cache
    /// size, FUSE operations by kind, saves.
    func statisticsJSON(_ mapping: Mapping) -> String {
        let cache = mapping.coordinator.rowCache.statistics
        var object: [String: Any] = [
            "storeRequests": mapping.coordinator.store.requestCount,
            "faultsFired": mapping.context.faultsFired,
            "cachedObjects": cache.snapshots,
            "cacheBytes": cache.bytes,
            "cacheHits": cache.hits,
            "cacheMisses": cache.misses,
            "commits": mapping.session.schedule.commitCount,
            "valuesRendered": mapping.renderedValues.renderCount
        ]
        // Saves asked of the store (a commit with nothing to save is none), their time, and why
        // some failed: `storefs stats` shows their rates.
        let saves = mapping.commitStatistics.snapshot
        object["saves"] = [
            "count": saves.commits, "failed": saves.failed, "seconds": saves.seconds, "failures": saves.failures
        ]
        if let counters = mapping.counters { object["fuse"] = counters.snapshot() }
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}

extension SavingFileSystem {
    /// The mount's counters (`user.storefs.stats`) count the very getxattr calls that read them, so
    /// a reader's size query and its read see different lengths once a count gains a digit.
    public func extendedAttributeChangesBetweenReads(_ name: String) -> Bool { name == RootFolder.statsName }
}
