import Foundation
import FuseKit
import ObjectGraph

/// One fetch request template's folder (`.fetchRequests/NAME`): read-only links to the objects
/// its predicate selects, evaluated as fetched properties are (``FetchedFolder``).
struct TemplateFolder: NodeType {
    var isDirectory: Bool { true }
    /// A listing evaluated while a change landed must not stay.
    var keepsListings: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { .templates }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard mapping.predicates.templates[node.property] != nil else { throw .notFound }
        return mapping.make(node, .directory, permissions: 0o555)
    }

    func members(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [ObjectID] {
        try mapping.computedMembers(of: node) { () throws(FileSystemError) in
            let model = mapping.model
            guard let predicate = mapping.predicates.templates[node.property],
                node.property < model.fetchRequestTemplates.count,
                let entity = model.entityID(named: model.fetchRequestTemplates[node.property].entityName)
            else { throw .notFound }
            let context = mapping.context
            return try mapping.engine(
                { () throws(ObjectGraphError) in
                    try context.objects(matching: predicate, of: entity, includingSubentities: true)
                }, "evaluate \(model.fetchRequestTemplates[node.property].name)")
        }
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        guard let key = PrimaryKey(reference: name),
            let member = try members(of: node, in: mapping).first(where: { $0.key == key })
        else { throw .notFound }
        return .templateMember(member)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        .names(try members(of: node, in: mapping).map { ($0.key.description, Node.templateMember($0)) })
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        let template = mapping.model.fetchRequestTemplates[node.property]
        var result = [
            "user.fetched.entity": Data(template.entityName.utf8),
            "user.fetched.predicate": Data((template.predicateString ?? "TRUEPREDICATE").utf8)
        ]
        // Why its last evaluation stopped at a limit, until one succeeds.
        if let reason = mapping.queryFailures.reason(for: node) { result[RootFolder.errorName] = Data(reason.utf8) }
        return result
    }

    /// `touch` evaluates the folder again.
    func touch(_ node: Node, in mapping: Mapping) throws(FileSystemError) {
        mapping.fetchedResults.drop(node)
        mapping.invalidate(node)
    }
}
