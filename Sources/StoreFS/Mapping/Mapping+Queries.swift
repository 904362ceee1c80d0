import Foundation
import FuseKit
import ObjectGraph

/// Query folders (`.query/ENTITY/PREDICATE/`) and saved queries (`user.query.NAME` on an entity's
/// directory): what ``QueryFolder`` and ``QueryResultFile`` share.
///
/// Saved queries live in the store's metadata under ``queriesKey`` (a dictionary of entity name to
/// a dictionary of query name to predicate), so they travel with the store and are saved by the
/// mount's next commit like any metadata change.
extension Mapping {
    /// The metadata key of the saved queries.
    static let queriesKey = "StoreFSQueries"
    /// The prefix of a saved query's extended attribute on an entity's directory.
    static let queryAttributePrefix = "user.query."

    // MARK: - Saved queries

    /// `entity`'s saved queries, name to predicate.
    func savedQueries(of entity: EntityID) throws(FileSystemError) -> [String: String] {
        guard isValid(entity) else { return [:] }
        let context = context
        // Read once until something changes: every lookup in `.query` asks.
        let all = try queries.saved { () throws(FileSystemError) in
            let metadata = try engine({ () throws(ObjectGraphError) in try context.metadata() }, "read metadata")
            guard case .dictionary(let all)? = metadata[Self.queriesKey] else { return [:] }
            return all
        }
        guard case .dictionary(let mine)? = all[model[entity].name] else { return [:] }
        var result: [String: String] = [:]
        for (name, value) in mine { if case .string(let predicate) = value { result[name] = predicate } }
        return result
    }

    /// `setfattr -n user.query.NAME -v PREDICATE ENTITY`: saves (nil: removes) a query, checked
    /// first. `flags` as setxattr(2)'s.
    func saveQuery(_ attribute: String, _ value: Data?, flags: ExtendedAttributeFlags = [], of entity: EntityID)
        throws(FileSystemError)
    {
        guard isValid(entity) else { throw .notFound }
        let entityName = model[entity].name
        // The entity's own attributes (user.entity.*) are refused as before: `cp -a` copies them.
        guard attribute.hasPrefix(Self.queryAttributePrefix) else { throw .notPermitted }
        let name = String(attribute.dropFirst(Self.queryAttributePrefix.count))
        guard Self.isQueryName(name) else {
            logger.error(
                "setfattr \(attribute) on \(entityName): a saved query's name is a file name (user.query.NAME)")
            throw value == nil ? .noAttribute : .invalid
        }
        var predicate: String?
        if let value {
            guard let text = String(validating: value, as: UTF8.self) else {
                refuse("setfattr \(attribute) on \(entityName)", "the predicate is not UTF-8 text", entity)
                throw .invalid
            }
            do throws(ObjectGraphError) {
                try PredicateChecker.check(try PredicateParser.parse(text), for: entity, in: model)
            } catch {
                refuse("setfattr \(attribute) on \(entityName)", error.message, entity)
                throw .invalid
            }
            predicate = text
        }
        let context = context
        let metadata = try engine({ () throws(ObjectGraphError) in try context.metadata() }, "read metadata")
        var all: [String: MetadataValue] = [:]
        if case .dictionary(let kept)? = metadata[Self.queriesKey] { all = kept }
        var mine: [String: MetadataValue] = [:]
        if case .dictionary(let kept)? = all[entityName] { mine = kept }
        let exists = mine[name] != nil
        if flags.contains(.create) && exists { throw .exists }
        if (flags.contains(.replace) || value == nil) && !exists { throw .noAttribute }
        mine[name] = predicate.map(MetadataValue.string)
        all[entityName] = mine.isEmpty ? nil : .dictionary(mine)
        let newValue: MetadataValue? = all.isEmpty ? nil : .dictionary(all)
        try engine(
            { () throws(ObjectGraphError) in
                try context.setMetadata(newValue, for: Self.queriesKey)
            }, "setfattr \(attribute)")
        queries.setError(nil, of: entity)
        queries.forgetSaved()
        changed()
        let folder = Node.query(QueryFolder.entityPart, entity: entity)
        invalidate(folder)
        invalidateEntry(parent: folder, name: name)
    }

    /// Whether `name` can name a saved query: a file name (no `/`, not `.` or `..`, at most
    /// NAME_MAX bytes), not beginning with a dot (the folder's own names do).
    static func isQueryName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && !name.contains("/") && !name.hasPrefix(".") && !name.contains("\0")
    }

    // MARK: - Evaluating

    /// The checked predicate folder `name` of `.query/ENTITY` stands for: the saved query of that
    /// name, else the name itself. A predicate that does not parse or check is ENOENT, its reason
    /// logged and kept for `user.storefs.error` on `.query/ENTITY`.
    func queryPredicate(_ name: String, of entity: EntityID) throws(FileSystemError) -> ObjectGraph.Predicate {
        guard isValid(entity) else { throw .notFound }
        let text = try savedQueries(of: entity)[name] ?? name
        do throws(ObjectGraphError) {
            let predicate = try PredicateParser.parse(text)
            try PredicateChecker.check(predicate, for: entity, in: model)
            return predicate
        } catch {
            refuse(".query/\(model[entity].name)/\(name)", error.message, entity)
            throw .notFound
        }
    }

    /// The query folder node `index` (of ``queries``) names: its entity, name and predicate.
    func query(_ node: Node) throws(FileSystemError) -> (QueryTable.Query, ObjectGraph.Predicate) {
        guard let query = queries.query(UInt32(truncatingIfNeeded: node.key.rawValue)), query.entity == node.entity
        else { throw .notFound }
        return (query, try queryPredicate(query.name, of: query.entity))
    }

    /// The objects query folder `node` lists (subentities' included), evaluated by the store when
    /// it can (SQL on SQLite stores) and kept until something changes, as fetched folders are.
    func queryMembers(of node: Node) throws(FileSystemError) -> [ObjectID] {
        let index = UInt32(truncatingIfNeeded: node.key.rawValue)
        let folder = Node.query(QueryFolder.queryPart, entity: node.entity, index: index)
        return try computedMembers(of: folder) { () throws(FileSystemError) in
            let (query, predicate) = try query(folder)
            let context = context
            return try engine(
                { () throws(ObjectGraphError) in
                    try context.objects(matching: predicate, of: query.entity, includingSubentities: true)
                }, "evaluate .query/\(model[query.entity].name)/\(query.name)")
        }
    }

    /// Logs why `operation` was refused and keeps it for `user.storefs.error` on `.query/ENTITY`.
    private func refuse(_ operation: String, _ reason: String, _ entity: EntityID) {
        logger.error("\(operation): \(reason)")
        queries.setError(reason, of: entity)
    }
}
