import Foundation
import FuseKit
import ObjectGraph

/// `.fetchRequests` at the mount root: a folder per fetch request template of the model whose
/// predicate parsed. Reachable by name, not listed (present only when the model has templates).
struct TemplatesFolder: NodeType {
    /// The name of the root folder holding the model's fetch request templates.
    static let name = ".fetchRequests"

    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard !mapping.predicates.templates.isEmpty else { throw .notFound }
        return mapping.make(node, .directory, permissions: 0o555)
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        guard let index = mapping.model.fetchRequestTemplates.firstIndex(where: { $0.name == name }),
            mapping.predicates.templates[index] != nil
        else { throw .notFound }
        return .template(index)
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        .names(
            mapping.model.fetchRequestTemplates.enumerated().filter { mapping.predicates.templates[$0.offset] != nil }
                .map { ($0.element.name, Node.template($0.offset)) })
    }
}
