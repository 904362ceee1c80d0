import Foundation
import FuseKit
import ObjectGraph

/// What the read-only families of nodes share (`.recovered`, `.wal`, `.timeline`): no change is
/// taken (EPERM, EROFS on read-only mounts), the refusal is logged with what the family is, and
/// nothing is ever written, so fsync has nothing to do.
protocol ReadOnlyKind: NodeType {
    /// The family, for messages: `recovered records are read-only`.
    static var refusal: String { get }
}

extension ReadOnlyKind {
    func touch(_ node: Node, in mapping: Mapping) throws(FileSystemError) {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        throw mapping.configuration.readOnly ? .readOnly : .notPermitted
    }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error("rm \(mapping.describe(folder))/\(name): \(Self.refusal)")
        throw .notPermitted
    }

    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    {
        mapping.logger.error("rmdir \(mapping.describe(folder))/\(name): \(Self.refusal)")
        throw .notPermitted
    }

    func rename(_ node: Node, named name: String, to newName: String, in folder: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error("mv \(name) \(newName) in \(mapping.describe(folder)): \(Self.refusal)")
        throw .notPermitted
    }

    func fsync(_ node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) {}
}
