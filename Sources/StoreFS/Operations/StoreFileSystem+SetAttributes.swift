import Foundation
import FuseKit
import ObjectGraph

/// setattr: truncation of attribute and scratch files (`truncate`, `O_TRUNC` arrives in open),
/// and `touch` of fetched folders. Permissions, owners and times have nowhere to go in a store.
extension StoreFileSystem {
    public func setAttributes(
        of inode: InodeNumber, _ changes: AttributeChanges, handle: FuseKit.FileHandle?, context request: RequestContext
    ) throws(FileSystemError) -> (FileAttributes, timeout: Double) {
        let node = try node(inode)
        switch node {
        case .fetched, .template:
            // `touch` on a fetched property's folder evaluates it again (Core Data's refreshObject).
            fetchedResults.drop(node)
            invalidate(node)
            return (try attributes(of: node), configuration.attributeTimeout)
        default:
            break
        }
        guard !configuration.readOnly else { throw .readOnly }
        if let size = changes.size {
            guard size <= UInt64(configuration.maximumValueSize) else {
                logger.error("truncate \(describe(node)) to \(size) bytes: more than a value may hold (\(configuration.maximumValueSize) bytes)")
                throw .tooBig
            }
            let newSize = Int(size)
            switch node {
            case .attribute:
                if let handle, let file = openFiles.file(handle), file.node == node {
                    let current = file.rejection != nil ? Data() : try currentContent(of: node, handle: handle)
                    openFiles.update(handle) {
                        $0.buffer = Self.resize(current, to: newSize)
                        $0.dirty = true
                        $0.rejection = nil
                    }
                } else {
                    // truncate(1) by path: the new content is the value, now.
                    let current = try currentContent(of: node, handle: FuseKit.FileHandle.none)
                    try setContent(Self.resize(current, to: newSize), of: node)
                }
            case .scratch(let serial):
                guard let file = scratch.file(serial), file.linkTarget == nil else { throw .invalid }
                scratch.setContent(serial, Self.resize(file.content, to: newSize))
            case .rendering:
                throw .notPermitted
            default:
                throw .isDirectory
            }
        }
        // Permissions, owners and times are accepted so that tools that copy them (cp -a, rsync,
        // vim) work, and not kept.
        return try attributes(of: inode, handle: handle)
    }
}
