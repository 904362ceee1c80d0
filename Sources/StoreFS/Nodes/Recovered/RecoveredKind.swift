import Foundation
import FuseKit
import ObjectGraph

/// What every node of `.recovered` shares: everything is read-only (EPERM for any change, EROFS
/// on read-only mounts), and nothing changes while the mount lasts (the files were read when the
/// store was opened), so listings stay.
protocol RecoveredKind: NodeType {}

extension RecoveredKind {
    func touch(_ node: Node, in mapping: Mapping) throws(FileSystemError) {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        throw mapping.configuration.readOnly ? .readOnly : .notPermitted
    }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error("rm \(RecoveredNode.folderName)/…/\(name): recovered records are read-only")
        throw .notPermitted
    }

    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    {
        mapping.logger.error("rmdir \(RecoveredNode.folderName)/…/\(name): recovered records are read-only")
        throw .notPermitted
    }

    func rename(_ node: Node, named name: String, to newName: String, in folder: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error("mv \(name) \(newName): recovered records are read-only")
        throw .notPermitted
    }

    /// Nothing recovered is ever written.
    func fsync(_ node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) {}
}

/// The files of `.recovered` (attribute values, their renderings): read-only, sized exactly.
protocol RecoveredFile: RecoveredKind {
    func bytes(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data
}

extension RecoveredFile {
    var isDirectory: Bool { false }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(node, .regularFile, permissions: 0o444, size: try bytes(of: node, mapping).count)
    }

    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult {
        if flags.isWriting { throw mapping.configuration.readOnly ? .readOnly : .notPermitted }
        return try mapping.openFile(node, flags: flags)
    }

    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data {
        try bytes(of: node, mapping)
    }
}
