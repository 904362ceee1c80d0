import Foundation
import FuseKit
import ObjectGraph

/// A scratch file or link (``ScratchFiles``): what tools make under names that are no property's
/// (an editor's temporary and swap files, `sed -i`'s, `ln -sfn`'s temporary link, a copy's links
/// to objects not made yet). Kept in memory, never in the store; renamed onto a property, it sets
/// it.
struct ScratchEntry: NodeType {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard let file = mapping.session.scratch.file(node.serial) else { throw .notFound }
        if let target = file.linkTarget { return mapping.make(node, .symbolicLink, size: target.utf8.count) }
        return mapping.make(node, .regularFile, size: file.content.count, time: file.modified)
    }

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        guard let file = mapping.session.scratch.file(node.serial) else { throw .notFound }  // removed meanwhile
        guard let target = file.linkTarget else { throw .invalid }
        return target
    }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    { mapping.session.scratch.remove(node.serial) }

    /// What a scratch entry renamed becomes is its folder's to say (an editor's save, `ln -sfn`).
    func rename(_ node: Node, named name: String, to newName: String, in folder: Node, in mapping: Mapping)
        throws(FileSystemError)
    { try folder.kind.type.renameScratch(node.serial, named: name, to: newName, in: folder, in: mapping) }

    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult {
        try mapping.openFile(node, flags: flags)
    }

    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data {
        guard let file = mapping.session.scratch.file(node.serial), file.linkTarget == nil else { throw .notFound }
        return file.content
    }

    func write(_ data: Data, at offset: UInt64, to node: Node, handle: FuseKit.FileHandle, in mapping: Mapping)
        throws(FileSystemError) -> Int
    {
        guard mapping.session.scratch.write(node.serial, data, at: Int(offset)) else { throw .invalid }
        return data.count
    }

    func truncate(_ node: Node, to size: Int, handle: FuseKit.FileHandle?, in mapping: Mapping) throws(FileSystemError)
    {
        let scratch = mapping.session.scratch
        guard let file = scratch.file(node.serial), file.linkTarget == nil else { throw .invalid }
        scratch.setContent(node.serial, Mapping.resize(file.content, to: size))
    }
}
