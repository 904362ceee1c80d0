import Foundation
import FuseKit
import ObjectGraph

/// What every node of `.recovered` and `.wal` shares: read-only (``ReadOnlyKind``), and nothing
/// changes while the mount lasts (the files were read when the store was opened), so listings stay.
protocol RecoveredKind: ReadOnlyKind {}

extension RecoveredKind {
    static var refusal: String { "recovered records are read-only" }
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
