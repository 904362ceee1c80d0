import Foundation
import FuseKit
import ObjectGraph

/// The query folders (docs/SEMANTICS.md, Query folders), one kind in three parts, told apart by
/// the node's property field:
/// - `.query` at the mount root (``rootPart``): a folder per entity; reachable by name, not listed,
///   like `.fetchRequests`, so `cp -a`, `diff -r` and `find` of a mount leave it out;
/// - `.query/ENTITY` (``entityPart``): lists the entity's saved queries (`user.query.NAME` on the
///   entity's directory); any other name is read as a predicate. `user.storefs.error` there says
///   why the last query of the entity was refused;
/// - `.query/ENTITY/PREDICATE` (``queryPart``): read-only links (``MemberLink``, `pN ->
///   ../../../Entity/pN`) to the objects of ENTITY and its subentities that match, evaluated in SQL
///   on SQLite stores and kept until something changes, as fetched folders are; beside them,
///   reachable by name, `.count`, `.json`, `.jsonl` and `.csv` (``QueryResultFile``).
///
/// Everything in it is read-only: a change is EPERM (EROFS on a read-only mount).
struct QueryFolder: NodeType {
    static let name = ".query"
    static let rootPart = 0
    static let entityPart = 1
    static let queryPart = 2

    var isDirectory: Bool { true }
    /// Listings are computed (results, saved queries): one evaluated while a change landed must not stay.
    var keepsListings: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node {
        switch node.property {
        case Self.entityPart: .query(Self.rootPart)
        case Self.queryPart: .query(Self.entityPart, entity: node.entity)
        default: .root
        }
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        switch node.property {
        case Self.entityPart: [Self.name, mapping.model[node.entity].name]
        case Self.queryPart:
            [
                Self.name, mapping.model[node.entity].name,
                mapping.queries.query(UInt32(truncatingIfNeeded: node.key.rawValue))?.name ?? "?"
            ]
        default: [Self.name]
        }
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        switch node.property {
        case Self.rootPart:
            break
        case Self.entityPart:
            guard isShown(node.entity, mapping) else { throw .notFound }
        case Self.queryPart:
            guard isShown(node.entity, mapping) else { throw .notFound }
            _ = try mapping.query(node)
        default:
            throw .notFound
        }
        return mapping.make(node, .directory, permissions: 0o555)
    }

    private func isShown(_ entity: EntityID, _ mapping: Mapping) -> Bool {
        mapping.isValid(entity) && !mapping.hiddenEntities.withLock { $0.contains(mapping.model[entity].name) }
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        switch node.property {
        case Self.rootPart:
            guard let entity = mapping.model.entityID(named: name), isShown(entity, mapping) else { throw .notFound }
            return .query(Self.entityPart, entity: entity)
        case Self.entityPart:
            // Names shells and tools look for (.git, .hidden) are no predicates: not worth a log line.
            guard isShown(node.entity, mapping), !name.hasPrefix(".") else { throw .notFound }
            _ = try mapping.queryPredicate(name, of: node.entity)
            guard let index = mapping.queries.index(of: .init(entity: node.entity, name: name)) else {
                mapping.logger.error(
                    ".query/\(mapping.model[node.entity].name)/\(name): this mount asked too many queries")
                throw .notFound
            }
            return .query(Self.queryPart, entity: node.entity, index: index)
        case Self.queryPart:
            let index = UInt32(truncatingIfNeeded: node.key.rawValue)
            if let part = QueryResultFile.names.firstIndex(of: name) {
                _ = try mapping.query(node)
                return .queryFile(part, entity: node.entity, index: index)
            }
            guard let key = PrimaryKey(reference: name),
                let member = try mapping.queryMembers(of: node).first(where: { $0.key == key })
            else { throw .notFound }
            return .member(member)
        default:
            throw .notFound
        }
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        switch node.property {
        case Self.rootPart:
            let hidden = mapping.hiddenEntities.withLock { $0 }
            return .names(
                mapping.model.entities.filter { !hidden.contains($0.name) }.sorted { $0.name < $1.name }
                    .map { ($0.name, Node.query(Self.entityPart, entity: $0.id)) })
        case Self.entityPart:
            guard isShown(node.entity, mapping) else { throw .notFound }
            return .names(
                try mapping.savedQueries(of: node.entity).keys.sorted().compactMap { name in
                    mapping.queries.index(of: .init(entity: node.entity, name: name)).map {
                        (name, Node.query(Self.queryPart, entity: node.entity, index: $0))
                    }
                })
        case Self.queryPart:
            return .names(try mapping.queryMembers(of: node).map { ($0.key.description, Node.member($0)) })
        default:
            throw .notFound
        }
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        switch node.property {
        case Self.entityPart:
            return mapping.queries.error(of: node.entity).map { [RootFolder.errorName: Data($0.utf8)] } ?? [:]
        case Self.queryPart:
            guard let query = mapping.queries.query(UInt32(truncatingIfNeeded: node.key.rawValue)) else {
                throw .notFound
            }
            let predicate = try mapping.savedQueries(of: node.entity)[query.name] ?? query.name
            var result = [
                "user.query.entity": Data(mapping.model[node.entity].name.utf8),
                "user.query.predicate": Data(predicate.utf8)
            ]
            // Why its last evaluation stopped at a limit, until one succeeds.
            if let reason = mapping.queryFailures.reason(for: node) { result[RootFolder.errorName] = Data(reason.utf8) }
            return result
        default:
            return [:]
        }
    }

    /// `touch` of a query folder evaluates it again.
    func touch(_ node: Node, in mapping: Mapping) throws(FileSystemError) {
        guard node.property == Self.queryPart else {
            _ = try attributes(of: node, in: mapping, known: nil, listed: false)
            return
        }
        mapping.fetchedResults.drop(node)
        mapping.invalidate(node)
    }

    // MARK: - Changes: none

    func createFile(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        throw refusal("create \(name)", node, mapping)
    }

    func makeDirectory(named name: String, in node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        throw refusal("mkdir \(name)", node, mapping)
    }

    func makeLink(named name: String, to target: String, in node: Node, in mapping: Mapping) throws(FileSystemError)
        -> Node
    {
        throw refusal("ln -s \(target) \(name)", node, mapping)
    }

    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        throw refusal("rmdir \(name)", folder, mapping)
    }

    private func refusal(_ operation: String, _ folder: Node, _ mapping: Mapping) -> FileSystemError {
        let path = pathComponents(of: folder, in: mapping).joined(separator: "/")
        let message =
            "\(operation) in \(path): query folders are computed and read-only "
            + "(save a query with setfattr -n user.query.NAME on the entity's directory)"
        mapping.logger.error("\(message)")
        return .notPermitted
    }
}
