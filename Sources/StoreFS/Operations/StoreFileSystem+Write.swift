import Foundation
import FuseKit
import ObjectGraph

/// Writing attribute files: opens, writes into a handle's buffer, and setting the value when the
/// writer is done (flush, release, fsync).
///
/// A write at offset 0 that holds a whole value (it ends with the newline text values end with)
/// is parsed and checked at once, so `echo abc > hoursPerWeek` fails at write(2), where the shell
/// reports it; values written in pieces are checked when the writer closes or fsyncs.
extension StoreFileSystem {
    func openFile(_ node: Node, flags: OpenFlags) throws(FileSystemError) -> OpenResult {
        if flags.isWriting && configuration.readOnly { throw .readOnly }
        _ = try attributes(of: node)
        let truncating = flags.isWriting && flags.truncates
        let handle = openFiles.open(node, buffer: truncating ? Data() : nil)
        // On a read-write mount every open bypasses the page cache (direct I/O): the kernel keeps
        // one size per file, which a writer's O_TRUNC sets to 0 at once, so a cached reader would
        // read nothing (or half a value) while a writer rewrites the file. Read directly, a reader
        // gets the stored value from storefs until the writer closes. (Read-only mounts have no
        // writers and open files without asking, so the kernel caches their pages.)
        // Only a writer can have something to flush: a reader's close sends no FLUSH (FOPEN_NOFLUSH).
        return OpenResult(handle: handle, keepCache: false, directIO: true, needsFlush: flags.isWriting)
    }

    public func write(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, data: Data) throws(FileSystemError) -> Int {
        guard !configuration.readOnly else { throw .readOnly }
        let node = try node(inode)
        let (end, overflow) = offset.addingReportingOverflow(UInt64(data.count))
        guard !overflow, end <= UInt64(configuration.maximumValueSize) else {
            logger.error("write \(describe(node)): \(end) bytes is more than a value may hold (\(configuration.maximumValueSize) bytes)")
            throw .tooBig
        }
        if case .scratch(let serial) = node {
            guard let file = scratch.file(serial), file.linkTarget == nil else { throw .invalid }
            scratch.setContent(serial, Self.splice(data, into: file.content, at: Int(offset)))
            return data.count
        }
        guard let file = openFiles.file(handle), file.node == node else { throw .badHandle }
        if file.rejected && offset != 0 {
            // The value this write would continue was refused.
            throw .invalid
        }
        let base = file.rejected ? Data() : try currentContent(of: node, handle: handle)
        let updated = Self.splice(data, into: base, at: Int(offset))
        if offset == 0, data.last == UInt8(ascii: "\n"), case .attribute(let object, let index) = node,
            ValueText.isText(model[object.entity].allAttributes[index].type)
        {
            do throws(FileSystemError) {
                _ = try parsedValue(updated, for: object, index)
            } catch {
                openFiles.update(handle) {
                    $0.buffer = nil
                    $0.dirty = false
                    $0.written = false
                    $0.rejected = true
                }
                throw error
            }
        }
        openFiles.update(handle) {
            $0.buffer = updated
            $0.dirty = true
            $0.written = true
            $0.rejected = false
        }
        return data.count
    }

    public func flush(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard openFiles.file(handle)?.written == true else { return }
        try commitBuffer(handle)
    }

    public func release(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        defer { openFiles.close(handle) }
        // Errors of a release reach nobody (close(2) returned at flush): they are logged.
        try? commitBuffer(handle)
    }

    /// Parses a handle's buffered content and sets the attribute; EINVAL (value unchanged) when it
    /// does not parse or validate.
    func commitBuffer(_ handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard let (node, content) = openFiles.takeBuffer(handle) else { return }
        let applied = try setContent(content, of: node)
        if let applied { openFiles.update(handle) { $0.applied = applied } }
    }

    /// The value file content sets attribute `index` of `object` to, checked against the attribute
    /// and the store (without setting it): EINVAL with the reason in the log.
    func parsedValue(_ content: Data, for object: ObjectID, _ index: Int) throws(FileSystemError) -> AttributeValue {
        let attribute = model[object.entity].allAttributes[index]
        let value: AttributeValue
        do {
            value = try ValueText.value(from: content, type: attribute.type)
        } catch {
            logger.error("write \(describe(object))/\(attribute.name): \(error.message); the value stays as it was")
            throw .invalid
        }
        try engine({ () throws(ObjectGraphError) in try context.check(value, of: attribute.name, for: object) },
            "write \(describe(object))/\(attribute.name)")
        return value
    }

    /// Sets the attribute `node` names from file content; returns what was set.
    @discardableResult
    func setContent(_ content: Data, of node: Node) throws(FileSystemError) -> OpenFiles.AppliedValue? {
        guard case .attribute(let object, let index) = node else { return nil }
        let attribute = model[object.entity].allAttributes[index]
        let value = try parsedValue(content, for: object, index)
        let existed = (try? snapshot(of: object))?.attributes[attribute.name] != nil && !isHidden(attribute.name, in: object)
        copyIn.show(attribute.name, in: object)
        try engine({ () throws(ObjectGraphError) in try context.setValue(value, of: attribute.name, for: object) },
            "write \(describe(object))/\(attribute.name)")
        changed(object)
        invalidate(.attribute(object, index))
        if !existed { invalidate(.object(object)) }
        return OpenFiles.AppliedValue(attribute: attribute.name, value: value)
    }

    // MARK: - Helpers

    /// `data` written into `content` at `offset`, the gap filled with zeros. The caller checked
    /// that the result is within ``StoreFSConfiguration/maximumValueSize``.
    static func splice(_ data: Data, into content: Data, at offset: Int) -> Data {
        var result = content
        if offset > result.count { result.append(Data(count: offset - result.count)) }
        let end = offset + data.count
        if end > result.count { result.append(Data(count: end - result.count)) }
        result.replaceSubrange(result.startIndex + offset..<result.startIndex + end, with: data)
        return result
    }

    static func resize(_ content: Data, to size: Int) -> Data {
        if size <= content.count { return content.prefix(size) }
        return content + Data(count: size - content.count)
    }

    /// A node named for messages.
    func describe(_ node: Node) -> String {
        switch node {
        case .attribute(let object, let index): "\(describe(object))/\(model[object.entity].allAttributes[index].name)"
        case .scratch(let serial): scratch.file(serial).map { "scratch file \($0.name)" } ?? "a scratch file"
        default: "\(node)"
        }
    }
}
